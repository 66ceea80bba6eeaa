"""BM25 built by Anserini's multi-threaded IndexCollection over sharded JSON ranks exactly as
the single-thread SimpleIndexer build (drarena.search.build.build_bm25, threads > 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.corpus.extract import extract_snapshot, load_docs
from drarena.search import bm25
from drarena.search.build import build_bm25, build_passages
from drarena.search.manifest import Bm25Manifest, IndexLayout, read_manifest
from drarena.search.passages import PassageSettings
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.synth import SynthSpec, write_web


@pytest.mark.slow
def test_multi_threaded_index_ranks_as_one_thread(tmp_path: Path) -> None:
    spec = SynthSpec(pages=200, seed=11, shard_pages=100, site_pages=50)
    snap = tmp_path / "synth"
    import_archives(
        "synth", write_web(spec, tmp_path / "warc"), snap, ImportOptions(progress=False)
    )
    extract_snapshot(snap, workers=1, progress=False)
    queries = [d.title.split(" | ")[0] for d in load_docs(snap)[:40]]
    rankings = []
    for threads in (1, 2):
        root = tmp_path / f"index-{threads}"
        layout = IndexLayout(root, snap)
        _, state = build_passages(layout, PassageSettings())
        result = build_bm25(layout, state, threads=threads)
        manifest = read_manifest(layout.bm25, Bm25Manifest)
        assert manifest is not None and manifest.passage_count == result.count > 200
        assert not list(root.glob("*/bm25.collection-*"))  # the JSON shards are deleted
        retriever = bm25.build(snap, root)
        rankings.append([[(h.docid, h.score) for h in retriever.search(q, 10)] for q in queries])
    assert rankings[0] == rankings[1]
    assert sum(len(r) for r in rankings[0]) >= 10 * len(queries) // 2
