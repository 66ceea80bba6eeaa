"""BM25 (Lucene via pyserini), dense (MiniLM + FAISS) and hybrid retrievers on the committed
snapshot, read-back through `open`, bad input, stale-index detection and the CLI."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search import lucene
from drarena.search.base import build_retriever, search_pages
from drarena.search.diagnose import build_queries, gold_from_trees
from drarena.search.docstore import clean_query, load_source_docs
from drarena.search.hybrid import rrf

pytestmark = pytest.mark.slow


def assert_ranked(hits: list[Hit], k: int) -> None:
    assert 0 < len(hits) <= k
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len({h.docid for h in hits}) == len(hits)
    for a, b in itertools.pairwise(hits):
        assert (-a.score, a.docid) < (-b.score, b.docid)


def names(hits: list[Hit]) -> list[str]:
    return [h.url.rsplit("/", 1)[-1] for h in hits]


def test_bm25_ranks_the_obvious_page_first(bm25: Any) -> None:
    hits = bm25.search("argparse parser add_argument subcommands", 10)
    assert_ranked(hits, 10)
    assert names(hits)[0] == "argparse.html"
    assert "argparse" in hits[0].title and hits[0].snippet


def test_lucene_index_opens_with_pyserini_lucene_searcher(bm25: Any, index_root: Path) -> None:
    searcher_class = lucene.pyserini_lucene_searcher_class()
    searcher = searcher_class(str(index_root / "pydocs" / "bm25"))
    assert searcher.num_docs == bm25.manifest.passage_count
    query = "sqlite3 cursor execute"
    theirs = [(h.docid, round(h.score, 4)) for h in searcher.search(query, 30)]
    ours = [(pid, round(score, 4)) for pid, score in bm25.search_passages(query, 30)]
    assert theirs == ours and len(ours) == 30
    assert bm25.data.passages[ours[0][0]].url.endswith("/sqlite3.html")


def diagnostic_queries(snapshot: Path) -> list[str]:
    """The queries `drarena diagnose-retrievers` asks of this snapshot (same gold, same seed)."""
    docs = load_source_docs(snapshot)
    gold = gold_from_trees(snapshot / "trees") if (snapshot / "trees").is_dir() else []
    gold = gold or [d.id for d in docs if d.indexed]
    return [q.text for q in build_queries(docs, gold, 200)]


def test_bm25_ranks_exactly_as_pyserini_lucene_searcher(
    bm25: Any, snapshot: Path, index_root: Path
) -> None:
    """The bulk Lucene path returns what pyserini's own LuceneSearcher returns (passage ids and
    scores, ties at the cut included) and so the same pages, on every diagnostic query."""
    searcher = lucene.pyserini_lucene_searcher_class()(str(index_root / "pydocs" / "bm25"))

    def theirs(text: str, depth: int) -> list[tuple[str, float]]:
        return [(str(h.docid), float(h.score)) for h in searcher.search(text, depth)]

    queries = diagnostic_queries(snapshot)
    assert len(queries) >= 100
    total = len(bm25.data.passages)
    for n, query in enumerate(queries):
        text = clean_query(query)
        depths = (10, 50, 200, 1000) if n % 10 == 0 else (50,)
        for depth in depths:
            assert bm25.search_passages(text, depth) == theirs(text, depth), (query, depth)
        assert bm25.search(query, 10) == search_pages(
            theirs, text, 10, 50, bm25.data.passages, total
        ), query


def test_anserini_scores_match_the_java_tie_adjuster(index_root: Path) -> None:
    """anserini_scores against Anserini's ScoreTiesAdjusterReranker itself, on runs of scores
    within 1e-4 of each other at several magnitudes (where float32 rounding decides)."""
    java = lucene.autoclass
    reader = java("io.anserini.index.IndexReaderUtils").getReader(
        str(index_root / "pydocs" / "bm25")
    )
    searcher = java("org.apache.lucene.search.IndexSearcher")(reader)
    reranker = java("io.anserini.rerank.lib.ScoreTiesAdjusterReranker")()
    total = java("org.apache.lucene.search.TotalHits")
    equal_to = java("org.apache.lucene.search.TotalHits$Relation").EQUAL_TO
    score_doc = java("org.apache.lucene.search.ScoreDoc")
    top_docs = java("org.apache.lucene.search.TopDocs")
    scored_docs = java("io.anserini.search.ScoredDocs")
    rng = np.random.default_rng(7)
    for scale in (0.01, 0.7, 5.0, 17.0, 40.0, 300.0):
        base = np.round(rng.uniform(0, scale, 40), 4)
        values = np.concatenate([base, base + rng.uniform(-6e-5, 6e-5, 40), base[:10]])
        values = np.sort(np.abs(values).astype(np.float32))[::-1]
        top = top_docs(
            total(len(values), equal_to), [score_doc(i, float(v)) for i, v in enumerate(values)]
        )
        expected = [
            float(v) for v in reranker.rerank(scored_docs.fromTopDocs(top, searcher), None).scores
        ]
        assert lucene.anserini_scores(values) == expected, scale
        assert sum(float(a) - float(b) <= 1e-4 for a, b in itertools.pairwise(values)) >= 40


def test_dense_finds_pages_by_meaning(dense: Any) -> None:
    hits = dense.search("store and query data in an embedded SQL database file", 5)
    assert_ranked(hits, 5)
    assert "sqlite3.html" in names(hits)[:3]
    assert dense.manifest.faiss == "flat" and dense.manifest.passages_per_doc == 1
    assert 0.0 < hits[0].score <= 1.0


def test_hybrid_is_rrf_of_its_members(hybrid: Any, bm25: Any, dense: Any) -> None:
    query = "read and write JSON files"
    hits = hybrid.search(query, 10)
    assert_ranked(hits, 10)
    depth = hybrid.args.depth
    fused = rrf(
        [
            [h.docid for h in bm25.search(query, depth)],
            [h.docid for h in dense.search(query, depth)],
        ]
    )
    assert [(h.docid, h.score) for h in hits] == [(d, pytest.approx(s)) for d, s in fused[:10]]
    assert "json.html" in names(hits)[:3]


def test_open_reads_the_page_by_docid_and_url(bm25: Any) -> None:
    hit = bm25.search("csv reader writer dialect", 1)[0]
    page = bm25.open(hit.docid, max_chars=2000)
    assert page.docid == hit.docid and page.offset == 0 and len(page.text) <= 2000
    assert page.next_offset is not None and page.total > 2000
    second = bm25.open(hit.url, offset=page.next_offset, max_chars=2000)
    assert second.docid == hit.docid and second.offset == page.next_offset
    text, offset = "", 0
    while offset is not None:
        part = bm25.open(hit.docid, offset=offset, max_chars=20000)
        text, offset = text + part.text, part.next_offset
    assert len(text) == page.total and text.startswith(page.text + second.text)


@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
def test_bad_queries_and_ids(kind: str, request: pytest.FixtureRequest) -> None:
    retriever = request.getfixturevalue(kind)
    for bad in ("", "   ", "!!!"):
        with pytest.raises(DrarenaError, match="no searchable words"):
            retriever.search(bad, 5)
    with pytest.raises(DrarenaError, match="k must be"):
        retriever.search("json", 0)
    huge = " ".join(f"term{i} json" for i in range(5000))
    assert_ranked(retriever.search(huge, 5), 5)
    junk = "j\u0000s\ud83do\u200bn \U0001f600 \u202e décodeur ☃ " * 3
    assert all(isinstance(h, Hit) for h in retriever.search(junk, 5))
    with pytest.raises(DrarenaError, match="unknown docid or URL"):
        retriever.open("0000000000000000")
    with pytest.raises(DrarenaError, match="offset"):
        retriever.open(retriever.search("json", 1)[0].docid, offset=-1)


def _snapshot_copy(snapshot: Path, dest: Path) -> Path:
    copy = dest / "pydocs"
    copy.mkdir(parents=True)
    for name in ("docs.jsonl", "manifest.json"):
        shutil.copy2(snapshot / name, copy / name)
    return copy


def test_stale_or_missing_index_names_the_rebuild_command(
    snapshot: Path, index_root: Path, tmp_path: Path
) -> None:
    changed = _snapshot_copy(snapshot, tmp_path / "a")
    manifest = json.loads((changed / "manifest.json").read_text())
    manifest["fingerprint"] = "f" * 64
    (changed / "manifest.json").write_text(json.dumps(manifest))
    for kind in ("bm25", "dense"):
        with pytest.raises(
            DrarenaError, match=r"stale.*snapshot fingerprint.*drarena search index"
        ):
            build_retriever({"kind": kind}, changed, index_root)

    edited = _snapshot_copy(snapshot, tmp_path / "b")
    with (edited / "docs.jsonl").open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "id": "new",
                    "url": "http://x/",
                    "title": "t",
                    "contents": "c",
                    "record_id": "r",
                    "payload_digest": "p",
                }
            )
            + "\n"
        )
    with pytest.raises(DrarenaError, match=r"docs\.jsonl changed.*drarena search index"):
        build_retriever({"kind": "hybrid"}, edited, index_root)

    with pytest.raises(DrarenaError, match=r"no bm25 index at .*drarena search index"):
        build_retriever({"kind": "bm25"}, snapshot, tmp_path / "empty")
    with pytest.raises(DrarenaError, match="not a local sentence-transformers folder"):
        build_retriever({"kind": "dense", "args": {"model": str(tmp_path)}}, snapshot, index_root)


def test_index_command_leaves_up_to_date_indexes_alone(
    snapshot: Path, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.stat().st_mtime_ns for p in (index_root / "pydocs").rglob("*")}
    argv = ["index", str(snapshot), "--index-root", str(index_root), "--dense-per-doc", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("up to date") == 3, out
    assert {p: p.stat().st_mtime_ns for p in (index_root / "pydocs").rglob("*")} == before


def test_search_command_prints_a_ranked_table(
    snapshot: Path, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "search",
                str(snapshot),
                "gzip compress files",
                "-k",
                "3",
                "--index-root",
                str(index_root),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["rank", "score", "docid"]
    assert [line.split()[0] for line in lines[1::2]] == ["1", "2", "3"]
    assert "gzip.html" in "".join(lines[:3])
    assert main(["search", str(snapshot), "  ", "--index-root", str(index_root)]) == 2
    assert "no searchable words" in capsys.readouterr().err


def test_ctrl_c_stays_python_s_once_the_jvm_runs() -> None:
    """pyserini's JVM starts with -Xrs: a SIGINT after it started is a KeyboardInterrupt in
    Python (cleanup runs), not the JVM exiting the process on its own."""
    import subprocess
    import sys

    code = (
        "import os, signal, time\n"
        "from drarena.search import lucene\n"
        "lucene.autoclass('java.lang.System')\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(10)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    print('KeyboardInterrupt')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "KeyboardInterrupt", (done.returncode, done.stderr[-500:])
    assert done.returncode == 0


# --- damaged index files: one-line errors that name the file and the rebuild -----------------


def _dense_folder(snapshot: Path, root: Path, count: int, kind: str = "flat") -> Path:
    """A dense index folder with a manifest as drarena writes it (passages from `root`), a
    docid list of `count` ids and no index file yet: what a FAISS file is checked against."""
    from drarena.search import embed
    from drarena.search.manifest import (
        DenseManifest,
        IndexLayout,
        PassagesManifest,
        read_manifest,
        write_manifest,
    )

    layout = IndexLayout(root, snapshot)
    passages = read_manifest(layout.passages, PassagesManifest)
    assert passages is not None
    folder = layout.dense(embed.model_slug(embed.DEFAULT_MODEL))
    folder.mkdir()
    manifest = DenseManifest(
        **passages.model_dump(include={"snapshot", "snapshot_fingerprint", "docs_sha256"}),
        passages=passages.passages,
        doc_count=count,
        passage_count=count,
        passages_per_doc=1,
        model=embed.DEFAULT_MODEL,
        model_path=str(embed.model_path(embed.DEFAULT_MODEL)),
        dimension=384,
        max_tokens=256,
        max_tokens_arg=None,
        precision="fp32",
        faiss=kind,
        hnsw_m=32 if kind == "hnsw" else None,
    )
    write_manifest(folder, manifest)
    (folder / "docid").write_text("".join(f"p{i}\n" for i in range(count)), encoding="utf-8")
    return folder


def test_a_damaged_faiss_file_is_refused_before_faiss_reads_it(
    pydocs_extracted: Path, index_copy: Path
) -> None:
    import struct

    folder = _dense_folder(pydocs_extracted, index_copy, 10)
    # the audit's file: 109 bytes whose header claims 699,050 vectors (faiss took 1.1 GB)
    head = struct.pack("<4siqqq?i", b"IxFI", 384, 699_050, 1 << 20, 1 << 20, True, 0)
    (folder / "index").write_bytes(head + struct.pack("<q", 699_050 * 384) + bytes(64))
    with pytest.raises(DrarenaError, match=r"damaged FAISS index \(109 bytes.*--force`") as info:
        build_retriever({"kind": "dense"}, pydocs_extracted, index_copy)
    assert str(folder / "index") in str(info.value)
    # the size and counts right, the type unknown: faiss's own error, in one line
    head = struct.pack("<4siqqq?i", b"XXXX", 384, 10, 1 << 20, 1 << 20, True, 0)
    (folder / "index").write_bytes(head + struct.pack("<q", 3840) + bytes(3840 * 4))
    with pytest.raises(DrarenaError, match=r"unreadable dense index .*--force`") as info:
        build_retriever({"kind": "dense"}, pydocs_extracted, index_copy)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_faiss_files_drarena_writes_pass_the_check(
    kind: str, pydocs_extracted: Path, index_copy: Path
) -> None:
    import faiss

    from drarena.search.build import make_faiss_index
    from drarena.search.dense import check_faiss_file
    from drarena.search.manifest import DenseManifest, read_manifest

    folder = _dense_folder(pydocs_extracted, index_copy, 500, kind)
    vectors = np.random.default_rng(0).standard_normal((500, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    faiss.write_index(
        make_faiss_index(vectors, 1 if kind == "hnsw" else 1000), str(folder / "index")
    )
    manifest = read_manifest(folder, DenseManifest)
    assert manifest is not None
    check_faiss_file(folder / "index", manifest, "`rebuild`")


def test_a_damaged_lucene_index_names_the_folder_and_the_rebuild(
    pydocs_extracted: Path, index_copy: Path
) -> None:
    bm25 = index_copy / "pydocs" / "bm25"
    for segments in bm25.glob("segments_*"):
        segments.unlink()
    with pytest.raises(DrarenaError, match=r"bm25: unreadable Lucene index .*--force`") as info:
        build_retriever({"kind": "bm25"}, pydocs_extracted, index_copy)
    assert str(bm25) in str(info.value) and "\n" not in str(info.value)


def test_damaged_passages_or_manifests_are_one_line_errors(
    pydocs_extracted: Path, index_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    passages = index_copy / "pydocs" / "passages"
    lines = (passages / "passages.jsonl").read_bytes().splitlines(keepends=True)
    (passages / "passages.jsonl").write_bytes(b"".join(lines[:5]) + b'{"broken\n')
    with pytest.raises(DrarenaError, match=r"passages\.jsonl:6: not a passage line .*--force`"):
        build_retriever({"kind": "bm25"}, pydocs_extracted, index_copy)
    (passages / "passages.jsonl").write_bytes(b"".join(lines[:2]) + b'{"id": "\xff"}\n')
    with pytest.raises(DrarenaError, match=r"passages\.jsonl:3: not a passage line"):
        build_retriever({"kind": "bm25"}, pydocs_extracted, index_copy)
    # the damaged file differs from the digest its manifest recorded: rebuilt without --force
    argv = ["search", "index", str(pydocs_extracted), "--no-dense", "--index-root", str(index_copy)]
    assert main(argv) == 0
    assert (passages / "passages.jsonl").read_bytes() == b"".join(lines)
    capsys.readouterr()
    # a manifest that is not UTF-8: a one-line error, and --force rebuilds past it
    (passages / "manifest.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(DrarenaError, match=r"manifest\.json: unreadable index manifest"):
        build_retriever({"kind": "bm25"}, pydocs_extracted, index_copy)
    assert main([*argv, "--force"]) == 0
    assert build_retriever({"kind": "bm25"}, pydocs_extracted, index_copy).search("tarfile", 1)
