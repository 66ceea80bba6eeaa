"""Loopback HTTP servers: replay of a snapshot, and a static folder for `make snapshot`.

Why replay: a browser or an agent walks the frozen web exactly as captured (status, headers,
body, redirects), and tests re-crawl it to prove a crawl is reproducible. Why the static
server: the default corpus is Debian's Python docs served locally, so `make snapshot` needs no
internet and records a stable origin (127.0.0.1:8765).
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from aiohttp import web

from drarena.errors import DrarenaError
from drarena.web.snapshot import Snapshot

# Hop-by-hop and coding headers: the replayed body is the decoded payload, sent afresh.
_SKIP_REPLAY_HEADERS = frozenset({
    "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
    "proxy-connection", "upgrade", "te", "trailer"})


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
                location = here + location[len(base):]
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
        return web.Response(body=path.read_bytes(),
                            content_type=ctype or "application/octet-stream",
                            charset="utf-8" if ctype and ctype.startswith("text/") else None)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


@asynccontextmanager
async def serving(app: web.Application, host: str = "127.0.0.1", port: int = 0
                  ) -> AsyncIterator[int]:
    """Run `app` on host:port for the duration of the block; yields the bound port."""
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise DrarenaError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    server = site._server
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    try:
        yield int(bound)
    finally:
        await runner.cleanup()


async def serve_forever(app: web.Application, host: str, port: int, banner: str) -> None:
    async with serving(app, host, port) as bound:
        print(banner.format(port=bound), flush=True)
        await asyncio.Event().wait()
