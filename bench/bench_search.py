"""Search benchmark on the committed snapshot: index build, query latency, encoding speed, and
BM25 through Lucene (pyserini) against bm25s in the same run.

Run: .venv/bin/python bench/bench_search.py [--snapshot snapshots/pydocs] [--queries 200]

Works on a temporary copy of the snapshot (extracted there) and a temporary index root, so the
repository is never written. Prints:
- BM25 index build: seconds, pages/s and passages/s (Lucene through pyserini's SimpleIndexer);
- per retriever (bm25, dense, hybrid) at k=10 after two untimed passes: queries/s, p50 and
  p95 latency, and raw Lucene passage search for reference;
- dense encoding: passages/s in fp32 (torch's threads, then 1 thread), bf16 autocast and
  128-token truncation, each with its cosine against fp32 (a speed-up must keep >= 0.999);
- bm25s over the same passages, tokenized by the same Lucene analyzer: queries/s ratio and
  mean top-10 passage overlap with Lucene.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drarena.corpus.extract import extract_snapshot  # noqa: E402
from drarena.search import build, embed, lucene  # noqa: E402
from drarena.search.base import build_retriever  # noqa: E402
from drarena.search.diagnose import build_queries  # noqa: E402
from drarena.search.docstore import load_source_docs  # noqa: E402
from drarena.search.manifest import IndexLayout  # noqa: E402
from drarena.search.passages import PassageSettings  # noqa: E402

K = 10
WARMUP = 2


def latencies(fn: Callable[[str], Any], queries: list[str]) -> tuple[float, float, float]:
    """(queries/s, p50 ms, p95 ms) over queries, after WARMUP untimed passes over them all
    (the JVM compiles Lucene's hot paths only after a few hundred queries)."""
    for _ in range(WARMUP):
        for q in queries:
            fn(q)
    times = []
    start = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t) * 1000)
    total = time.perf_counter() - start
    times.sort()
    return len(queries) / total, statistics.median(times), times[int(0.95 * (len(times) - 1))]


def row(name: str, qps: float, p50: float, p95: float) -> str:
    return f"  {name:26} {qps:9.1f} q/s   p50 {p50:7.2f} ms   p95 {p95:7.2f} ms"


def encoding(texts: list[str]) -> list[str]:
    encoder = embed.load_encoder(embed.DEFAULT_MODEL)
    embed.encode(encoder, texts[:16])
    out = []
    reference = None
    configs: list[tuple[str, embed.Precision, int | None, int | None]] = [
        ("fp32", "fp32", None, None), ("fp32, 1 thread", "fp32", None, 1),
        ("bf16 autocast", "bf16", None, None), ("fp32, 128 tokens", "fp32", 128, None)]
    for label, precision, max_tokens, threads in configs:
        start = time.perf_counter()
        vectors = embed.encode(encoder, texts, precision, max_tokens=max_tokens, threads=threads)
        rate = len(texts) / (time.perf_counter() - start)
        if reference is None:
            reference, base = vectors, rate
        cos = (vectors * reference).sum(axis=1)
        out.append(f"  {label:18} {rate:7.1f} passages/s  ({rate / base:4.2f}x fp32)   "
                   f"cosine vs fp32 min {cos.min():.5f} mean {cos.mean():.5f}")
    return out


def bm25s_compare(passages: list[Any], settings: PassageSettings, queries: list[str],
                  bm25: Any) -> list[str]:
    import bm25s

    analyzer = lucene.autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    utils = lucene.autoclass("io.anserini.analysis.AnalyzerUtils")

    def analyze(text: str) -> list[str]:
        return [str(t) for t in utils.analyze(analyzer, text)]

    start = time.perf_counter()
    corpus_tokens = [analyze(p.indexed_text(settings)) for p in passages]
    tokenize_s = time.perf_counter() - start
    start = time.perf_counter()
    index = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    index.index(corpus_tokens, show_progress=False)
    build_s = time.perf_counter() - start
    ids = [p.id for p in passages]
    query_tokens = [analyze(q) or ["-"] for q in queries]
    by_text = dict(zip(queries, query_tokens, strict=True))

    def bm25s_search(q: str) -> list[str]:
        rows, _ = index.retrieve([by_text[q]], k=K, show_progress=False, n_threads=1)
        return [ids[i] for i in rows[0]]

    def lucene_search(q: str) -> list[str]:
        return [pid for pid, _ in bm25.search_passages(q, K)]

    lq = latencies(lucene_search, queries)
    sq = latencies(bm25s_search, queries)
    overlap = statistics.mean(len(set(lucene_search(q)) & set(bm25s_search(q))) / K
                              for q in queries)
    return [
        f"  bm25s index: {build_s:.2f} s (+ {tokenize_s:.1f} s Lucene analysis of the passages)",
        row("Lucene passages k=10", *lq),
        row("bm25s passages k=10", *sq),
        f"  Lucene / bm25s throughput: {lq[0] / sq[0]:.2f}x   mean top-10 overlap: "
        f"{overlap:.3f} (same tokens; bm25s queries pre-analyzed)",
    ]


def _searcher(retriever: Any) -> Callable[[str], Any]:
    return lambda q: retriever.search(q, K)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, default=REPO / "snapshots" / "pydocs")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--encode-sample", type=int, default=96)
    parser.add_argument("--dense-per-doc", type=int, default=1)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    try:
        snapshot = work / args.snapshot.name
        shutil.copytree(args.snapshot, snapshot, ignore=shutil.ignore_patterns("trees"))
        extract_snapshot(snapshot, progress=False)  # a no-op when the copy is up to date
        settings = PassageSettings()
        layout = IndexLayout(work / "index", snapshot)
        _, state = build.build_passages(layout, settings)
        passages = build.load_passages(layout)
        pages = len({p.doc_id for p in passages})
        lucene.autoclass("java.lang.System")
        result = build.build_bm25(layout, state)
        print("load average (1, 5, 15 min) at start: "
              + ", ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores")
        print(f"snapshot {args.snapshot.name}: {pages} pages, {len(passages)} passages "
              f"({settings.words} words, stride {settings.stride})")
        print(f"BM25 index build (Lucene via pyserini): {result.seconds:.1f} s, "
              f"{pages / result.seconds:.1f} pages/s, {len(passages) / result.seconds:.0f} "
              "passages/s")
        dense_build = build.build_dense(layout, state, per_doc=args.dense_per_doc)
        print(f"dense index build (MiniLM fp32, first {args.dense_per_doc} passage(s) per page): "
              f"{dense_build.seconds:.1f} s, {dense_build.count / dense_build.seconds:.1f} "
              "passages/s")

        docs = load_source_docs(snapshot)
        queries = [q.text for q in build_queries(docs, [d.id for d in docs if d.indexed],
                                                 max_pages=args.queries // 2 + 1)]
        queries = queries[:args.queries]
        print(f"\nqueries: {len(queries)} (page titles and key phrases), k={K}, "
              f"after {WARMUP} untimed passes over them")
        retrievers: dict[str, Any] = {
            kind: build_retriever({"kind": kind}, snapshot, layout.root.parent)
            for kind in ("bm25", "dense", "hybrid")}
        print(row("Lucene raw (50 passages)",
                  *latencies(lambda q: retrievers["bm25"].search_passages(q, 50), queries)))
        for kind, retriever in retrievers.items():
            print(row(f"{kind} retriever", *latencies(_searcher(retriever), queries)))

        sample = [p.indexed_text(settings) for p in passages[::max(1, len(passages)
                                                                    // args.encode_sample)]]
        print(f"\ndense encoding, {len(sample)} passages spread over the snapshot:")
        for line in encoding(sample[:args.encode_sample]):
            print(line)

        print("\nBM25 peer: bm25s (k1=0.9, b=0.4, method lucene) on the same passages")
        for line in bm25s_compare(passages, settings, queries, retrievers["bm25"]):
            print(line)
        print("load average at end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
