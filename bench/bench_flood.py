"""Gzip-member floods (issue 38, item 2): wall time and peak RSS of the commands a flood hits.

Builds under /tmp, in a fresh child process each (ru_maxrss of the child):
  body   the issue's recipe: one response whose gzip body is MB MiB of empty 20-byte gzip
         members, imported, then `drarena snapshot extract` timed (the body decoder);
  member a WARC file of one record followed by MB MiB of empty gzip members, imported (the
         scan's resynchronisation after damage);
  whole  a whole-file gzip WARC (two records in its first member) followed by the same
         flood, imported (the rewrite's gzip stream).
Before the fix (drarena 4790579, 2 cores): body 16 MiB 441 s / 196 MB, member over 300 s.

    .venv/bin/python bench/bench_flood.py           # 16 MiB
    .venv/bin/python bench/bench_flood.py --mb 4
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DRARENA = [sys.executable, "-m", "drarena"]


def record(uri: bytes, http: bytes) -> bytes:
    return (
        b"WARC/1.0\r\nWARC-Type: response\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-%012d>\r\n"
        % len(uri)
        + b"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: "
        + uri
        + b"\r\nContent-Type: application/http; msgtype=response\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(http)
        + http
        + b"\r\n\r\n"
    )


def page(body: bytes, coding: str = "") -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    if coding:
        head += b"Content-Encoding: " + coding.encode() + b"\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def build(folder: Path, mb: int) -> dict[str, Path]:
    empties = gzip.compress(b"") * ((mb << 20) // 20)
    plain = page(b"<html><title>t</title><p>hello</p></html>")
    files = {
        "body": gzip.compress(record(b"http://flood.test/f", page(empties, "gzip"))),
        "member": gzip.compress(record(b"http://a.test/1", plain)) + empties,
        "whole": gzip.compress(
            record(b"http://a.test/1", plain) + record(b"http://a.test/22", plain)
        )
        + empties,
    }
    out = {}
    for name, data in files.items():
        out[name] = folder / f"{name}.warc.gz"
        out[name].write_bytes(data)
    return out


def timed(argv: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS of the child in MB, its last line)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert child.stdout is not None
    output = child.stdout.read().decode(errors="replace")
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0
    seconds = time.perf_counter() - start
    last = output.strip().splitlines()[-1:] or [""]
    return seconds, usage.ru_maxrss // 1024, last[0][:100]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=16, help="MiB of empty members (default 16)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="drarena-flood-"))
    try:
        files = build(folder, args.mb)
        print(f"{args.mb} MiB of empty gzip members ({(args.mb << 20) // 20} members)")
        snap = folder / "body-snap"
        seconds, _, _ = timed(
            [*DRARENA, "snapshot", "import", "b", str(files["body"]), "--out", str(snap)]
        )
        seconds, peak, last = timed(
            [*DRARENA, "snapshot", "extract", str(snap), "--no-progress", "--force"]
        )
        print(f"body    extract  {seconds:7.2f} s  peak {peak:4d} MB  {last}")
        for name in ("member", "whole"):
            seconds, peak, last = timed(
                [
                    *DRARENA,
                    "snapshot",
                    "import",
                    name,
                    str(files[name]),
                    "--out",
                    str(folder / f"{name}-snap"),
                    "--no-progress",
                ]
            )
            print(f"{name:7} import   {seconds:7.2f} s  peak {peak:4d} MB  {last}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
