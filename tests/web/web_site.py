"""A small real HTTP site for crawler tests, served by aiohttp on loopback.

It has what a crawler must survive: robots.txt rules, a redirect loop, an endless redirect
chain, a redirect to ftp:, a slow page, 404 and 500, a binary body, a body over the size cap
and two pages with identical payloads. `requests` records every path the site was asked for.
"""

from __future__ import annotations

import asyncio
import gzip
from dataclasses import dataclass, field

from aiohttp import web

SLOW_S = 5.0


def page(title: str, *links: str) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><h1>{title}</h1><p>Text of {title}.</p><ul>{anchors}</ul></body></html>"
    ).encode()


INDEX_LINKS = (
    "a.html",
    "b.html#part",
    "private/secret.html",
    "loop1",
    "chain/0",
    "to-ftp",
    "moved",
    "slow.html",
    "missing.html",
    "boom.html",
    "data.bin",
    "big.html",
    "dup1.html",
    "dup2.html",
    "gz.html",
    "chunked.html",
    "mailto:someone@example.com",
    "javascript:void(0)",
)


@dataclass
class CrawlSite:
    requests: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            path = request.path
            self.requests.append(request.path_qs)
            html = "text/html"
            if path == "/robots.txt":
                return web.Response(text="User-agent: *\nDisallow: /private/\n")
            if path in ("/", "/index.html"):
                return web.Response(body=page("Index", *INDEX_LINKS), content_type=html)
            if path == "/a.html":
                return web.Response(
                    body=page("A", "b.html", "c.html", "a.html#top"), content_type=html
                )
            if path == "/b.html":
                return web.Response(body=page("B", "/a.html", "d.html"), content_type=html)
            if path in ("/c.html", "/d.html", "/private/secret.html"):
                return web.Response(body=page(path), content_type=html)
            if path in ("/dup1.html", "/dup2.html"):
                return web.Response(body=page("Same body"), content_type=html)
            if path == "/gz.html":
                resp = web.Response(body=gzip.compress(page("Gzipped")), content_type=html)
                resp.headers["Content-Encoding"] = "gzip"
                return resp
            if path == "/chunked.html":
                stream = web.StreamResponse(headers={"Content-Type": "text/html"})
                stream.enable_chunked_encoding()
                await stream.prepare(request)
                for part in (page("Chunked")[:50], page("Chunked")[50:]):
                    await stream.write(part)
                await stream.write_eof()
                return stream
            if path == "/loop1":
                raise web.HTTPFound("/loop2")
            if path == "/loop2":
                raise web.HTTPFound("/loop1")
            if path.startswith("/chain/"):
                raise web.HTTPFound(f"/chain/{int(path.rsplit('/', 1)[1]) + 1}")
            if path == "/to-ftp":
                raise web.HTTPFound("ftp://example.com/file")
            if path == "/moved":
                raise web.HTTPMovedPermanently("/a.html")
            if path == "/slow.html":
                await asyncio.sleep(SLOW_S)
                return web.Response(body=page("Slow"), content_type=html)
            if path == "/boom.html":
                return web.Response(status=500, text="server exploded")
            if path == "/data.bin":
                return web.Response(
                    body=bytes(range(256)) * 8, content_type="application/octet-stream"
                )
            if path == "/big.html":
                return web.Response(
                    body=page("Big") + b"<!--" + b"x" * 300_000 + b"-->", content_type=html
                )
            return web.Response(status=404, text="no such page")

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        return app


def site_spec(port: int, **overrides: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "name": "testsite",
        "seeds": [f"http://127.0.0.1:{port}/"],
        "max_pages": 50,
        "max_depth": 2,
        "per_host_delay_s": 0.0,
        "per_host_concurrency": 4,
        "concurrency": 8,
        "max_bytes": 100_000,
        "timeout_s": 2.0,  # the slow page (5 s) times out; nothing else should
        "allow_private_addresses": True,
        "max_redirects": 3,
    }
    spec.update(overrides)
    return spec
