"""The real drarena servers on loopback, as a user starts them, for any area's tests.

Why shared: serve-search (frozen search, SearXNG JSON) and replay-snapshot (pages under their
own origin) back the search, live, arena and drift end-to-end tests alike; one place starts
them on free ports, waits until they answer and stops them.
"""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_app(app: Any) -> tuple[Any, int]:
    """An aiohttp app on a free loopback port: its started runner (the caller awaits
    `runner.cleanup()`) and the port. Why here: the fake model servers of the model, router,
    direct-path and external-agent tests each started theirs with the same five lines."""
    from aiohttp import web

    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve_search_args(snapshot: Path, index_root: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "drarena",
        "search",
        "serve",
        str(snapshot),
        "--index-root",
        str(index_root),
        "--retriever",
        "bm25",
        *extra,
    ]


@contextlib.contextmanager
def serve_search(
    snapshot: Path, index_root: Path, log: Path
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`drarena serve-search` (bm25) on a free port; yields (base URL, process) once /health
    answers (a test may stop the process early to prove it is no longer needed)."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, *serve_search_args(snapshot, index_root, "--port", str(port))],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"serve-search exited {proc.returncode}: {log.read_text()}")
                try:
                    if httpx.get(base + "/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"serve-search not up after 180 s: {log.read_text()}")
                time.sleep(0.5)
            yield base, proc
        finally:
            stop(proc)


@contextlib.contextmanager
def replay_snapshot(snapshot: Path, origin: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """`drarena replay-snapshot` on a free port serving `origin`'s pages; yields (port,
    process)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "drarena",
            "snapshot",
            "serve",
            str(snapshot),
            "--port",
            "0",
            "--origin",
            origin,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", banner)
        if not found:
            pytest.fail(f"replay-snapshot did not start: {banner!r}")
        yield int(found.group(1)), proc
    finally:
        stop(proc)
