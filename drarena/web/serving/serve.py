"""Loopback HTTP servers: replay of a snapshot, and a static folder for `make snapshot`.

Why replay: a browser or an agent walks the frozen web exactly as captured (status, headers,
body, redirects), and tests re-crawl it to prove a crawl is reproducible. Why the static
server: the default corpus is Debian's Python docs served locally, so `make snapshot` needs no
internet and records a stable origin (127.0.0.1:8765).
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from aiohttp import web

from drarena.errors import DrarenaError
from drarena.web.warc.snapshot import Snapshot

# Hop-by-hop and coding headers: the replayed body is the decoded payload, sent afresh.
_SKIP_REPLAY_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "proxy-connection",
        "upgrade",
        "te",
        "trailer",
    }
)


def default_origin(snap: Snapshot) -> str:
    """Origin of the first seed: request paths on the replay server map onto it."""
    seeds = snap.manifest.spec.get("seeds") or []
    if not seeds:
        raise DrarenaError(f"{snap.path}: manifest spec has no seeds; pass --origin")
    parts = urlsplit(str(seeds[0]))
    return f"{parts.scheme}://{parts.netloc}"


def replay_app(snap: Snapshot, origin: str | None = None) -> web.Application:
    """aiohttp app answering from the snapshot; absolute-form requests pick their own host."""
    base = origin or default_origin(snap)

    async def handle(request: web.Request) -> web.StreamResponse:
        target = request.raw_path
        url = target if target.startswith(("http://", "https://")) else base + target
        stored = snap.lookup(url)
        if stored is None:
            return web.Response(status=404, text=f"not in snapshot {snap.name}: {url}\n")
        headers = [(k, v) for k, v in stored.headers if k.lower() not in _SKIP_REPLAY_HEADERS]
        if stored.location:
            here = f"{request.scheme}://{request.host}"
            location = stored.location
            if location.startswith(base + "/") or location == base:
                location = here + location[len(base) :]
            headers = [(k, location if k.lower() == "location" else v) for k, v in headers]
        response = web.Response(status=stored.status, body=stored.body)
        for key, value in headers:
            response.headers.add(key, value)
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def static_app(root: Path) -> web.Application:
    """Serves files under `root` (directories as index.html); nothing outside it."""
    top = root.resolve()

    async def handle(request: web.Request) -> web.StreamResponse:
        rel = unquote(request.path).lstrip("/")
        path = (top / rel).resolve()
        if path != top and top not in path.parents:
            return web.Response(status=404, text="not found\n")
        if path.is_dir():
            if not request.path.endswith("/"):
                raise web.HTTPMovedPermanently(request.path + "/")
            path = path / "index.html"
        if not path.is_file():
            return web.Response(status=404, text="not found\n")
        ctype, _ = mimetypes.guess_type(path.name)
        return web.Response(
            body=path.read_bytes(),
            content_type=ctype or "application/octet-stream",
            charset="utf-8" if ctype and ctype.startswith("text/") else None,
        )

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


# Limits of every loopback server here (replay, static site): a client that opens a connection
# and never finishes its request head (slowloris), or sends a huge one, is dropped; so is a
# connection over the cap. The replay and static servers take no uploads, so a request body
# counts as head bytes too.
HEADER_TIMEOUT_S = 10.0  # from a connection's first byte (or its opening) to a complete head
MAX_HEAD_BYTES = 64 * 1024
MAX_CONNECTIONS = 256
KEEPALIVE_TIMEOUT_S = 75.0  # an idle keep-alive connection after a response (aiohttp's run_app)
_HEAD_ENDS = (b"\r\n\r\n", b"\n\n")
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _HeadGuard(asyncio.Protocol):
    """aiohttp's protocol for one connection, behind a deadline: bytes of an unfinished
    request head must become a complete head (a blank line) within the timeout and stay under
    the size cap, or the connection is aborted. aiohttp alone waits on such a connection for
    as long as its keep-alive timeout (an hour by default, and not at all in older versions)."""

    def __init__(
        self,
        inner: asyncio.Protocol,
        timeout_s: float,
        max_head: int,
        live: weakref.WeakSet[_HeadGuard],
    ) -> None:
        self.inner, self.timeout_s, self.max_head, self.live = inner, timeout_s, max_head, live
        live.add(self)  # counted from its creation (weakly: a failed accept frees it)
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.pending = 0  # bytes received since the last complete head
        self.tail = b""  # the last bytes, for a blank line split across reads

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._arm()  # a connection that sends nothing at all is dropped too
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        scan = self.tail + data
        end = max(scan.rfind(mark) + len(mark) if mark in scan else -1 for mark in _HEAD_ENDS)
        if end >= 0:  # a head completed; what follows it starts the next one (or a body)
            self.pending = len(scan) - end
            self._disarm()
        else:
            self.pending += len(data)
        self.tail = scan[-3:]
        if self.pending > self.max_head:
            self.drop()
            return
        if self.pending:
            self._arm()
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.live.discard(self)
        self.inner.connection_lost(exc)

    def _arm(self) -> None:
        if self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(self.timeout_s, self.drop)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def drop(self) -> None:
        self.timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()


class _Busy(asyncio.Protocol):
    """A connection over the cap: told 503 and closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(_BUSY)
        transport.close()


@asynccontextmanager
async def serving(
    app: web.Application,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    max_head_bytes: int = MAX_HEAD_BYTES,
    max_connections: int = MAX_CONNECTIONS,
) -> AsyncIterator[int]:
    """Run `app` on host:port for the duration of the block; yields the bound port. Each
    connection must finish each request head within `header_timeout_s` of its first byte
    (or of connecting) and within `max_head_bytes`; at most `max_connections` at once."""
    runner = web.AppRunner(
        app, access_log=None, handler_cancellation=True, keepalive_timeout=KEEPALIVE_TIMEOUT_S
    )
    await runner.setup()
    handlers = runner.server
    assert handlers is not None
    live: weakref.WeakSet[_HeadGuard] = weakref.WeakSet()

    def connection() -> asyncio.Protocol:
        if len(live) >= max_connections:
            return _Busy()
        return _HeadGuard(handlers(), header_timeout_s, max_head_bytes, live)

    loop = asyncio.get_running_loop()
    try:
        server = await loop.create_server(connection, host, port, backlog=128)
    except OSError as exc:
        await runner.cleanup()
        raise DrarenaError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    except OverflowError:  # a port past 65535 (bind's own check)
        await runner.cleanup()
        raise DrarenaError(f"cannot listen on {host}:{port}: ports run from 0 to 65535") from None
    sockets = list(server.sockets)
    bound = sockets[0].getsockname()[1] if sockets else port
    try:
        yield int(bound)
    finally:
        server.close()
        await runner.cleanup()
        for guard in list(live):
            guard.drop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 5)


async def serve_forever(app: web.Application, host: str, port: int, banner: str) -> None:
    async with serving(app, host, port) as bound:
        print(banner.replace("{port}", str(bound)), flush=True)
        await asyncio.Event().wait()
