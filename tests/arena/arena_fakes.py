"""Fakes for arena control-flow tests: a hand-made tree, scripted agents and a scripted
Examiner on the scripted model backend. Control flow only: no real model is involved."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from scripted_tasks import page_item

from drarena.agents.base import Answer, CitationCheck, Conversation, Trajectory
from drarena.corpus.records import Doc, Tree, TreeEdge, TreeNode
from drarena.models.backend import BackendReply
from drarena.models.scripted import ScriptedBackendForTests, reply

BASE = "http://127.0.0.1:8765/"
# root r; four children c1..c4; each with three children; each of those with two
LAYOUT: dict[str, str | None] = {"r": None}
for _c in range(1, 5):
    LAYOUT[f"c{_c}"] = "r"
    for _g in range(1, 4):
        LAYOUT[f"c{_c}g{_g}"] = f"c{_c}"
        for _h in range(1, 3):
            LAYOUT[f"c{_c}g{_g}h{_h}"] = f"c{_c}g{_g}"


def make_tree() -> tuple[Tree, dict[str, Doc]]:
    docs, nodes, edges = {}, [], []
    for node_id, parent in LAYOUT.items():
        depth = (
            0 if parent is None else node_id.count("c") + node_id.count("g") + node_id.count("h")
        )
        text = f"Page {node_id} about topic {node_id}. " * 40
        doc = Doc(
            id=node_id,
            url=f"{BASE}{node_id}.html",
            title=f"Title {node_id}",
            contents=text,
            record_id="<urn:x>",
            payload_digest="sha1:x",
            digest=f"d{node_id}",
            chars=len(text),
        )
        docs[node_id] = doc
        nodes.append(TreeNode(node_id, doc.url, doc.title, doc.digest, depth, doc.chars, parent))
        if parent:
            edges.append(TreeEdge(parent, node_id, f"anchor {node_id}", "ctx", "subtopic"))
    return Tree("t1", "r", tuple(nodes), tuple(edges)), docs


class ScriptedAgentForTests:
    """Answers with a fixed report, or raises: control flow only."""

    def __init__(
        self, name: str, report: str = "report", fail: bool = False, error: str | None = None
    ) -> None:
        self.name, self.report, self.fail, self.error = name, report, fail, error
        self.seen: list[Conversation] = []

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        self.seen.append(conversation)
        if self.fail:
            raise RuntimeError("agent crashed")
        return Answer(
            agent=self.name,
            report=f"{self.report} {len(conversation.history) + 1}",
            citations=(),
            check=CitationCheck(),
            trajectory=Trajectory(),
            wall_s=1.5,
            model_s=1.0,
            prompt_tokens=10,
            completion_tokens=5,
            error=self.error,
        )


REFERENCE_VALUES = {
    "A_MUCH_BETTER": "[[A_MUCH_BETTER]]",
    "A_BETTER": "[[A_BETTER]]",
    "TIE": "[[Tie]]",
    "B_BETTER": "[[B_BETTER]]",
    "B_MUCH_BETTER": "[[B_MUCH_BETTER]]",
    "DEPTH": "DEEP",
    "WIDTH": "WIDE",
    "NA": "N/A",
}


def user_prompt(request: Mapping[str, Any]) -> str:
    """The prompt of a call: its last message (a reference-style judge call sends the
    reference's system prompt first)."""
    return str(request["messages"][-1]["content"])


def reference_judge(request: Mapping[str, Any]) -> bool:
    """Whether a judge call asks for the reference's output (the shipped "paper" prompt)."""
    schema = request["response_format"]["json_schema"]["schema"]
    return "[[Tie]]" in schema["properties"]["verdict"].get("enum", ())


def judge_json(request: Mapping[str, Any], obj: dict[str, Any]) -> str:
    """A judgment in drarena's values, in the values and fields the request's schema asks
    for: the reference's four fields (no per-item booleans) for a reference-style prompt."""
    if not reference_judge(request):
        return json.dumps(obj)
    keys = ("verdict", "tie_quality", "loser_failure_type", "reasoning")
    return json.dumps({k: REFERENCE_VALUES.get(obj[k], obj[k]) for k in keys if k in obj})


def checklist_size(prompt: str) -> int:
    found = re.search(r"CHECKLIST \((\d+) items", prompt)
    return int(found.group(1)) if found else 0


def examiner_step(verdicts: list[dict[str, str]]) -> Any:
    """Tasks built from the prompt's target URLs; verdicts played in order (one per call)."""
    queue = list(verdicts)

    def step(request: Mapping[str, Any]) -> BackendReply:
        name = request["response_format"]["json_schema"]["name"]
        prompt = request["messages"][0]["content"]
        if name == "task":
            block = prompt.split("B. TARGET PAGES", 1)[1]
            numbers = [int(n) for n in re.findall(r"<<<BEGIN SOURCE (\d+)>>>", block)]
            return reply(
                json.dumps(
                    {
                        # a pure function of the prompt, as a model at temperature 0 would be
                        "question": f"Question {hashlib.sha256(prompt.encode()).hexdigest()[:10]} "
                        "about the shared topic?",
                        # items their pages support (tasks are grounded: scripted_tasks)
                        "checklist_depth": [
                            {"item": page_item(prompt, n), "source": n} for n in numbers
                        ],
                        "checklist_width": [
                            {"item": page_item(prompt, n, 12), "source": n} for n in numbers
                        ],
                        "rationale": "r",
                    }
                )
            )
        v = queue.pop(0)
        n = checklist_size(user_prompt(request))
        assert n or reference_judge(request), "a judge prompt names its checklist size"
        return reply(
            judge_json(
                request,
                {
                    "checklist_a": [True] * n,
                    "checklist_b": [False] * n,
                    "reasoning": "r",
                    "tie_quality": v.get("q", "NA"),
                    "loser_failure_type": v.get("f", "NONE"),
                    "verdict": v["v"],
                },
            )
        )

    return step


def examiner(verdicts: list[dict[str, str]]) -> ScriptedBackendForTests:
    return ScriptedBackendForTests([examiner_step(verdicts)] * 200)


def strength_examiner() -> Any:
    """Tasks as examiner_step; verdicts from 'strength=N' in each answer: the stronger
    answer is MUCH_BETTER, equal strengths tie HIGH. Consistent in both orders."""
    tasks = examiner_step([])

    def step(request: Mapping[str, Any]) -> BackendReply:
        if request["response_format"]["json_schema"]["name"] == "task":
            return tasks(request)
        prompt = user_prompt(request)
        found = [
            re.search(rf"BEGIN ANSWER {side}>>>.*?strength=(\d+)", prompt, re.S) for side in "AB"
        ]
        a, b = (int(m.group(1)) if m else 0 for m in found)
        verdict = "TIE" if a == b else ("A_MUCH_BETTER" if a > b else "B_MUCH_BETTER")
        n = checklist_size(prompt)
        assert n or reference_judge(request), "a judge prompt names its checklist size"
        return reply(
            judge_json(
                request,
                {
                    "checklist_a": [a > b] * n,
                    "checklist_b": [b > a] * n,
                    "reasoning": "r",
                    "tie_quality": "HIGH",
                    "loser_failure_type": "DEPTH",
                    "verdict": verdict,
                },
            )
        )

    return step
