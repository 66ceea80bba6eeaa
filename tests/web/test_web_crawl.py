"""The crawler against a real local aiohttp site: politeness, failures recorded, determinism,
interruption and resume. Every WARC written must pass `warcio check`."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from web_site import CrawlSite, page, site_spec

from drarena.errors import DrarenaError
from drarena.web.crawling.crawl import Crawler
from drarena.web.crawling.fetch import HostGate
from drarena.web.crawling.spec import CrawlSpec, parse_spec
from drarena.web.serving.serve import replay_app, serving
from drarena.web.warc.manifest import load_manifest
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.warcfile import sha1_b32


def spec_of(port: int, **overrides: object) -> CrawlSpec:
    return parse_spec(site_spec(port, **overrides), "test spec")


def warcio_check(folder: Path) -> None:
    for warc in sorted(folder.glob("*.warc.gz")):
        result = subprocess.run(
            [sys.executable, "-m", "warcio.cli", "check", str(warc)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def record_sequence(folder: Path) -> list[tuple[str, str]]:
    with Snapshot.open(folder) as snap:
        return [
            (r.type, r.header("WARC-Target-URI"))
            for r in snap.iter_records()
            if r.type != "warcinfo"
        ]


async def crawl(spec: CrawlSpec, out: Path) -> Crawler:
    crawler = Crawler(spec, out, progress=False)
    await crawler.run()
    return crawler


async def test_crawl_records_every_outcome(tmp_path: Path) -> None:
    site = CrawlSite()
    async with serving(site.app()) as port:
        crawler = await crawl(spec_of(port), tmp_path / "snap")
    base = f"http://127.0.0.1:{port}"
    manifest = load_manifest(tmp_path / "snap")
    counts = manifest.counts
    assert manifest.complete
    # robots.txt obeyed: the private page is never requested, and counted as blocked
    assert "/private/secret.html" not in site.requests
    assert counts.robots_blocked == 1 and counts.errors["robots"] == 1
    assert counts.errors["redirect_loop"] == 1
    assert counts.errors["too_many_redirects"] == 1
    assert counts.errors["bad_scheme"] == 1
    assert counts.errors["timeout"] == 1
    assert counts.statuses["404"] >= 1 and counts.statuses["500"] == 1
    assert counts.http_errors >= 2
    assert counts.truncated == 1
    # dup2.html repeats dup1.html's payload; so do the identical bodies of the 302s
    assert counts.revisits >= 2
    assert crawler.counts.pages == counts.pages
    # chain/0 -> 1 -> 2 -> 3 followed, then the cap stops it
    chain = [p for p in site.requests if p.startswith("/chain/")]
    assert chain == [f"/chain/{i}" for i in range(4)]
    # fragments and duplicates do not cause refetches; depth 2 pages reached, mailto ignored
    assert Counter(site.requests)["/a.html"] == 2  # once as a page, once via /moved
    assert "/d.html" in site.requests and "/c.html" in site.requests

    with Snapshot.open(tmp_path / "snap") as snap:
        big = snap.lookup(f"{base}/big.html")
        assert big is not None and big.truncated and len(big.body) == 100_000
        binary = snap.lookup(f"{base}/data.bin")
        assert binary is not None and binary.body == bytes(range(256)) * 8
        dup = snap.lookup(f"{base}/dup2.html")
        assert dup is not None and dup.revisit and b"Same body" in dup.body
        assert snap.lookup(f"{base}/boom.html").status == 500  # type: ignore[union-attr]
        # content coding kept on the wire, removed for readers; chunking undone and unlabelled
        gz = snap.lookup(f"{base}/gz.html")
        assert gz is not None and gz.body == page("Gzipped")
        assert gz.header("Content-Encoding") == "gzip" and gz.payload_digest != sha1_b32(gz.body)
        chunked = snap.lookup(f"{base}/chunked.html")
        assert chunked is not None and chunked.body == page("Chunked")
        assert chunked.header("Transfer-Encoding") == ""
        moved = snap.lookup(f"{base}/moved")
        assert moved is not None and moved.location == f"{base}/a.html"
        failures = {f.canonical_url: f.kind for f in snap.iter_failures()}
        assert failures[f"{base}/slow.html"] == "timeout"
        assert failures[f"{base}/private/secret.html"] == "robots"
        assert failures["ftp://example.com/file"] == "bad_scheme"
        assert snap.verify().ok
    warcio_check(tmp_path / "snap")
    await asyncio.sleep(0)


async def test_order_does_not_depend_on_fetch_timing(tmp_path: Path) -> None:
    site = CrawlSite()
    async with serving(site.app()) as port:
        await crawl(spec_of(port, per_host_concurrency=1, concurrency=1), tmp_path / "one")
        await crawl(spec_of(port, per_host_concurrency=8, concurrency=16), tmp_path / "many")
    assert record_sequence(tmp_path / "one") == record_sequence(tmp_path / "many")


async def test_private_addresses_refused_by_default(tmp_path: Path) -> None:
    site = CrawlSite()
    async with serving(site.app()) as port:
        spec = spec_of(
            port,
            allow_private_addresses=False,
            timeout_s=10,
            seeds=[f"http://127.0.0.1:{port}/", f"http://localhost:{port}/"],
            scope={"hosts": ["127.0.0.1", "localhost"]},
        )
        await crawl(spec, tmp_path / "snap")
    assert site.requests == []
    manifest = load_manifest(tmp_path / "snap")
    with Snapshot.open(tmp_path / "snap") as snap:
        refused = sorted(f.url for f in snap.iter_failures() if f.kind == "private_address")
    # robots.txt and the page itself, for each origin; nothing fetched, nothing else recorded
    assert refused == sorted(
        [
            f"http://127.0.0.1:{port}/",
            f"http://127.0.0.1:{port}/robots.txt",
            f"http://localhost:{port}/",
            f"http://localhost:{port}/robots.txt",
        ]
    )
    assert manifest.counts.pages == 2 and manifest.counts.responses == 0
    assert manifest.counts.errors == {"private_address": 2}


async def test_refused_connection_and_private_page_without_robots(tmp_path: Path) -> None:
    site = CrawlSite()
    async with serving(site.app()) as port:
        async with serving(CrawlSite().app()) as closed_port:
            pass  # now nothing listens on closed_port
        spec = spec_of(
            port,
            robots=False,
            allow_private_addresses=False,
            seeds=[f"http://127.0.0.1:{closed_port}/"],
        )
        await crawl(spec, tmp_path / "priv")
        spec = spec_of(port, robots=False, seeds=[f"http://127.0.0.1:{closed_port}/"])
        await crawl(spec, tmp_path / "refused")
    with Snapshot.open(tmp_path / "priv") as snap:
        assert [f.kind for f in snap.iter_failures()] == ["private_address"]
    with Snapshot.open(tmp_path / "refused") as snap:
        assert [f.kind for f in snap.iter_failures()] == ["connection_error"]
    assert load_manifest(tmp_path / "refused").counts.fetch_errors == 1
    warcio_check(tmp_path / "refused")


async def test_interrupted_crawl_is_valid_and_resumes(tmp_path: Path) -> None:
    site = CrawlSite()
    out = tmp_path / "snap"
    async with serving(site.app()) as port:
        spec = spec_of(port, per_host_concurrency=1, concurrency=1)
        await crawl(spec, tmp_path / "full")
        full_requests = list(site.requests)
        site.requests.clear()

        task: asyncio.Task[object] | None = None

        def stop_after_five(page: object, tally: object) -> None:
            if getattr(tally, "pages", 0) == 5 and task is not None:
                task.cancel()

        crawler = Crawler(spec, out, progress=False, on_page=stop_after_five)
        task = asyncio.ensure_future(crawler.run())
        with pytest.raises(asyncio.CancelledError):
            await task
        partial = load_manifest(out)
        assert not partial.complete and partial.counts.pages == 5
        with Snapshot.open(out) as snap:
            assert snap.verify().ok
        assert 5 <= len(site.requests) < len(full_requests)

        with pytest.raises(Exception, match="--resume"):
            await Crawler(spec, out, progress=False).run()
        resumed = Crawler(spec, out, resume=True, progress=False)
        await resumed.run()
        again = await Crawler(spec, out, resume=True, progress=False).run()
    manifest = load_manifest(out)
    assert manifest.complete and again is None  # a complete snapshot is left alone
    assert len(manifest.warc_files) == 2
    full = load_manifest(tmp_path / "full")
    assert manifest.counts == full.counts
    # nothing fetched twice across the interruption (robots.txt aside)
    pages = [p for p in site.requests if p != "/robots.txt"]
    assert sorted(pages) == sorted(p for p in full_requests if p != "/robots.txt")
    with Snapshot.open(out) as snap, Snapshot.open(tmp_path / "full") as ref:
        assert snap.urls() == ref.urls()
        assert snap.verify().ok
    warcio_check(out)


async def test_host_gate_spaces_and_bounds_requests() -> None:
    """Politeness with an injected clock: starts spaced by the delay, at most N at once."""
    now = [0.0]
    starts: list[float] = []
    active = [0, 0]  # current, peak

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds
        await asyncio.sleep(0)

    gate = HostGate(concurrency=2, delay=0.5, clock=lambda: now[0], sleep=fake_sleep)

    async def request() -> None:
        async with gate:
            starts.append(now[0])
            active[0] += 1
            active[1] = max(active[1], active[0])
            await asyncio.sleep(0)
            active[0] -= 1

    await asyncio.gather(*(request() for _ in range(5)))
    assert starts == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert active[1] <= 2


async def test_ctrl_c_leaves_incomplete_snapshot_that_resumes(tmp_path: Path) -> None:
    """A real SIGINT to `drarena snapshot`, then `--resume` through the CLI."""
    import signal

    site = CrawlSite()
    async with serving(site.app()) as port:
        spec = site_spec(
            port, per_host_delay_s=0.15, per_host_concurrency=1, concurrency=1, timeout_s=3
        )
        spec_path = tmp_path / "site.yaml"
        spec_path.write_text(yaml.safe_dump(spec))
        out = tmp_path / "snap"
        cmd = [
            sys.executable,
            "-m",
            "drarena",
            "snapshot",
            str(spec_path),
            "--out",
            str(out),
            "--no-progress",
        ]
        proc = await asyncio.create_subprocess_exec(*cmd, stderr=asyncio.subprocess.PIPE)
        for _ in range(400):
            if len(site.requests) >= 5:
                break
            await asyncio.sleep(0.025)
        proc.send_signal(signal.SIGINT)
        _, err = await proc.communicate()
        assert proc.returncode == 130, err.decode()
        partial = load_manifest(out)
        assert not partial.complete and 1 <= partial.counts.pages < 19
        with Snapshot.open(out) as snap:
            assert snap.verify().ok
        resumed = await asyncio.create_subprocess_exec(
            *cmd, "--resume", stdout=asyncio.subprocess.PIPE
        )
        stdout, _ = await resumed.communicate()
        assert resumed.returncode == 0
    manifest = load_manifest(out)
    assert manifest.complete and manifest.counts.pages == 19
    assert "19 pages" in stdout.decode()
    warcio_check(out)


def test_cli_bad_spec_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nseeds: [http://example.org/]\nrobot: false\n")
    result = subprocess.run(
        [sys.executable, "-m", "drarena", "snapshot", "crawl", str(spec)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"drarena: error: {spec}: field robot: unknown key"


def bad_redirect_site(requests: list[str]) -> web.Application:
    """Redirects a crawler cannot follow: a Location urljoin cannot parse, and one naming
    credentials (canonicalize_url refuses those); /after comes later in the frontier."""

    async def handle(request: web.Request) -> web.StreamResponse:
        requests.append(request.path)
        if request.path == "/":
            return web.Response(
                body=page("Index", "bad", "creds", "after"), content_type="text/html"
            )
        if request.path == "/bad":
            return web.Response(status=302, headers={"Location": "http://[oops/"})
        if request.path == "/creds":
            return web.Response(status=302, headers={"Location": "http://user:pw@127.0.0.1:1/"})
        if request.path == "/after":
            return web.Response(body=page("After"), content_type="text/html")
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


async def test_malformed_redirect_is_a_failure_and_resumes(tmp_path: Path) -> None:
    requests: list[str] = []
    out = tmp_path / "snap"
    async with serving(bad_redirect_site(requests)) as port:
        spec = spec_of(port, per_host_concurrency=1, concurrency=1)
        await crawl(spec, tmp_path / "full")
        requests.clear()

        task: asyncio.Task[object] | None = None

        def stop_after_three(page: object, tally: object) -> None:
            if getattr(tally, "pages", 0) == 3 and task is not None:
                task.cancel()

        task = asyncio.ensure_future(
            Crawler(spec, out, progress=False, on_page=stop_after_three).run()
        )
        with pytest.raises(asyncio.CancelledError):
            await task
        assert "/after" not in requests
        requests.clear()
        await Crawler(spec, out, resume=True, progress=False).run()
    full = load_manifest(tmp_path / "full")
    assert full.complete and full.counts.errors == {"bad_url": 2}
    with Snapshot.open(tmp_path / "full") as snap:
        assert sorted((f.url, f.kind) for f in snap.iter_failures()) == [
            ("http://[oops/", "bad_url"),
            ("http://user:pw@127.0.0.1:1/", "bad_url"),
        ]
        bad = snap.lookup(f"http://127.0.0.1:{port}/bad")
        assert bad is not None and bad.status == 302 and bad.location is None
        # replay answers the 3xx as captured (no 500 for the Location it cannot resolve)
        async with (
            serving(replay_app(snap)) as replay_port,
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{replay_port}/bad", allow_redirects=False) as resp,
        ):
            assert resp.status == 302 and resp.headers["Location"] == "http://[oops/"
    # the resume took every stored outcome (none fetched or recorded twice) and fetched the rest
    assert [p for p in requests if p != "/robots.txt"] == ["/after"]
    resumed = load_manifest(out)
    assert resumed.complete and resumed.counts == full.counts
    with Snapshot.open(out) as snap:
        assert len(list(snap.iter_failures())) == 2
        assert snap.verify().ok
    warcio_check(out)


@pytest.mark.parametrize("resume", [False, True])
async def test_crawl_refuses_a_folder_that_is_not_a_snapshot(tmp_path: Path, resume: bool) -> None:
    """A user's folder is never written into: its index.cdxj and manifest.json-less files
    would be overwritten by the snapshot's. An empty folder is fine."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.cdxj").write_text("my own index\n")
    (mine / "notes.txt").write_text("keep me\n")
    site = CrawlSite()
    async with serving(site.app()) as port:
        spec = spec_of(port, max_depth=0)
        with pytest.raises(DrarenaError, match="exists and is not a snapshot"):
            await Crawler(spec, mine, resume=resume, progress=False).run()
        (tmp_path / "empty").mkdir()
        await crawl(spec, tmp_path / "empty")
    assert sorted(p.name for p in mine.iterdir()) == ["index.cdxj", "notes.txt"]
    assert (mine / "index.cdxj").read_text() == "my own index\n"
    assert site.requests == ["/robots.txt", "/"]
    assert load_manifest(tmp_path / "empty").complete


async def test_a_server_sending_bytes_that_are_not_ascii_in_its_head_is_recorded(
    tmp_path: Path,
) -> None:
    """A reason phrase or header value in latin-1 (a filename in Content-Disposition, an old
    server's own words) reached warcio as a lone surrogate or a non-ASCII character, and the
    crawl stopped with UnicodeEncodeError. They are recorded percent-encoded, as bytes."""
    body = b"<html><body><p>caf\xc3\xa9 page</p></body></html>"
    head = (
        b"HTTP/1.1 200 D\xe9j\xe0 vu\r\nContent-Type: text/html\r\n"
        b"Content-Disposition: inline; filename=caf\xe9.html\r\nX-Odd: \xff\xfe\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
    )

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        out = tmp_path / "snap"
        await crawl(spec_of(port, robots=False, max_pages=1), out)
    finally:
        server.close()
        await server.wait_closed()
    warcio_check(out)
    with Snapshot.open(out) as snap:
        stored = snap.lookup(f"http://127.0.0.1:{port}/")
        assert stored is not None and stored.status == 200 and stored.body == body
        headers = dict(stored.headers)
        assert headers["Content-Disposition"] == "inline; filename=caf%E9.html"
        assert headers["X-Odd"] == "%FF%FE"
