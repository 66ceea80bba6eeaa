"""The corpus stages at size: wall time and peak memory per stage at 10K and 100K generated pages,
single process against Ray (and drarena's own process pool, the in-house peer), BM25 build and
query latency, the dense index kinds at 1M vectors, and projections from per-shard rates.
Figures are printed, never asserted; every row is from this one run.

  generate   drarena.web.warc.synth: N pages in WARC shards of 1,000 pages (seeded; same bytes).
  import     `snapshot import`, one process (--jobs 1) | --engine ray, W workers. Outputs
             compared byte for byte (the import clock is fixed).
  extract    `snapshot extract`, one process | the local pool of W processes (peer) |
             --engine ray, W workers (--engines picks rows). docs.jsonl, links.jsonl and
             extract-manifest.json compared byte for byte. --before DIR: each row also run
             with the drarena package of another checkout (an older commit, `git worktree
             add`), just before this checkout's, on the same snapshot: before/after figures
             from one run.
  bm25       passages, then BM25 with the one-thread SimpleIndexer | Anserini's IndexCollection
             on W threads over sharded JSON; then the BM25 retriever's query latency (p50,
             p95) on title queries of a seeded sample of pages, one query at a time.
  dense      (--dense-vectors) SYNTHETIC unit vectors in 384 dimensions, not encoded passages
             (encoding 1M passages takes days on 2 cores), from two models: `hierarchy`
             (topics of sub-topics: graded similarity, as real embeddings have) and `mixture`
             (5,000 flat Gaussian clusters: a query's top 10 are near-ties among ~200 points,
             the hard case),
             flat against the index drarena's `auto` picks at that size, tuned to the recall
             floor on fresh queries from the same mixture: recall@10 against flat, queries/s
             one query at a time on one thread and in one batch, build time, file size.

Peak RSS: `driver` is the stage process's own peak (VmHWM, its workers not included); `tree`
is the largest sum of RSS over the stage process and all its descendants (Ray's raylet, GCS
and workers included), sampled every 0.2 s: it counts shared pages once
per process, so it overstates the tree. Projections (1M and 10M pages) multiply the measured
seconds per page of the largest size by the page count and divide by W times the per-worker
efficiency measured at W: they assume that efficiency holds, and are labelled projected.

    PYTHONPATH=.scale-site:. nice -n 19 .venv/bin/python bench/bench_scale.py \
        --pages 10000,100000 --workers 2 --dense-vectors 1000000
    # extraction's peak memory before and after a change, one process, no Ray needed:
    nice -n 19 .venv/bin/python bench/bench_scale.py --pages 10000,100000 \
        --stages extract --engines local1 --before ../old-checkout --dense-vectors 0
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _child_code() -> str | None:
    """--before's child: the other checkout, whose drarena must be the one imported. It goes
    on the path before anything here imports drarena: inserted later (82d4837 to fbe9054), it
    found drarena already imported from this checkout, and the before rows ran this
    checkout's code. Its workers get it first too (PYTHONPATH for pool workers; Ray puts the
    working folder first on its workers' path, hence the chdir)."""
    if len(sys.argv) < 4 or sys.argv[1] != "--child":
        return None
    code: str | None = json.loads(sys.argv[3]).get("code")
    if code:
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        inherited = [os.path.abspath(p) for p in paths if p]
        os.environ["PYTHONPATH"] = os.pathsep.join([code, *inherited])
        os.chdir(code)
    return code


sys.path.insert(0, _child_code() or str(REPO))

from drarena.search.checkpoint import cpu_name  # noqa: E402

SHARD_PAGES = 1000
QUERIES = 300


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def sha(path: Path) -> str:
    """Read a chunk at a time: the stage's peak RSS is measured in the same process, and a
    docs.jsonl read whole (38 MB at 10,000 pages) was most of extraction's streamed peak."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()[:16]


# --- stages, each run in a fresh child process ---------------------------------------------


def child(stage: str, a: dict[str, Any]) -> dict[str, Any]:
    if stage == "generate":
        from drarena.web.warc.synth import SynthSpec, write_web

        paths = write_web(
            SynthSpec(a["pages"], seed=a["seed"], shard_pages=SHARD_PAGES), Path(a["out"])
        )
        return {"bytes": sum(p.stat().st_size for p in paths), "shards": len(paths)}
    if stage == "import":
        from datetime import UTC, datetime

        from drarena.web.warc.importer import ImportOptions, import_archives

        warcs = sorted(Path(a["warc"]).glob("*.warc.gz"))
        result = import_archives(
            "synth",
            warcs,
            Path(a["out"]),
            ImportOptions(
                progress=False,
                jobs=a["workers"],
                engine=a["engine"],
                clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            ),
        )
        out = Path(a["out"])
        return {
            "records": result.manifest.counts.records,
            "digest": sha(out / "index.cdxj") + sha(out / "manifest.json"),
        }
    if stage == "extract":
        from drarena.corpus.extract import extract_snapshot

        snap = Path(a["snap"])
        figures: dict[str, Any] = {}
        with contextlib.ExitStack() as stack:
            if a["engine"] == "ray":  # started here, timed apart; extraction reuses it
                from drarena import rayrun

                started = time.perf_counter()
                stack.enter_context(rayrun.session(None, a["workers"]))
                figures["ray_start_s"] = time.perf_counter() - started
            extracted = extract_snapshot(
                snap, workers=a["workers"], force=True, progress=False, engine=a["engine"]
            )
        return {
            **figures,
            "pages": extracted.docs,
            "digest": sha(snap / "docs.jsonl")
            + sha(snap / "links.jsonl")
            + sha(snap / "extract-manifest.json"),
        }
    if stage == "bm25":
        from drarena.search.build import build_bm25, build_passages
        from drarena.search.manifest import IndexLayout
        from drarena.search.passages import PassageSettings

        layout = IndexLayout(Path(a["root"]), Path(a["snap"]))
        start = time.perf_counter()
        _, state = build_passages(layout, PassageSettings())
        took = time.perf_counter() - start
        built = build_bm25(layout, state, force=True, threads=a["threads"])
        return {"passages": built.count, "passages_s": took, "bm25_s": built.seconds}
    if stage == "query":
        import random

        from drarena.corpus.extract import load_docs
        from drarena.search import bm25

        snap = Path(a["snap"])
        titles = [d.title.split(" | ")[0] for d in load_docs(snap) if d.is_content]
        queries = random.Random(1).sample(titles, min(QUERIES, len(titles)))
        start = time.perf_counter()
        retriever = bm25.build(snap, Path(a["root"]))
        opened = time.perf_counter() - start
        retriever.search(queries[0], 10)  # JVM warm
        times, found = [], 0
        for q in queries:
            t = time.perf_counter()
            hits = retriever.search(q, 10)
            times.append((time.perf_counter() - t) * 1000)
            found += bool(hits)
        cuts = statistics.quantiles(times, n=20)
        return {
            "open_s": opened,
            "p50_ms": statistics.median(times),
            "p95_ms": cuts[18],
            "queries": len(queries),
            "answered": found,
        }
    if stage == "dense":
        return dense_child(a)
    raise SystemExit(f"unknown stage {stage}")


def mixture(n: int, dim: int, seed: int, clusters: int, spread: float) -> Any:
    """Unit vectors from a mixture of Gaussians: SYNTHETIC stand-ins for passage embeddings."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(12345).standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        out[s : s + m] = centres[rng.integers(0, clusters, m)]
        out[s : s + m] += spread * rng.standard_normal((m, dim), dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def hierarchy(n: int, dim: int, seed: int, spread: float, size: int) -> Any:
    """Unit vectors in topics (n / 2,000) of sub-topics (n / 20), each point its sub-topic's
    centre plus noise (queries: drawn the same way with another seed): SYNTHETIC, with the
    graded similarity real embeddings have (a near
    neighbour shares the sub-topic, a farther one the topic)."""
    import numpy as np

    topics, subs = max(4, size // 2000), max(16, size // 20)  # size: of the indexed set
    fixed = np.random.default_rng(12345)
    topic_of = fixed.integers(0, topics, subs)
    centres = fixed.standard_normal((topics, dim)).astype(np.float32)
    sub = centres[topic_of] + 0.7 * fixed.standard_normal((subs, dim)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        out[s : s + m] = sub[rng.integers(0, subs, m)]
        out[s : s + m] += spread * rng.standard_normal((m, dim), dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def dense_child(a: dict[str, Any]) -> dict[str, Any]:
    import faiss

    from drarena.search import ann

    n, dim = a["vectors"], 384
    clusters = max(64, n // 200)
    start = time.perf_counter()
    if a["model"] == "hierarchy":
        vectors = hierarchy(n, dim, 0, a["spread"], n)
        queries = hierarchy(a["queries"], dim, 99, a["spread"], n)
        clusters = max(16, n // 20)
    else:
        vectors = mixture(n, dim, 0, clusters, a["spread"])
        queries = mixture(a["queries"], dim, 99, clusters, a["spread"])
    made = time.perf_counter() - start
    start = time.perf_counter()
    exact = ann.exact_neighbours(vectors, queries)
    exact_s = time.perf_counter() - start
    plan = ann.plan_index(n, kind=a["kind"])
    start = time.perf_counter()
    index, sample = ann.build_index(vectors, plan)
    build_s = time.perf_counter() - start
    plan, got = ann.tune(index, plan, queries, exact, a["floor"])
    tmp = Path(a["tmp"])
    faiss.write_index(index, str(tmp / "ann.index"))
    size = (tmp / "ann.index").stat().st_size
    del index
    opened = ann.open_index(tmp / "ann.index", plan)
    flat = faiss.IndexFlatIP(dim)
    flat.add(vectors)
    del vectors

    def qps(idx: Any, one_thread: bool) -> float:
        faiss.omp_set_num_threads(1 if one_thread else os.cpu_count() or 1)
        idx.search(queries[:5], 10)
        t = time.perf_counter()
        if one_thread:
            for q in queries:
                idx.search(q[None, :], 10)
        else:
            idx.search(queries, 10)
        return len(queries) / (time.perf_counter() - t)

    flat_1, ann_1 = qps(flat, True), qps(opened, True)
    flat_b, ann_b = qps(flat, False), qps(opened, False)
    return {
        "vectors": n,
        "clusters": clusters,
        "make_s": made,
        "exact_s": exact_s,
        "kind": plan.kind,
        "nlist": plan.nlist,
        "nprobe": plan.nprobe,
        "build_s": build_s,
        "train": sample.size if sample else 0,
        "recall": got,
        "file_mb": size / 1e6,
        "flat_qps_1": flat_1,
        "ann_qps_1": ann_1,
        "flat_qps_batch": flat_b,
        "ann_qps_batch": ann_b,
    }


def run(stage: str, args: dict[str, Any]) -> dict[str, Any]:
    """The stage in a fresh child: its JSON result plus wall seconds and peak RSS (MB)."""
    import psutil

    load_before = load()
    start = time.perf_counter()
    log = Path(tempfile.gettempdir()) / f"drarena-scale-{stage}.log"  # progress bars, JVM
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", stage, json.dumps(args)],
            stdout=subprocess.PIPE,
            stderr=err,
        )
    parent = psutil.Process(proc.pid)
    tree_peak, status = 0, 0
    while True:
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            procs = [parent, *parent.children(recursive=True)]
            total = 0
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
            tree_peak = max(tree_peak, total)
        except psutil.Error:
            pass
        time.sleep(0.2)
    wall = time.perf_counter() - start
    assert proc.stdout is not None
    out = proc.stdout.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"stage {stage} {args} failed with status {status}; see {log}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result.update(
        wall=wall, tree_mb=tree_peak / 1e6, driver_mb=result.pop("hwm_mb"), load=load_before
    )
    return result


def row(size: str, stage: str, how: str, r: dict[str, Any], extra: str = "") -> None:
    print(
        f"{size:>8} {stage:<9} {how:<26} {r['wall']:>8.1f} s {r['driver_mb']:>6.0f} MB "
        f"{r['tree_mb']:>6.0f} MB  "
        f"load {r['load']:<15} {extra}",
        flush=True,
    )


ENGINES = ("local1", "pool", "ray")


def corpus(
    pages: int,
    work: Path,
    workers: int,
    seed: int,
    stages: set[str],
    rounds: int,
    engines: tuple[str, ...] = ENGINES,
    before: Path | None = None,
) -> dict[str, Any]:
    warc, out = work / f"warc-{pages}", {}
    out["generate"] = r = run("generate", {"pages": pages, "seed": seed, "out": str(warc)})
    label = f"{pages:,}"
    row(label, "generate", "1 process", r, f"{r['bytes'] / 1e6:.0f} MB in {r['shards']} shards")
    for engine, jobs in (("local", 1), ("ray", workers)) if "import" in stages else [("local", 1)]:
        snap = work / f"snap-{pages}-{engine}"
        shutil.rmtree(snap, ignore_errors=True)
        out[f"import-{engine}"] = r = run(
            "import", {"warc": str(warc), "out": str(snap), "engine": engine, "workers": jobs}
        )
        how = "1 process" if engine == "local" else f"ray, {workers} workers"
        row(label, "import", how, r, f"{pages / r['wall']:.0f} pages/s, digest {r['digest'][:8]}")
    if "import" in stages:
        same = out["import-local"]["digest"] == out["import-ray"]["digest"]
        print(f"{'':>8} import outputs identical (CDXJ, manifest): {same}")
        shutil.rmtree(work / f"snap-{pages}-ray")
    snap = work / f"snap-{pages}-local"
    rows = {
        "local1": ("local", 1, "1 process"),
        "pool": ("local", workers, f"local pool, {workers} (peer)"),
        "ray": ("ray", workers, f"ray, {workers} workers"),
    }
    for round_ in range(rounds if "extract" in stages else 0):
        tag = f"-r{round_}" if round_ else ""
        for engine, n, how in (rows[e] for e in engines):
            for code in [before, None] if before else [None]:
                key = f"extract-{engine}-{n}{tag}" + ("-before" if code else "")
                args = {"snap": str(snap), "engine": engine, "workers": n}
                out[key] = r = run("extract", {**args, "code": str(code) if code else None})
                rate = out[key]["pages"] / r["wall"]
                start = f", ray start {r['ray_start_s']:.1f} s" if "ray_start_s" in r else ""
                shown = f"{how} (before)" if code else how
                extra = f"{rate:.0f} pages/s, digest {r['digest'][:8]}{start}"
                row(label, "extract", shown, r, extra)
        digests = {out[k]["digest"] for k in out if k.startswith("extract-")}
        ratios = []
        one = out.get(f"extract-local-1{tag}")
        ray_ = out.get(f"extract-ray-{workers}{tag}")
        pool = out.get(f"extract-local-{workers}{tag}")
        if one and ray_:
            warm = ray_["wall"] - ray_["ray_start_s"]
            ratios.append(
                f"ray {workers} workers vs 1 process: {one['wall'] / ray_['wall']:.2f}x "
                f"({one['wall'] / warm:.2f}x without Ray's start)"
            )
        if one and pool:
            ratios.append(f"local pool: {one['wall'] / pool['wall']:.2f}x")
        print(
            f"{'':>8} extract outputs identical (docs, links, manifest): "
            f"{len(digests) == 1}" + "".join(f"; {r}" for r in ratios)
        )
    for threads in (1, workers) if "bm25" in stages else ():
        root = work / f"index-{pages}-{threads}"
        out[f"bm25-{threads}"] = r = run(
            "bm25", {"snap": str(snap), "root": str(root), "threads": threads}
        )
        how = "SimpleIndexer, 1 thread" if threads == 1 else f"IndexCollection, {threads} thr"
        row(
            label,
            "bm25",
            how,
            r,
            f"{r['passages']:,} passages; passages {r['passages_s']:.1f} s, "
            f"index {r['bm25_s']:.1f} s",
        )
    if "bm25" not in stages:
        shutil.rmtree(snap, ignore_errors=True)
        shutil.rmtree(warc, ignore_errors=True)
        return out
    out["query"] = r = run("query", {"snap": str(snap), "root": str(work / f"index-{pages}-1")})
    row(
        label,
        "query",
        "bm25 retriever, k=10",
        r,
        f"p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms over {r['queries']} queries "
        f"({r['answered']} answered), open {r['open_s']:.1f} s",
    )
    for threads in (1, workers):
        shutil.rmtree(work / f"index-{pages}-{threads}", ignore_errors=True)
    shutil.rmtree(snap, ignore_errors=True)
    shutil.rmtree(warc, ignore_errors=True)
    return out


def project(results: dict[int, dict[str, Any]], workers: int) -> None:
    pages = max(results)
    r = results[pages]
    print(
        f"\nPROJECTED from the {pages:,}-page run (seconds per page x pages; W workers at the "
        f"per-worker efficiency measured at {workers}):"
    )
    for stage, single, multi in (
        ("import", "import-local", "import-ray"),
        ("extract", "extract-local-1", f"extract-ray-{workers}"),
    ):
        if single not in r or multi not in r:
            continue
        per_page = r[single]["wall"] / pages
        measured = r[single]["wall"] / r[multi]["wall"] / workers
        eff = min(1.0, measured)  # above 1: the machine's load moved between the two rows
        cells = [
            f"1M, 1 process {per_page * 1e6 / 60:.0f} min",
            f"1M, ray {workers} {per_page * 1e6 / (workers * eff) / 60:.0f} min",
        ]
        for w in (16, 64, 256):
            cells.append(f"10M, ray {w} {per_page * 1e7 / (w * eff) / 60:.0f} min")
        print(
            f"  {stage:<8} efficiency/worker {measured:.2f} (used: {eff:.2f}); " + "; ".join(cells)
        )
    if len(results) > 1:
        small = min(results)
        keys = ("import-local", "extract-local-1", f"extract-ray-{workers}")
        for key in [k for base in keys for k in (f"{base}-before", base)]:
            if key not in results[small] or key not in results[pages]:
                continue
            a, b = results[small][key]["driver_mb"], results[pages][key]["driver_mb"]
            print(
                f"  driver peak RSS {key}: {a:.0f} MB at {small:,} -> {b:.0f} MB at {pages:,} "
                f"(x{b / a:.2f} for x{pages / small:.0f} pages)"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="10000,100000", help="sizes, comma-separated")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dense-vectors", type=int, default=1_000_000, help="0: no dense stage")
    ap.add_argument("--dense-queries", type=int, default=200)
    ap.add_argument(
        "--dense-spread",
        type=float,
        default=1.5,
        help="noise per dimension around the mixture's centres (1.5)",
    )
    ap.add_argument("--floor", type=float, default=0.95)
    ap.add_argument("--dense-kind", default="auto", help="auto (what drarena picks), or a kind")
    ap.add_argument(
        "--dense-models",
        default="hierarchy,mixture",
        help="synthetic vector models: hierarchy (topics of sub-topics), mixture (flat clusters)",
    )
    ap.add_argument("--stages", default="import,extract,bm25", help="corpus stages to run")
    ap.add_argument("--rounds", type=int, default=1, help="extraction rows repeated, interleaved")
    ap.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help="extraction rows: local1 (one process), pool (W processes), ray (W workers)",
    )
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        help="a checkout whose drarena also runs each extraction row (before/after)",
    )
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = ap.parse_args()
    engines = tuple(e for e in args.engines.split(",") if e)
    if unknown := set(engines) - set(ENGINES):
        raise SystemExit(f"--engines: unknown {sorted(unknown)}; expected {ENGINES}")
    stages = set(args.stages.split(","))
    if "import" in stages or "ray" in engines:
        import ray  # noqa: F401  (fail early: the Ray rows need it: make setup-scale)

    work = Path(tempfile.mkdtemp(prefix="drarena-scale-", dir=args.work))
    ray_version = sys.modules["ray"].__version__ if "ray" in sys.modules else "not used"
    print(
        f"CPU {cpu_name()}, {os.cpu_count()} cores; load average at start {load()}; "
        f"python {platform.python_version()}; ray {ray_version}"
    )
    if args.before:
        print(f"before: drarena of {args.before.resolve()}")
    print(f"{'pages':>8} {'stage':<9} {'how':<26} {'wall':>10} {'driver':>9} {'tree':>9}")
    results: dict[int, dict[str, Any]] = {}
    try:
        for pages in [int(p) for p in args.pages.split(",") if p]:
            results[pages] = corpus(
                pages, work, args.workers, args.seed, stages, args.rounds, engines, args.before
            )
        if results:
            project(results, args.workers)
        for model in args.dense_models.split(",") if args.dense_vectors else []:
            r = run(
                "dense",
                {
                    "vectors": args.dense_vectors,
                    "queries": args.dense_queries,
                    "spread": args.dense_spread if model == "mixture" else 1.0,
                    "model": model,
                    "kind": args.dense_kind,
                    "floor": args.floor,
                    "tmp": str(work),
                },
            )
            results.setdefault(0, {})[f"dense-{model}"] = r
            full = " (every list: no faster than flat)" if r["nprobe"] == r["nlist"] else ""
            print(
                f"\ndense, SYNTHETIC {r['vectors']:,} x 384 vectors, model {model} "
                f"({r['clusters']} clusters), {args.dense_queries} fresh queries; load "
                f"{r['load']}; stage {r['wall']:.0f} s, peak RSS {r['tree_mb']:.0f} MB\n"
                f"  chosen: {r['kind']} nlist {r['nlist']} nprobe {r['nprobe']}{full} (tuned to "
                f"the floor {args.floor}), trained on {r['train']:,} vectors, built in "
                f"{r['build_s']:.0f} s, file {r['file_mb']:.0f} MB\n"
                f"  recall@10 vs flat {r['recall']:.3f}; one query at a time, 1 thread: flat "
                f"{r['flat_qps_1']:.1f} q/s, {r['kind']} {r['ann_qps_1']:.0f} q/s "
                f"({r['ann_qps_1'] / r['flat_qps_1']:.1f}x); batch, all cores: flat "
                f"{r['flat_qps_batch']:.0f} q/s, {r['kind']} {r['ann_qps_batch']:.0f} q/s "
                f"({r['ann_qps_batch'] / r['flat_qps_batch']:.1f}x)",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.json:
            args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=1))
    print(f"load average at end {load()}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        stage_args = json.loads(sys.argv[3])  # --before's code went first on the path at the top
        figures = child(sys.argv[2], stage_args)
        # VmHWM: this process's own peak since exec (ru_maxrss would count the forked parent)
        status = Path("/proc/self/status").read_text()
        figures["hwm_mb"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
        print(json.dumps(figures))
    else:
        sys.exit(main())
