"""`drarena diagnose-retrievers` on the committed snapshot: our recall and MRR agree with
pyserini's trec_eval on the run files we write; gold pages come from the trees when built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.corpus.records import Tree, TreeEdge, TreeNode
from drarena.corpus.trees import tree_to_json
from drarena.search.diagnose import gold_from_trees


def test_gold_pages_are_tree_nodes_below_the_root(tmp_path: Path) -> None:
    def node(i: str, depth: int, parent: str | None) -> TreeNode:
        return TreeNode(
            id=i,
            url=f"http://h/{i}",
            title=i,
            digest="sha256:x",
            depth=depth,
            chars=100,
            parent=parent,
        )

    for n, ids in enumerate((("r", "a", "b"), ("a", "c", "b"))):
        root, *kids = ids
        tree = Tree(
            id=f"tree-{n:03d}",
            root=root,
            nodes=(node(root, 0, None), *(node(k, 1, root) for k in kids)),
            edges=tuple(TreeEdge(root, k, "anchor", "ctx", "link") for k in kids),
        )
        (tmp_path / f"tree-{n:03d}.json").write_text(tree_to_json(tree))
    (tmp_path / "index.json").write_text("{}")
    (tmp_path / "tree-mynotes.json").write_text('{"a user": "file"}')  # not drarena's: skipped
    assert gold_from_trees(tmp_path) == ["a", "b", "c"]


@pytest.mark.slow
def test_diagnostics_agree_with_trec_eval(
    snapshot: Path, index_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "diag"
    assert (
        main(
            [
                "diagnose-retrievers",
                str(snapshot),
                "--index-root",
                str(index_root),
                "-k",
                "10",
                "--max-pages",
                "20",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    table = capsys.readouterr().out.splitlines()
    has_trees = any((snapshot / "trees").glob("tree-*.json"))
    assert ("tree target pages" in table[0]) == has_trees
    assert [line.split()[0] for line in table[2:5]] == ["bm25", "dense", "hybrid"]
    summary = json.loads((out / "summary.json").read_text())
    scores = {s["retriever"]: s for s in summary["scores"]}
    for name, score in scores.items():
        checked = summary["trec_eval"][name]
        assert checked["recall_10"] == pytest.approx(score["recall"], abs=1e-4), name
        assert checked["recip_rank"] == pytest.approx(score["mrr"], abs=1e-4), name
        assert (out / f"run.{name}.txt").read_text().count(" Q0 ") <= 10 * score["queries"]
    # titles of Python docs pages are strong BM25 queries; a broken index scores near 0
    assert scores["bm25"]["by_kind"]["title"][0] >= 0.8
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    qrels = (out / "qrels.txt").read_text().splitlines()
    assert len(qrels) == len(queries) == scores["bm25"]["queries"] == 40
    assert {q["kind"] for q in queries} == {"title", "phrases"}
