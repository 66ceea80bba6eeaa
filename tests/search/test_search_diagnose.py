"""`drarena diagnose-retrievers` on the committed snapshot's trees: our recall and MRR agree
with pyserini's trec_eval on the run files we write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.corpus.trees import TreeParams, build_snapshot_trees

pytestmark = pytest.mark.slow


def test_diagnostics_on_tree_targets(snapshot: Path, index_root: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "pydocs"
    shutil.copytree(snapshot, copy)
    trees = build_snapshot_trees(copy, TreeParams(count=2, seed=3), progress=False)
    assert trees.files
    out = tmp_path / "diag"
    assert main(["diagnose-retrievers", str(copy), "--index-root", str(index_root), "-k", "10",
                 "--max-pages", "25", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "tree target pages" in table.splitlines()[0]
    summary = json.loads((out / "summary.json").read_text())
    scores = {s["retriever"]: s for s in summary["scores"]}
    assert set(scores) == {"bm25", "dense", "hybrid"}
    for name, score in scores.items():
        checked = summary["trec_eval"][name]
        assert checked["recall_10"] == pytest.approx(score["recall"], abs=1e-4), name
        assert checked["recip_rank"] == pytest.approx(score["mrr"], abs=1e-4), name
        assert (out / f"run.{name}.txt").is_file()
    # titles of Python docs pages are strong BM25 queries; a broken index scores near 0
    assert scores["bm25"]["by_kind"]["title"][0] >= 0.8
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    qrels = (out / "qrels.txt").read_text().splitlines()
    assert len(qrels) == len(queries) == scores["bm25"]["queries"]
    assert {q["kind"] for q in queries} == {"title", "phrases"}
