"""LiveWeb on loopback: capture then replay with identical answers, the crawler's protections,
and the Brave provider against a local stub of its API (named a stub: it only speaks Brave's
JSON shape and checks the key header; the real code path under test is ours)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from drarena.errors import DrarenaError
from drarena.live.providers import build_provider, preflight
from drarena.live.web import LiveWeb, LiveWebSettings, check_url
from drarena.search.live import build as build_live
from drarena.web.warc.snapshot import Snapshot

ARTICLE = """<!doctype html><html lang="en"><head><title>Tide tables</title></head><body>
<nav><a href="/menu.html">Menu</a></nav>
<main><h1>Tide tables</h1>
<p>The harbour of Saint-Malo sees a tidal range of up to 13 metres, among the largest in
Europe. Tables are published every year by the hydrographic service.</p>
<p>See <a href="/moon.html">the moon's role</a> and <a href="/same1.html">one copy</a>.</p>
</main></body></html>"""
KEY = "stub-key-5f3a9c"


class ThreadSite:
    """An aiohttp app on 127.0.0.1 in its own thread: LiveWeb's sync calls block the caller,
    so the server must not share the caller's loop."""

    def __init__(self, app: web.Application) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner = web.AppRunner(app, access_log=None)

        async def start() -> int:
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            return int(self.runner.addresses[0][1])

        self.port = asyncio.run_coroutine_threadsafe(start(), self.loop).result()
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()


def site_app(seen: list[dict[str, str]]) -> web.Application:
    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /private/\n")

    async def article(request: web.Request) -> web.Response:
        return web.Response(text=ARTICLE, content_type="text/html")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently("/a.html")

    async def same(request: web.Request) -> web.Response:
        return web.Response(
            text="<html><body><p>" + "same words " * 60 + "</p></body></html>",
            content_type="text/html",
        )

    async def zipped(request: web.Request) -> web.Response:
        body = gzip.compress(ARTICLE.replace("Tide", "Zipped").encode())
        return web.Response(
            body=body,
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"},
        )

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="<p>" + "x" * 50_000 + "</p>", content_type="text/html")

    async def binary(request: web.Request) -> web.Response:
        return web.Response(body=bytes(range(256)), content_type="application/octet-stream")

    async def brave_stub(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        if request.headers.get("X-Subscription-Token") != KEY:
            return web.json_response({"error": "bad key"}, status=401)
        offset = int(request.query["offset"])
        q = request.query["q"]
        results = (
            [
                {
                    "url": f"http://example.test/{q.replace(' ', '-')}/{offset}/{i}",
                    "title": f"<strong>{q}</strong> result {i}",
                    "description": f"about <strong>{q}</strong> &amp; more {i}",
                }
                for i in range(3)
            ]
            if offset < 2
            else []
        )
        return web.json_response({"type": "search", "web": {"results": results}})

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/a.html", article)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/same1.html", same)
    app.router.add_get("/same2.html", same)
    app.router.add_get("/zipped.html", zipped)
    app.router.add_get("/big.html", big)
    app.router.add_get("/data.bin", binary)
    app.router.add_get("/private/x.html", article)
    app.router.add_get("/res/v1/web/search", brave_stub)
    return app


@pytest.fixture()
def site() -> Iterator[tuple[ThreadSite, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    server = ThreadSite(site_app(seen))
    yield server, seen
    server.stop()


def settings(**extra: Any) -> LiveWebSettings:
    return LiveWebSettings(
        **{"allow_private_addresses": True, "per_host_delay_s": 0.0, "timeout_s": 10.0, **extra}
    )


def ticking_clock() -> Any:
    start = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    count = iter(range(1_000_000))
    return lambda: start + timedelta(seconds=next(count))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def warc_bytes(folder: Path) -> bytes:
    """All WARC records decompressed (one gzip member per record)."""
    out = b""
    for path in sorted(folder.glob("*.warc.gz")):
        data = path.read_bytes()
        while data:
            inflater = zlib.decompressobj(31)
            out += inflater.decompress(data)
            data = inflater.unused_data
    return out


def test_capture_replays_identically(
    site: tuple[ThreadSite, list[dict[str, str]]], tmp_path: Path
) -> None:
    server, _ = site
    base = server.base
    urls = [f"{base}/redirect", f"{base}/same1.html", f"{base}/same2.html", f"{base}/zipped.html"]
    capture = tmp_path / "capture"
    with LiveWeb(settings(), capture_dir=capture, clock=ticking_clock(), name="cap") as live:
        assert live.mode == "live"
        fetched = {url: live.fetch(url) for url in urls}
        page = live.page(f"{base}/a.html")
        zipped = live.page(f"{base}/zipped.html")
        with pytest.raises(DrarenaError) as robots:
            live.fetch(f"{base}/private/x.html")
        again = live.fetch(f"{base}/redirect")  # answered from the run's cache
    assert live.close() == capture  # idempotent
    server.stop()

    assert fetched[f"{base}/redirect"].url == f"{base}/a.html"
    assert again == fetched[f"{base}/redirect"]
    assert fetched[f"{base}/same2.html"].revisit and not fetched[f"{base}/same1.html"].revisit
    assert "13 metres" in page.text and page.title == "Tide tables"
    assert "Zipped tables" in zipped.text  # gzip content coding undone
    assert "robots" in str(robots.value) and "\n" not in str(robots.value)
    content = [lk.target_url for lk in page.extract.links if not lk.furniture]
    assert content == [f"{base}/moon.html", f"{base}/same1.html"]

    with Snapshot.open(capture) as snap:
        report = snap.verify()
        assert report.ok, report.problems
        assert snap.manifest.complete and snap.manifest.spec["live"] is True
        assert snap.manifest.spec["settings"]["allow_private_addresses"] is True
        assert snap.manifest.counts.redirects == 1 and snap.manifest.counts.revisits == 1
        assert snap.manifest.counts.robots_blocked == 1
        assert f"{base}/robots.txt" in snap  # the robots.txt fetch is captured too

    with LiveWeb(settings(), replay_from=capture) as replay:
        assert replay.mode == "replay"
        for url in urls:
            assert replay.fetch(url) == fetched[url], url  # every field, WARC position included
        assert replay.page(f"{base}/a.html").text == page.text
        with pytest.raises(DrarenaError) as replayed_robots:
            replay.fetch(f"{base}/private/x.html")
        assert str(replayed_robots.value) == str(robots.value)
        with pytest.raises(DrarenaError, match="not in the capture") as miss:
            replay.fetch(f"{base}/moon.html")
        assert "\n" not in str(miss.value)
    with pytest.raises(DrarenaError, match="not empty"):
        LiveWeb(settings(), capture_dir=capture)


def test_protections(site: tuple[ThreadSite, list[dict[str, str]]], tmp_path: Path) -> None:
    server, _ = site
    with LiveWeb(settings(allow_private_addresses=False), capture_dir=tmp_path / "c") as guarded:
        with pytest.raises(DrarenaError, match="private_address"):
            guarded.fetch(f"{server.base}/a.html")
        with pytest.raises(DrarenaError, match="not http"):
            guarded.fetch("ftp://example.org/file.txt")
        with pytest.raises(DrarenaError, match="not http"):
            check_url("file:///etc/passwd")
    with LiveWeb(settings(max_bytes=1000), capture_dir=tmp_path / "d") as capped:
        big = capped.fetch(f"{server.base}/big.html")
        assert big.truncated and len(big.body) == 1000
        with pytest.raises(DrarenaError, match="not a web page"):
            capped.page(f"{server.base}/data.bin")
        with pytest.raises(DrarenaError, match=r"robots.txt unreachable \(connection_error"):
            capped.fetch(f"http://127.0.0.1:{free_port()}/x.html")
    with Snapshot.open(tmp_path / "d") as snap:
        assert snap.lookup(f"{server.base}/big.html").truncated  # type: ignore[union-attr]
        assert snap.manifest.counts.truncated == 1


@pytest.mark.parametrize("location", ["http://127.0.0.1:99999/robots.txt", "http://[oops/"])
def test_a_robots_txt_redirect_that_is_no_url_ends_its_chain(tmp_path: Path, location: str) -> None:
    """robots.txt redirected to a bad port or to no URL at all: the chain ends there and the
    site's pages are refused in one line, as for a redirect to ftp: (a ValueError escaped
    before, cached for the origin); and check_url names a URL it cannot split."""

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=301, headers={"Location": location})

    async def article(request: web.Request) -> web.Response:
        return web.Response(text=ARTICLE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/a.html", article)
    server = ThreadSite(app)
    try:
        refused = pytest.raises(DrarenaError, match=r"robots: robots.txt redirects .* no http")
        with LiveWeb(settings(), capture_dir=tmp_path / "c") as live, refused:
            live.page(f"{server.base}/a.html")
        with LiveWeb(settings(respect_robots=False), capture_dir=tmp_path / "d") as live:
            assert "Saint-Malo" in live.page(f"{server.base}/a.html").text
    finally:
        server.stop()
    with pytest.raises(DrarenaError, match=r"not a valid URL"):
        check_url("http://[oops/")


def test_threads_share_one_fetch_per_url(
    site: tuple[ThreadSite, list[dict[str, str]]], tmp_path: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    server, _ = site
    urls = [f"{server.base}/a.html", f"{server.base}/same1.html", f"{server.base}/zipped.html"]
    with LiveWeb(settings(), capture_dir=tmp_path / "c") as live, ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda n: live.page(urls[n % 3]).text, range(24)))
    assert len(set(texts)) == 3
    with Snapshot.open(tmp_path / "c") as snap:
        assert snap.manifest.counts.pages == 3
        assert sorted(r.url for r in snap.iter_responses()) == sorted(
            [*urls, f"{server.base}/robots.txt"]
        )


async def test_usable_inside_a_running_loop(site: tuple[ThreadSite, list[dict[str, str]]]) -> None:
    server, _ = site
    with LiveWeb(settings()) as live:  # no capture: `drarena ask`
        assert "13 metres" in live.page(f"{server.base}/a.html").text
        assert live.close() is None


def test_brave_provider_against_stub(
    site: tuple[ThreadSite, list[dict[str, str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, seen = site
    provider = {
        "kind": "brave",
        "args": {"endpoint": f"{server.base}/res/v1/web/search", "count": 3},
    }
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with LiveWeb(settings()) as bare:
        problem = preflight(provider, bare)
        assert problem is not None and "BRAVE_API_KEY" in problem and "\n" not in problem
        with pytest.raises(DrarenaError, match="BRAVE_API_KEY is not set"):
            build_live(tmp_path, tmp_path, web=bare, provider=provider).search("tides", 5)

    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    capture = tmp_path / "brave"
    with LiveWeb(settings(), capture_dir=capture) as live:
        assert preflight(provider, live) is None
        retriever = build_live(tmp_path, tmp_path, web=live, provider=provider)
        hits = retriever.search("tides saint malo", 5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].title == "tides saint malo result 0"
    assert hits[0].snippet == "about tides saint malo & more 0"
    assert hits[3].url.endswith("/1/0")  # the second page, offset=1
    assert hits[0].docid == hits[0].url
    assert len(seen) == 3  # the preflight probe, then offsets 0 and 1
    assert all(h["X-Subscription-Token"] == KEY for h in seen)
    assert seen[-1]["Accept"] == "application/json"
    records = warc_bytes(capture)
    assert KEY.encode() not in records and b"X-Subscription-Token: [redacted]" in records
    assert json.loads((capture / "manifest.json").read_text())["spec"]["providers"] == [
        build_provider(provider).spec()
    ]

    monkeypatch.delenv("BRAVE_API_KEY")  # a replay needs no key and no network
    server.stop()
    with LiveWeb(settings(), replay_from=capture) as replay:
        assert preflight(provider, replay) is None
        again = build_live(tmp_path, tmp_path, web=replay, provider=provider)
        assert again.search("tides saint malo", 5) == hits


def test_rejected_key_and_unreachable_provider(
    site: tuple[ThreadSite, list[dict[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = site
    monkeypatch.setenv("MY_KEY", "wrong")
    brave = {
        "kind": "brave",
        "args": {"endpoint": f"{server.base}/res/v1/web/search", "api_key_env": "MY_KEY"},
    }
    gone = {"kind": "searxng", "args": {"url": f"http://127.0.0.1:{free_port()}"}}
    with LiveWeb(settings()) as live:
        assert preflight(brave, live) == (
            f"brave at {server.base}/res/v1/web/search: HTTP 401: the key was rejected "
            "(key from MY_KEY)"
        )
        line = preflight(gone, live)
        assert line is not None and "unreachable" in line and "\n" not in line
        with pytest.raises(DrarenaError, match="connection_error"):
            build_live(Path("."), Path("."), web=live, provider=gone).search("tides")
        assert preflight({"kind": "bing"}, live) is not None


def test_provider_requests_and_parsing() -> None:
    searx = build_provider(
        {
            "kind": "searxng",
            "args": {
                "url": "http://127.0.0.1:8888/",
                "engines": ["wikipedia", "ddg"],
                "language": "fr",
            },
        }
    )
    request = searx.request("tide tables", 2, with_secrets=True)
    assert request.url == (
        "http://127.0.0.1:8888/search?q=tide+tables&format=json&pageno=2"
        "&engines=wikipedia%2Cddg&language=fr"
    )
    body = json.dumps(
        {
            "results": [
                {"url": "https://a.test/x", "title": "A", "content": "first"},
                {"url": "ftp://b.test/y", "title": "B", "content": "not a web page"},
                {"title": "no url"},
                {"url": "https://c.test/z", "title": "C <b>bold</b>", "content": None},
            ]
        }
    ).encode()
    assert [(r.url, r.title, r.snippet) for r in searx.parse(body)] == [
        ("https://a.test/x", "A", "first"),
        ("https://c.test/z", "C bold", ""),
    ]
    with pytest.raises(DrarenaError, match="not JSON"):
        searx.parse(b"<html>403 Forbidden</html>")
    with pytest.raises(DrarenaError, match="nested too deeply"):  # a RecursionError before
        searx.parse(b"[" * 100_000)
    # one result that is no URL is skipped, not the whole answer (a ValueError before)
    mixed = json.dumps({"results": [{"url": "http://[::1/x"}, {"url": "https://a.test/y"}]})
    assert [r.url for r in searx.parse(mixed.encode())] == ["https://a.test/y"]
    with pytest.raises(DrarenaError, match=r"args\.url"):
        build_provider({"kind": "searxng", "args": {"url": "ftp://x"}})
    with pytest.raises(DrarenaError, match=r"args\.count"):
        build_provider({"kind": "brave", "args": {"count": 50}})
