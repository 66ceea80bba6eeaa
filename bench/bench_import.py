"""Import throughput and peak memory: `drarena snapshot import` vs FastWARC's raw iteration.

Builds synthetic archives under /tmp by concatenating the committed fixture's WARC members
(gzip per record) into a few files until each size is reached, then, for each size, runs in a
fresh child process: (a) FastWARC's ArchiveIterator over the files (parse_http=False: only
record headers, the least a reader can do), (b) drarena's import of the same files, in one
process and with --jobs worker processes (files in parallel; with `--files 1`, one file split
into byte ranges at record boundaries) (hard link, index, CDXJ, manifest;
canonicalize_url's LRU cache disabled, since a real archive does not repeat its
URLs as the synthetic one does). Prints MB/s (compressed input), records/s, the ratio
drarena/FastWARC, and each child's peak RSS (ru_maxrss), so memory can be compared across
sizes. Everything built is deleted afterwards.

    .venv/bin/python bench/bench_import.py            # 0.5 GB and 2 GB
    .venv/bin/python bench/bench_import.py --gb 1     # 0.25 GB and 1 GB
    .venv/bin/python bench/bench_import.py --gb 1 --files 1   # one file, split by --jobs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "snapshots" / "pydocs" / "pydocs-00000.warc.gz"


def build_archive(folder: Path, size: int, files: int) -> list[Path]:
    """Concatenate the fixture's members into `files` files of size/files bytes each."""
    data = FIXTURE.read_bytes()
    paths = []
    for number in range(files):
        path = folder / f"synthetic-{number:02d}.warc.gz"
        with path.open("wb") as out:
            written = 0
            while written < size // files:
                out.write(data)
                written += len(data)
        paths.append(path)
    return paths


def child_fastwarc(paths: list[str]) -> dict[str, float]:
    from fastwarc.warc import ArchiveIterator

    start = time.perf_counter()
    records = 0
    for path in paths:
        with open(path, "rb") as fh:
            for _ in ArchiveIterator(fh, parse_http=False):
                records += 1
    return {"seconds": time.perf_counter() - start, "records": records}


# The synthetic archive repeats the fixture's 322 URLs; canonicalize_url's LRU cache would hit
# every time, which a real archive does not: measure without it, in the drarena child and in
# its worker processes (spawned: they run this sitecustomize too, through PYTHONPATH).
NO_URL_CACHE = """import drarena.web.warc.urls as urls
urls.canonicalize_url = urls.canonicalize_url.__wrapped__
"""


def child_drarena(paths: list[str], out: str, jobs: int) -> dict[str, float]:
    from drarena.web.warc import urls
    from drarena.web.warc.importer import ImportOptions, import_archives

    if hasattr(urls.canonicalize_url, "cache_info"):
        raise SystemExit("the URL cache is on: run through main(), which turns it off")
    start = time.perf_counter()
    result = import_archives(
        "bench", [Path(p) for p in paths], Path(out), ImportOptions(progress=False, jobs=jobs)
    )
    return {"seconds": time.perf_counter() - start, "records": result.manifest.counts.records}


def run_child(args: list[str], site: Path | None = None) -> tuple[dict[str, float], int]:
    """Run this script as a child (with `site` on PYTHONPATH); return its JSON result and its
    peak RSS in KiB (the largest of the child and, with --jobs, its worker processes)."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"child {args[0]} failed with status {status}")
    return json.loads(output), usage.ru_maxrss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=2.0, help="largest archive in GB (2)")
    parser.add_argument(
        "--files",
        type=int,
        default=4,
        help="files the archive is split into (4; crawlers roll files over; "
        "1: one file, which the import splits into byte ranges)",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="worker processes of the parallel import run (2)"
    )
    parser.add_argument(
        "--tmp",
        type=Path,
        default=Path(tempfile.gettempdir()),
        help="where to build the archives (default /tmp)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="drarena-bench-import-", dir=args.tmp))
    site = work / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_URL_CACHE)
    sizes = [int(args.gb * 1e9 / 4), int(args.gb * 1e9)]
    rows = []
    try:
        for size in sizes:
            paths = build_archive(work, size, args.files)
            names = [str(p) for p in paths]
            nbytes = sum(p.stat().st_size for p in paths)
            load = os.getloadavg()[0]
            fast, fast_rss = run_child(["--child-fastwarc", *names])
            runs = []
            for jobs in sorted({1, args.jobs}):
                out = work / f"snap-{size}-{jobs}"
                ours, rss = run_child(["--child-drarena", str(out), str(jobs), *names], site)
                shutil.rmtree(out, ignore_errors=True)
                runs.append((jobs, ours, rss))
            rows.append((nbytes, fast, fast_rss, runs, load))
            for path in paths:
                path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"fixture {FIXTURE.name} ({FIXTURE.stat().st_size / 1e6:.1f} MB) concatenated into "
        f"{args.files} files per size; {os.cpu_count()} CPUs; MB/s of compressed input; "
        "load = 1-min load average before the size"
    )
    print(
        f"{'archive':>8} {'records':>8} {'reader':>12} {'MB/s':>7} {'rec/s':>7} "
        f"{'peak RSS':>9} {'vs FastWARC':>11} {'load':>5}"
    )
    for nbytes, fast, fast_rss, runs, load in rows:
        fast_rate = nbytes / fast["seconds"] / 1e6
        label = f"{nbytes / 1e9:.2f}GB"
        print(
            f"{label:>8} {int(fast['records']):>8} {'FastWARC':>12} {fast_rate:>7.1f} "
            f"{fast['records'] / fast['seconds']:>7.0f} {fast_rss / 1024:>6.0f} MB "
            f"{'1.00':>11} {load:>5.2f}"
        )
        for jobs, ours, rss in runs:
            rate = nbytes / ours["seconds"] / 1e6
            label = f"drarena j={jobs}"
            print(
                f"{'':>8} {int(ours['records']):>8} {label:>12} {rate:>7.1f} "
                f"{ours['records'] / ours['seconds']:>7.0f} {rss / 1024:>6.0f} MB "
                f"{rate / fast_rate:>11.2f}"
            )
    small, large = rows[0][3][0][2], rows[-1][3][0][2]
    print(
        f"drarena j=1 peak RSS {small / 1024:.0f} MB at {rows[0][0] / 1e9:.2f} GB vs "
        f"{large / 1024:.0f} MB at {rows[-1][0] / 1e9:.2f} GB (x{large / small:.2f} for "
        f"x{rows[-1][0] / rows[0][0]:.1f} the input); targets: >= 0.5x FastWARC, flat memory"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-fastwarc":
        print(json.dumps(child_fastwarc(sys.argv[2:])))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-drarena":
        print(json.dumps(child_drarena(sys.argv[4:], sys.argv[2], int(sys.argv[3]))))
    else:
        sys.exit(main())
