"""Tree files in the format of the DR-Arena reference's released trees
(web_tree/data/dataset/trees/tree_NNNN.json), written by hand for the tests: the repository
has no license, so none of its data is in drarena. Same fields as the released files: url,
domain, title, description, content, crawled, depth, error, relationship_cluster,
link_contexts (url, anchor_text, surrounding_text, relationship) and children."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SITE = "https://example.org"
TOPICS = ("rivers", "bridges", "harbors")


def text(name: str, n: int = 30) -> str:
    """A page's extracted text: distinct sentences, long enough for any threshold."""
    return " ".join(
        f"The {name} record number {i} states that {name} fact {i} is {i * 7} units."
        for i in range(n)
    )


def node(
    path: str,
    depth: int,
    children: list[dict[str, Any]] | None = None,
    content: str | None = None,
    cluster: str | None = None,
) -> dict[str, Any]:
    kids = children or []
    return {
        "url": f"{SITE}/{path}",
        "domain": "example.org",
        "title": f"Page {path}",
        "description": f"About {path}.",
        "content": text(path) if content is None else content,
        "crawled": True,
        "depth": depth,
        "error": None,
        "relationship_cluster": cluster,
        "link_contexts": [
            {
                "url": k["url"],
                "anchor_text": f"See {k['title']}",
                "surrounding_text": f"Around the link to {k['title']}",
                "relationship": f"rel {k['title']}",
            }
            for k in kids
        ],
        "children": kids,
    }


def reference_tree(topic: str) -> dict[str, Any]:
    """Root, three children, each with three grandchildren; one grandchild repeats a page of
    its tree (as the released trees do), and one leaf has no text (a failed fetch)."""
    children = []
    for c in range(1, 4):
        grand = [node(f"{topic}/c{c}/g{g}", 2, cluster="subtopic") for g in range(1, 4)]
        children.append(node(f"{topic}/c{c}", 1, grand, cluster="related topics"))
    repeat = node(f"{topic}/c1/g1", 2, cluster="see also")  # the page c1/g1 again, under c3
    children[2]["children"].append(repeat)
    failed = node(f"{topic}/c2/missing", 2, content="")
    failed |= {"crawled": False, "error": "HTTP 404"}
    children[1]["children"].append(failed)
    for child in children:  # the parent lists contexts for every child (relinked after edits)
        child["link_contexts"] = node("x", 0, child["children"])["link_contexts"]
    return node(f"{topic}", 0, children)


def write_reference_trees(folder: Path, topics: tuple[str, ...] = TOPICS) -> Path:
    """tree_0001.json ... in the repository's layout under `folder`, with a summary.json."""
    trees = folder / "web_tree" / "data" / "dataset" / "trees"
    trees.mkdir(parents=True)
    entries = []
    for i, topic in enumerate(topics, 1):
        (trees / f"tree_{i:04d}.json").write_text(
            json.dumps(reference_tree(topic), indent=2), encoding="utf-8"
        )
        entries.append(
            {"tree_id": f"tree_{i:04d}", "root_url": f"{SITE}/{topic}", "topic": f"Topic {topic}"}
        )
    summary = {"dataset_info": {"updated_at": "2025-12-31T14:26:14"}, "trees": entries}
    (trees.parent / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return folder
