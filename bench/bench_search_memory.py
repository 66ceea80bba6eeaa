"""A retriever's memory at size (issue 39): the BM25 retriever reading passages and pages from
disk by id (drarena today: PassageStore, DocStore.from_snapshot) against the same retriever
over every passage and page in memory (the peer: a dict of Passage records and the pages in a
list, what SearchData held before), on one generated snapshot, in the same run.

  corpus   drarena.web.warc.synth: N pages (seeded; the same bytes every run), imported,
           extracted (one process), passages and BM25 built (kept with --keep DIR, reused
           when there).
  memory   a fresh child per row: `lucene` opens only the Lucene searcher and answers the
           queries' passage searches (the JVM and Python floor both rows share), `disk` and
           `dict` build the retriever, answer Q title queries (k=10) and open each query's
           top page (4,000 characters). Each prints seconds to open, RSS after opening,
           peak RSS (VmHWM) and private memory (RssAnon) at the end. With --heap, the same
           two again under tracemalloc: the Python heap the retriever holds after opening,
           and its peak.
  latency  one child holds both, over one Lucene searcher: each query is asked of `disk`
           and of `dict` in turn (the order alternating, the snippet cache emptied before
           each call so neither warms it for the other), after two untimed passes; p50 and
           p95 of search (k=10) and of open, and the ratio disk/dict. Every query's hits are
           compared: they must be equal.

The JVM's heap is fixed at 512 MB and touched at start in every child (fixed_jvm_heap), so
the rows differ by what Python holds. Figures are printed, never asserted.

    PYTHONPATH=. nice -n 19 .venv/bin/python bench/bench_search_memory.py --pages 30000
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drarena.search.checkpoint import cpu_name  # noqa: E402

WARMUP = 2
JVM_HEAP = "512m"  # Lucene's heap in every child (fixed_jvm_heap): searching needs little


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def status_mb(field: str) -> float:
    """VmRSS, VmHWM or RssAnon (private memory: RSS less the mapped files the kernel may
    share and evict, Lucene's index, offsets.npy) of this process, in MB."""
    status = Path("/proc/self/status").read_text()
    return int(status.split(f"{field}:")[1].split()[0]) * 1024 / 1e6


def make_corpus(pages: int, seed: int, work: Path) -> tuple[Path, Path, dict[str, Any]]:
    """(snapshot, index root, figures): generated, imported, extracted and indexed once."""
    from datetime import UTC, datetime

    from drarena.corpus.extract import extract_snapshot
    from drarena.search.build import build_bm25, build_passages
    from drarena.search.manifest import IndexLayout
    from drarena.search.passages import PassageSettings
    from drarena.web.warc.importer import ImportOptions, import_archives
    from drarena.web.warc.synth import SynthSpec, write_web

    snap, root = work / f"synth-{pages}", work / f"index-{pages}"
    layout = IndexLayout(root, snap)
    figures: dict[str, Any] = {}
    if not (snap / "docs.jsonl").is_file():
        start = time.perf_counter()
        warcs = write_web(SynthSpec(pages, seed=seed, shard_pages=1000), work / f"warc-{pages}")
        import_archives(
            "synth",
            warcs,
            snap,
            ImportOptions(progress=False, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC)),
        )
        extract_snapshot(snap, workers=1, progress=False)
        shutil.rmtree(work / f"warc-{pages}", ignore_errors=True)
        figures["corpus_s"] = time.perf_counter() - start
    start = time.perf_counter()
    _, state = build_passages(layout, PassageSettings())
    built = build_bm25(layout, state)
    figures["index_s"] = time.perf_counter() - start
    figures["passages"] = built.count
    figures["docs_mb"] = (snap / "docs.jsonl").stat().st_size / 1e6
    figures["passages_mb"] = (layout.passages / "passages.jsonl").stat().st_size / 1e6
    figures["offsets_mb"] = (layout.passages / "offsets.npy").stat().st_size / 1e6
    return snap, root, figures


def title_queries(snap: Path, count: int, seed: int) -> list[str]:
    """Page titles (the site part cut off) of a seeded sample of pages, as bench_scale asks."""
    from drarena.corpus.extract import doc_lines

    titles = [d.title.split(" | ")[0] for _, _, d in doc_lines(snap) if d.is_content]
    return random.Random(seed).sample(titles, min(count, len(titles)))


def dict_data(retriever: Any, snap: Path, root: Path) -> Any:
    """The peer's SearchData: every page and every passage in memory, as before issue 39."""
    from drarena.search.base import SearchData
    from drarena.search.build import load_passages
    from drarena.search.docstore import DocStore, load_source_docs
    from drarena.search.manifest import IndexLayout

    layout = IndexLayout(root, snap)
    docs = DocStore(load_source_docs(snap), snap.name)
    passages = {p.id: p for p in load_passages(layout)}
    return SearchData(docs, passages, retriever.data.settings)


def open_retriever(mode: str, snap: Path, root: Path) -> Any:
    from drarena.search import bm25

    retriever = bm25.build(snap, root)
    if mode == "dict":
        retriever.data = dict_data(retriever, snap, root)
    return retriever


def fixed_jvm_heap() -> None:
    """The JVM's heap at JVM_HEAP, touched when it starts, in every child.

    Why: left to itself the JVM sizes its heap by its collector's choices (the Lucene-only
    row measured 0.9 GB at 30,000 pages and 2.7 GB at 100,000, above the retriever's row),
    which swamps the difference between the rows; fixed and pre-touched, it is the same in
    each, and the rows differ by what Python holds."""
    import jnius_config

    jnius_config.add_options(f"-Xms{JVM_HEAP}", f"-Xmx{JVM_HEAP}", "-XX:+AlwaysPreTouch")


def memory_child(a: dict[str, Any]) -> dict[str, Any]:
    """One row of the memory table in this fresh process."""
    import tracemalloc

    fixed_jvm_heap()
    snap, root, queries = Path(a["snap"]), Path(a["root"]), a["queries"]
    if a["heap"]:
        tracemalloc.start()
    start = time.perf_counter()
    if a["mode"] == "lucene":
        from drarena.search import lucene
        from drarena.search.manifest import IndexLayout

        searcher = lucene.bulk_searcher(IndexLayout(root, snap).bm25, 0.9, 0.4)
        opened = time.perf_counter() - start
        out = {"open_s": opened, "open_rss_mb": status_mb("VmRSS")}
        for q in queries:
            searcher.search(q, 50)
    else:
        retriever = open_retriever(a["mode"], snap, root)
        opened = time.perf_counter() - start
        out = {"open_s": opened, "open_rss_mb": status_mb("VmRSS")}
        if a["heap"]:
            out["open_heap_mb"] = tracemalloc.get_traced_memory()[0] / 1e6
        for q in queries:
            hits = retriever.search(q, 10)
            if hits:
                retriever.open(hits[0].docid, 0, 4000)
    if a["heap"]:
        out["heap_mb"], out["heap_peak_mb"] = (v / 1e6 for v in tracemalloc.get_traced_memory())
    out.update(rss_mb=status_mb("VmRSS"), hwm_mb=status_mb("VmHWM"), anon_mb=status_mb("RssAnon"))
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    result = fn()
    return (time.perf_counter() - t) * 1000, result


def latency_child(a: dict[str, Any]) -> dict[str, Any]:
    """disk and dict asked each query in turn, in one process (the same JVM, the same load)."""
    from drarena.search.base import passage_snippet

    snap, root, queries = Path(a["snap"]), Path(a["root"]), a["queries"]
    fixed_jvm_heap()
    disk = open_retriever("disk", snap, root)
    peer = copy.copy(disk)  # the same Lucene searcher: only the data differs
    peer.data = dict_data(peer, snap, root)
    both = {"disk": disk, "dict": peer}
    for _ in range(WARMUP):
        for q in queries:
            for r in both.values():
                r.search(q, 10)
    times: dict[str, list[float]] = {f"{m}_{op}": [] for m in both for op in ("search", "open")}
    differ = 0
    for n, q in enumerate(queries):
        answers = {}
        for mode in ("disk", "dict") if n % 2 == 0 else ("dict", "disk"):
            passage_snippet.cache_clear()
            took, answers[mode] = timed(functools.partial(both[mode].search, q, 10))
            times[f"{mode}_search"].append(took)
        differ += answers["disk"] != answers["dict"]
        if answers["disk"]:
            top = answers["disk"][0].docid
            for mode in ("disk", "dict") if n % 2 else ("dict", "disk"):
                took, _ = timed(functools.partial(both[mode].open, top, 0, 4000))
                times[f"{mode}_open"].append(took)
    out: dict[str, Any] = {"differ": differ, "queries": len(queries)}
    for name, values in times.items():
        cuts = statistics.quantiles(values, n=20)
        out[name] = {"p50": statistics.median(values), "p95": cuts[18], "n": len(values)}
    return out


def run(kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """A child of this script (`--child KIND JSON`): its last stdout line, parsed."""
    log = Path(tempfile.gettempdir()) / "drarena-bench-search-memory.log"  # the JVM's chatter
    with log.open("ab") as err:
        done = subprocess.run(
            [sys.executable, __file__, "--child", kind, json.dumps(args)],
            stdout=subprocess.PIPE,
            stderr=err,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(
            f"child {kind} {args.get('mode', '')} failed ({done.returncode}); see {log}"
        )
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def memory_rows(base: dict[str, Any], passages: int, heap: bool) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    print(f"\n{'row':<14} {'open':>7} {'RSS open':>10} {'peak RSS':>10} {'anon end':>10}   load")
    for mode in ("lucene", "disk", "dict"):
        before = load()
        r = rows[mode] = run("memory", {**base, "mode": mode, "heap": False})
        print(
            f"{mode:<14} {r['open_s']:>6.1f}s {r['open_rss_mb']:>7.0f} MB {r['hwm_mb']:>7.0f} MB"
            f" {r['anon_mb']:>7.0f} MB   {before}",
            flush=True,
        )
    extra = rows["dict"]["hwm_mb"] - rows["disk"]["hwm_mb"]
    over = rows["disk"]["hwm_mb"] - rows["lucene"]["hwm_mb"]
    print(
        f"peak RSS disk/dict {rows['disk']['hwm_mb'] / rows['dict']['hwm_mb']:.2f}; dict holds "
        f"{extra:,.0f} MB more ({extra * 1e6 / passages:,.0f} bytes a passage); disk over the "
        f"Lucene-only floor: {over:,.0f} MB ({over * 1e6 / passages:,.0f} bytes a passage)"
    )
    if heap:
        print(f"\n{'python heap':<14} {'after open':>11} {'end':>9} {'peak':>9}")
        for mode in ("disk", "dict"):
            r = rows[f"{mode}_heap"] = run("memory", {**base, "mode": mode, "heap": True})
            print(
                f"{mode:<14} {r['open_heap_mb']:>8.1f} MB {r['heap_mb']:>6.1f} MB "
                f"{r['heap_peak_mb']:>6.1f} MB",
                flush=True,
            )
    return rows


def latency_rows(base: dict[str, Any]) -> dict[str, Any]:
    before = load()
    r = run("latency", base)
    print(f"\nlatency, {r['queries']} queries, load {before}; hits differ on {r['differ']}")
    for op in ("search", "open"):
        disk, peer = r[f"disk_{op}"], r[f"dict_{op}"]
        print(
            f"  {op:<7} disk p50 {disk['p50']:6.2f} ms p95 {disk['p95']:6.2f} ms | dict p50 "
            f"{peer['p50']:6.2f} ms p95 {peer['p95']:6.2f} ms | disk/dict p50 "
            f"{disk['p50'] / peer['p50']:.2f}x p95 {disk['p95'] / peer['p95']:.2f}x"
        )
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=30_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heap", action="store_true", help="also the Python heap (tracemalloc)")
    ap.add_argument("--keep", type=Path, default=None, help="build the corpus here and keep it")
    ap.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="drarena-search-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"CPU {cpu_name()}, {os.cpu_count()} cores; load average at start {load()}")
    try:
        snap, root, figures = make_corpus(args.pages, args.seed, work)
        print(
            f"{args.pages:,} pages, {figures['passages']:,} passages: docs.jsonl "
            f"{figures['docs_mb']:.0f} MB, passages.jsonl {figures['passages_mb']:.0f} MB, "
            f"offsets.npy {figures['offsets_mb']:.1f} MB"
            + (f"; corpus built in {figures['corpus_s']:.0f} s" if "corpus_s" in figures else "")
        )
        base = {
            "snap": str(snap),
            "root": str(root),
            "queries": title_queries(snap, args.queries, args.seed),
        }
        results = {
            "corpus": figures,
            "memory": memory_rows(base, figures["passages"], args.heap),
            "latency": latency_rows(base),
        }
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"load average at end {load()}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_args = json.loads(sys.argv[3])
        child = memory_child if sys.argv[2] == "memory" else latency_child
        print(json.dumps(child(child_args)))
    else:
        sys.exit(main())
