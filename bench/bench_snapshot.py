"""Benchmark of the frozen web: crawl rate, read rate and lookup latency, each against a peer
measured in the same run. Figures are printed, never asserted.

  crawl   drarena's crawler (BFS, link extraction, WARC writing) against the loopback replay
          server of snapshots/pydocs at per-host concurrency 1, 4, 16, versus a plain
          sequential `warcio.capture_http` + `requests` loop over the same URLs.
  read    Snapshot.iter_responses() (bodies decoded, revisits resolved) versus warcio's
          ArchiveIterator and FastWARC's ArchiveIterator reading the payloads of the same files.
  lookup  Snapshot.lookup(url) latency through the CDXJ (median, p95), versus the same CDXJ
          bisect followed by a warcio read of the record at its offset.

  crawl with --latency-ms 50: the same, but the replay server waits that long before each
          answer (as a real web server far away does), so a crawler that keeps several
          requests in flight gains and one that waits for each in turn does not; the
          sequential loop is measured against the same slow server in the same run.

Usage: .venv/bin/python bench/bench_snapshot.py [--snapshot snapshots/pydocs] [--lookups 2000]
       [--latency-ms 50] [--parts crawl,read,lookup]
Each section prints the load average (1 min) it ran under: the figures are ratios to a peer
measured in the same run because absolute rates follow the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drarena.web.crawling.crawl import Crawler  # noqa: E402
from drarena.web.crawling.spec import parse_spec  # noqa: E402
from drarena.web.warc.snapshot import Snapshot  # noqa: E402
from drarena.web.warc.urls import canonicalize_url, surt  # noqa: E402

ORIGIN = "127.0.0.1:8765"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_replay(snapshot: Path, port: int, latency_ms: float = 0.0) -> subprocess.Popen[bytes]:
    """`drarena snapshot serve`, or (latency_ms > 0) the same app behind a fixed wait per
    response, served by this script in a child process (see serve_delayed)."""
    cmd = [sys.executable, "-m", "drarena", "snapshot", "serve", str(snapshot), "--port", str(port)]
    if latency_ms > 0:
        cmd = [
            sys.executable,
            __file__,
            "--serve-delayed",
            str(snapshot),
            "--port",
            str(port),
            "--latency-ms",
            str(latency_ms),
        ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=REPO)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("replay server did not start")


def serve_delayed(snapshot: Path, port: int, latency_ms: float) -> None:
    """drarena's replay app with an aiohttp middleware that sleeps latency_ms before each
    answer: the wait costs no CPU, like a network round trip to a distant server."""
    from aiohttp import web

    from drarena.web.serving.serve import replay_app, serve_forever

    @web.middleware
    async def delay(request: web.Request, handler: Any) -> web.StreamResponse:
        await asyncio.sleep(latency_ms / 1000)
        return await handler(request)

    with Snapshot.open(snapshot) as snap:
        app = replay_app(snap)
        app.middlewares.append(delay)
        asyncio.run(serve_forever(app, "127.0.0.1", port, "delayed replay on {port}"))


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def crawl_table(snapshot: Path, latency_ms: float) -> None:
    port = free_port()
    replay = start_replay(snapshot, port, latency_ms)
    try:
        with Snapshot.open(snapshot) as snap:
            urls = [
                r.url.replace(ORIGIN, f"127.0.0.1:{port}")
                for r in snap.iter_responses()
                if not r.url.endswith("/robots.txt")
            ]
        with tempfile.TemporaryDirectory() as tmp:
            print(
                f"\n## crawl (loopback replay server, separate process, {latency_ms:g} ms "
                f"added per response; CPU = this process; {load()} at start)"
            )
            pages, size, secs, cpu = sequential_capture(urls, Path(tmp) / "seq.warc.gz")
            base_rate, base_cpu_rate = pages / secs, pages / cpu
            print(
                f"{'crawler':<34}{'pages':>6}{'pages/s':>9}{'MB/s':>7}{'x seq':>7}"
                f"{'pages/CPU-s':>13}{'x seq':>7}"
            )
            print(
                f"{'warcio capture_http + requests':<34}{pages:>6}{base_rate:>9.1f}"
                f"{size / 1e6 / secs:>7.2f}{1.0:>7.2f}{base_cpu_rate:>13.1f}{1.0:>7.2f}"
            )
            for conc in (1, 4, 16):
                pages, size, secs, cpu = crawl_once(port, conc, Path(tmp) / f"c{conc}")
                print(
                    f"{f'drarena, per-host concurrency {conc}':<34}{pages:>6}"
                    f"{pages / secs:>9.1f}{size / 1e6 / secs:>7.2f}"
                    f"{pages / secs / base_rate:>7.2f}{pages / cpu:>13.1f}"
                    f"{pages / cpu / base_cpu_rate:>7.2f}"
                )
            print(f"({load()} at end)")
    finally:
        replay.terminate()
        replay.wait()


def crawl_once(port: int, concurrency: int, out: Path) -> tuple[int, int, float, float]:
    text = (REPO / "corpus" / "pydocs.yaml").read_text().replace(ORIGIN, f"127.0.0.1:{port}")
    data = yaml.safe_load(text)
    data.pop("local_site", None)
    data.update(per_host_concurrency=concurrency, concurrency=2 * concurrency)
    crawler = Crawler(parse_spec(data, "bench"), out, progress=False)
    start, cpu = time.perf_counter(), time.process_time()
    asyncio.run(crawler.run())
    return (
        crawler.counts.pages,
        crawler.counts.bytes,
        time.perf_counter() - start,
        time.process_time() - cpu,
    )


def sequential_capture(urls: list[str], out: Path) -> tuple[int, int, float, float]:
    from warcio.capture_http import capture_http  # noqa: I001 (must precede requests)
    import requests

    total = 0
    start, cpu = time.perf_counter(), time.process_time()
    with capture_http(str(out)), requests.Session() as http:
        for url in urls:
            total += len(http.get(url, allow_redirects=False, timeout=30).content)
    return len(urls), total, time.perf_counter() - start, time.process_time() - cpu


def read_drarena(snapshot: Path) -> tuple[int, int]:
    count = size = 0
    with Snapshot.open(snapshot) as snap:
        for stored in snap.iter_responses():
            count += 1
            size += len(stored.body)
    return count, size


def read_warcio(files: list[Path]) -> tuple[int, int]:
    from warcio.archiveiterator import ArchiveIterator

    count = size = 0
    for path in files:
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit"):
                    count += 1
                    size += len(record.content_stream().read())
    return count, size


def read_fastwarc(files: list[Path]) -> tuple[int, int]:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    count = size = 0
    for path in files:
        with path.open("rb") as fh:
            kinds = WarcRecordType.response | WarcRecordType.revisit
            for record in ArchiveIterator(fh, record_types=kinds, parse_http=True):
                count += 1
                size += len(record.reader.read())
    return count, size


def best_of(runs: int, fn: object, *args: object) -> tuple[tuple[int, int], float]:
    best = float("inf")
    result: tuple[int, int] = (0, 0)
    for _ in range(runs):
        start = time.perf_counter()
        result = fn(*args)  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return result, best


def lookup_latencies(snapshot: Path, n: int) -> tuple[list[float], list[float]]:
    from warcio.archiveiterator import ArchiveIterator

    with Snapshot.open(snapshot) as snap:
        urls = random.Random(0).choices(snap.urls(), k=n)
        ours = []
        for url in urls:
            start = time.perf_counter()
            assert snap.lookup(url) is not None
            ours.append(time.perf_counter() - start)
    lines = (snapshot / "index.cdxj").read_text().splitlines()
    keys = [line.split(" ", 1)[0] for line in lines]
    handles = {p.name: p.open("rb") for p in snapshot.glob("*.warc.gz")}
    peer = []
    for url in urls:
        start = time.perf_counter()
        canonical = canonicalize_url(url)
        key = surt(canonical)
        lo, hi = bisect.bisect_left(keys, key), bisect.bisect_right(keys, key)
        entry = json.loads(lines[hi - 1].split(" ", 2)[2]) if hi > lo else None
        assert entry is not None
        fh = handles[entry["filename"]]
        fh.seek(int(entry["offset"]))
        record = next(iter(ArchiveIterator(fh)))
        record.content_stream().read()
        peer.append(time.perf_counter() - start)
    for fh in handles.values():
        fh.close()
    return ours, peer


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, default=REPO / "snapshots" / "pydocs")
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="also crawl a replay server that waits this long per response",
    )
    parser.add_argument("--parts", default="crawl,read,lookup")
    parser.add_argument("--serve-delayed", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_delayed:
        serve_delayed(args.serve_delayed, args.port, args.latency_ms)
        return
    snapshot: Path = args.snapshot
    files = sorted(snapshot.glob("*.warc.gz"))
    parts = {p.strip() for p in args.parts.split(",")}

    print(
        f"# bench_snapshot on {snapshot} ({sum(f.stat().st_size for f in files) / 1e6:.1f} MB "
        f"of WARC); {load()} on {os.cpu_count()} CPUs"
    )
    if "crawl" in parts:
        crawl_table(snapshot, 0.0)
        if args.latency_ms > 0:
            crawl_table(snapshot, args.latency_ms)
    if "read" in parts:
        print(f"\n## read (payloads of every response and revisit, best of 3; {load()})")
        peers = [
            ("warcio ArchiveIterator", read_warcio, files),
            ("FastWARC ArchiveIterator", read_fastwarc, files),
            ("drarena Snapshot.iter_responses", read_drarena, snapshot),
        ]
        results = {name: best_of(3, fn, arg) for name, fn, arg in peers}
        warcio_secs = results["warcio ArchiveIterator"][1]
        print(f"{'reader':<34}{'records':>8}{'MB':>8}{'MB/s':>9}{'x warcio':>10}")
        for name, ((count, size), secs) in results.items():
            print(
                f"{name:<34}{count:>8}{size / 1e6:>8.1f}{size / 1e6 / secs:>9.1f}"
                f"{warcio_secs / secs:>10.2f}"
            )

    if "lookup" in parts:
        print(f"\n## lookup ({args.lookups} random captured URLs, record read and decoded)")
        ours, peer = lookup_latencies(snapshot, args.lookups)
        print(f"{'method':<34}{'median ms':>10}{'p95 ms':>9}")
        print(
            f"{'drarena Snapshot.lookup':<34}{statistics.median(ours) * 1000:>10.3f}"
            f"{ms(ours, 0.95):>9.3f}"
        )
        print(
            f"{'CDXJ bisect + warcio read':<34}{statistics.median(peer) * 1000:>10.3f}"
            f"{ms(peer, 0.95):>9.3f}"
        )


if __name__ == "__main__":
    main()
