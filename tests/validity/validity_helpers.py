"""A hand-made tree and a scripted Examiner for examiner-check control-flow tests only: the
scripted backend says nothing about any model."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from scripted_tasks import page_item

from drarena.corpus.records import Doc, Tree, TreeEdge, TreeNode
from drarena.models.backend import BackendReply
from drarena.models.scripted import reply

BASE = "http://127.0.0.1:8765/"
TOPICS = {
    "r": "Library overview. The library has many modules.",
    "c1": "The zipfile module reads ZIP archives. ZipFile objects open archives for reading.",
    "c2": "The gzip module compresses single files. GzipFile wraps a file object.",
    "c3": "The tarfile module reads tar archives. TarFile members carry metadata.",
    "c4": "The random module draws pseudo-random numbers. Seeds make draws repeatable.",
}


def make_tree() -> tuple[Tree, dict[str, Doc]]:
    docs, nodes, edges = {}, [], []
    for node_id, topic in TOPICS.items():
        text = (topic + " ") * 12
        title = f"{node_id}mod — About {node_id} — Example docs"
        doc = Doc(
            node_id,
            f"{BASE}{node_id}mod.html",
            title,
            text,
            "<urn:x>",
            "sha1:x",
            f"d{node_id}",
            len(text),
        )
        docs[node_id] = doc
        parent = None if node_id == "r" else "r"
        nodes.append(
            TreeNode(
                node_id, doc.url, title, doc.digest, 0 if parent is None else 1, doc.chars, parent
            )
        )
        if parent:
            edges.append(TreeEdge(parent, node_id, f"anchor {node_id}", "ctx", "subtopic"))
    return Tree("t1", "r", tuple(nodes), tuple(edges)), docs


def scripted_examiner(request: Mapping[str, Any]) -> BackendReply:
    """Tasks from the prompt's numbered sources; pairwise verdicts for the longer answer
    (a length-loving judge: a pure function of the prompt); pointwise grades quote the
    answer's first words."""
    fmt = request["response_format"]["json_schema"]
    prompt = request["messages"][0]["content"]
    if fmt["name"] == "task":
        block = prompt.split("B. TARGET PAGES", 1)[1]
        numbers = [int(n) for n in re.findall(r"<<<BEGIN SOURCE (\d+)>>>", block)]
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        return reply(
            json.dumps(
                {
                    "question": f"Which archive formats does the library read ({digest})?",
                    # items their pages support (tasks may be grounded: scripted_tasks)
                    "checklist_depth": [
                        {"item": page_item(prompt, numbers[0], 6), "source": numbers[0]}
                    ],
                    "checklist_width": [
                        {"item": page_item(prompt, n, 10), "source": n} for n in numbers
                    ],
                    "rationale": "r",
                }
            )
        )
    schema = fmt["schema"]
    if fmt["name"] == "paraphrase":  # the body reversed sentence by sentence: facts kept
        found = re.search(r"<<<BEGIN ANSWER>>>\n(.*?)\n<<<END ANSWER>>>", prompt, re.S)
        body = found.group(1) if found else ""
        return reply(json.dumps({"answer": "\n\n".join(reversed(body.split("\n\n")))}))
    if fmt["name"] == "grades":
        n = schema["properties"]["items"]["minItems"]
        found = re.search(r"<<<BEGIN ANSWER>>>\n(.*?)\n<<<END ANSWER>>>", prompt, re.S)
        words = (found.group(1) if found else "").split()
        quote = " ".join(words[:3])
        return reply(json.dumps({"items": [{"satisfied": len(words) > 12, "quote": quote}] * n}))
    n = schema["properties"].get("checklist_a", {}).get("minItems", 0)
    sizes = [
        len(m.group(1))
        for m in (
            re.search(rf"BEGIN ANSWER {s}>>>(.*?)<<<END ANSWER {s}", prompt, re.S) for s in "AB"
        )
        if m
    ]
    a, b = sizes if len(sizes) == 2 else (0, 0)
    verdict = "TIE" if a == b else ("A_MUCH_BETTER" if a > b else "B_MUCH_BETTER")
    value: dict[str, Any] = {
        "verdict": verdict,
        "tie_quality": "HIGH" if verdict == "TIE" else "NA",
        "loser_failure_type": "NONE" if verdict == "TIE" else "WIDTH",
        "reasoning": "r",
    }
    if n:
        value |= {"checklist_a": [a >= b] * n, "checklist_b": [b >= a] * n}
    return reply(json.dumps(value))
