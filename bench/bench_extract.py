"""Benchmark of the corpus stage: extraction rate and tree building, against peers measured in
the same run over the same pages. Figures are printed, never asserted.

  peer        trafilatura.extract(body) with its defaults, single process: text only.
  drarena x1  drarena's page extraction (trafilatura main text, title and metadata, every link
              with context and furniture flags) in this process.
  drarena xN  the same over a process pool of all cores, pool start-up included.
  ceiling     Resiliparse's extract_plain_text(main_content=True) on a parsed tree (C++).
  pool        the all-cores pool again, warm, with the CPU its workers got: on a shared
              machine "cores obtained" tells whether the all-cores row could scale at all.
  trees       LinkGraph from docs.jsonl + links.jsonl, then 30 seeded trees.

Usage: .venv/bin/python bench/bench_extract.py [--snapshot snapshots/pydocs] [--pages N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drarena.corpus.extract import (  # noqa: E402
    MAX_PAGE_BYTES,
    ExtractOptions,
    Job,
    _extract_job,
    _pool_context,
    extract_responses,
    full_content_type,
    load_docs,
    load_links,
    run_extraction,
    select_pages,
)
from drarena.corpus.trees import LinkGraph, TreeParams, build_trees  # noqa: E402
from drarena.web.warc.snapshot import Snapshot  # noqa: E402


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): on a shared machine the CPU figure of the
    single-process rows is the steadier one."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def cpu_job(job: Job) -> float:
    """One page extracted in a pool worker; returns the worker CPU seconds it took."""
    start = time.process_time()
    _extract_job(job)
    return time.process_time() - start


def cores_obtained(jobs: list[Job], workers: int) -> tuple[float, float]:
    """(wall seconds, worker CPU seconds) of the same pool run_extraction uses: CPU / wall
    is how many cores the pool actually got, which a loaded machine can keep near 1."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
        list(pool.map(cpu_job, jobs[:workers]))  # workers started and warm
        start = time.perf_counter()
        cpu = sum(pool.map(cpu_job, jobs, chunksize=max(1, min(8, len(jobs) // (workers * 4)))))
        return time.perf_counter() - start, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshot", type=Path, default=REPO / "snapshots" / "pydocs")
    ap.add_argument("--pages", type=int, default=0, help="first N pages only (0: all)")
    ap.add_argument("--trees", type=int, default=30)
    args = ap.parse_args()

    import trafilatura
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    with Snapshot.open(args.snapshot) as snap:
        sel = select_pages(snap.iter_responses())
        fingerprint, name = snap.fingerprint, snap.name
    pages = sel.pages[: args.pages] if args.pages else sel.pages
    jobs = [(r.body, r.canonical_url, full_content_type(r), MAX_PAGE_BYTES) for r in pages]
    n, cores = len(jobs), os.cpu_count() or 1
    mib = sum(len(j[0]) for j in jobs) / 2**20
    print(f"{n} HTML pages ({mib:.1f} MiB) from {args.snapshot}, {cores} cores")
    trafilatura.extract(jobs[0][0])  # imports and caches warmed for everyone
    run_extraction(jobs[:1], 1, progress=False)

    rows: list[tuple[str, tuple[float, float]]] = []
    rows.append(
        (
            "peer: trafilatura.extract(), 1 process",
            timed(lambda: [trafilatura.extract(j[0]) for j in jobs]),
        )
    )
    rows.append(
        ("drarena extraction, 1 process", timed(lambda: run_extraction(jobs, 1, progress=False)))
    )
    rows.append(
        (
            f"drarena extraction, {cores} processes",
            timed(lambda: run_extraction(jobs, cores, progress=False)),
        )
    )
    rows.append(
        (
            "ceiling: resiliparse main_content, 1 process",
            timed(
                lambda: [
                    extract_plain_text(HTMLTree.parse_from_bytes(j[0], "utf-8"), main_content=True)
                    for j in jobs
                ]
            ),
        )
    )
    peer_wall, peer_cpu = n / rows[0][1][0], n / rows[0][1][1]
    print(f"{'extraction':<48} {'pages/s':>9} {'x peer':>8} {'pages/cpu-s':>12} {'x peer':>8}")
    for label, (wall, cpu) in rows:
        rate = n / wall
        line = f"{label:<48} {rate:9.1f} {rate / peer_wall:8.2f}"
        if "processes" not in label:  # pool workers' CPU is not this process's
            line += f" {n / cpu:12.1f} {n / cpu / peer_cpu:8.2f}"
        print(line)
    wall, cpu = cores_obtained(jobs, cores)
    print(
        f"pool of {cores} (warm): {n / wall:.1f} pages/s, {n / cpu:.1f} pages per worker "
        f"CPU second, {cpu / wall:.2f} cores obtained"
    )
    print(f"load average (1 min) after the runs: {os.getloadavg()[0]:.1f} on {cores} cores")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        extract_responses(
            pages,
            out,
            name=name,
            fingerprint=fingerprint,
            options=ExtractOptions(workers=cores, progress=False),
        )
        t0 = time.perf_counter()
        docs, links = load_docs(out), load_links(out)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        graph = LinkGraph.build(docs, links)
        t_graph = time.perf_counter() - t0
        hubs = len(graph.root_candidates(TreeParams()))
        if not hubs:
            print(f"trees: no hub pages among these {n} pages; use more --pages")
            return
        t0 = time.perf_counter()
        trees = build_trees(graph, TreeParams(count=min(args.trees, hubs), seed=1))
        t_trees = time.perf_counter() - t0
    nodes = sum(len(t.nodes) for t in trees)
    print(
        f"trees: load docs+links {t_load:.2f} s ({len(docs)} docs, {len(links)} links), "
        f"graph {t_graph:.2f} s, {len(trees)} trees ({nodes} nodes) {t_trees:.2f} s; "
        f"tree building is {t_trees / t_load:.2f}x the time to read its inputs"
    )


if __name__ == "__main__":
    main()
