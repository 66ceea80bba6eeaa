"""Shared by the frozen-web proxy tests: a tiny snapshot of https and http pages (with a
redirect), and the proxy run on its own event loop in a thread (started once per module)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

from drarena.errors import DrarenaError
from drarena.web.warc.manifest import Counts
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.writer import Exchange, SnapshotWriter
from drarena.webproxy.handlers import HandlerTable
from drarena.webproxy.proxy import RunningProxy, find_mitmdump, frozen_web_proxy

HTML = (("Content-Type", "text/html; charset=utf-8"),)
PAGES: list[tuple[str, int, tuple[tuple[str, str], ...], bytes]] = [
    ("https://docs.example.org/", 200, HTML, b"<html><title>home</title><p>frozen home</p>"),
    ("https://docs.example.org/old", 302, (("Location", "/new"),), b""),
    ("https://docs.example.org/new", 200, HTML, b"<html><title>new</title><p>moved here</p>"),
    (
        "http://plain.example.org/page",
        200,
        (*HTML, ("X-Captured", "yes")),
        b"<html><p>plain http page</p>",
    ),
]


def write_fixture_snapshot(folder: Path) -> Path:
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "proxyfix",
        {"seeds": ["https://docs.example.org/"]},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
    )
    writer.open()
    for url, status, headers, body in PAGES:
        reason = "Found" if status == 302 else "OK"
        host = (("Host", url.split("/")[2]),)
        writer.write_exchange(Exchange(url, host, status, reason, headers, body))
    writer.close(complete=True, counts=Counts())
    return folder


def mitmdump_missing() -> str:
    """Why the proxy cannot run here ('' when it can)."""
    try:
        find_mitmdump()
    except DrarenaError as exc:
        return str(exc)
    return ""


class ProxyThread:
    """The proxy on an event loop of its own, so blocking clients (requests, curl) can use it
    from the test's thread."""

    def __init__(
        self, snapshot: Path, state_dir: Path, handlers: HandlerTable | None = None
    ) -> None:
        self.snapshot, self.state_dir, self.handlers = snapshot, state_dir, handlers
        self.proxy: RunningProxy | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            with Snapshot.open(self.snapshot) as snap:
                async with frozen_web_proxy(snap, self.handlers, state_dir=self.state_dir) as proxy:
                    self.proxy = proxy
                    self._ready.set()
                    await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    def start(self) -> RunningProxy:
        self._thread.start()
        self._ready.wait(120)
        if self._error is not None:
            raise self._error
        assert self.proxy is not None, "the proxy did not start within 120 s"
        return self.proxy

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
