"""Decompression bombs through every decoder path: content codings (gzip, deflate, br) in the
crawler, live mode, the snapshot reader, `extract` and the replay server; a WARC gzip member
that expands hugely; WACZ members and datapackage.json that do.

Each bomb expands to 400 MB (from a few hundred KB, or a few KB when nested in a WARC), and
each test asserts the decoded size is capped, the record marked truncated (or the input
refused in one line naming it), and the peak of Python allocations (tracemalloc: bytes
objects included) stays far below the bomb: under 200 MB. Before the caps every one of these
peaked above 400 MB.
"""

from __future__ import annotations

import asyncio
import json
import threading
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from bomb_files import (
    brotli_zeros,
    deflate_zeros,
    gzip_zeros,
    http_block,
    wacz_member_bomb,
    wacz_overlapping,
    wacz_package_bomb,
    write_member_bomb,
    write_warc,
    write_whole_file_bomb,
)

from drarena.corpus.extract import extract_snapshot, load_docs
from drarena.corpus.page import MAX_PAGE_BYTES
from drarena.errors import DrarenaError
from drarena.web.crawling.crawl import Crawler
from drarena.web.crawling.spec import parse_spec
from drarena.web.serving.serve import replay_app, serving
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.manifest import load_manifest
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.wacz import MAX_DATAPACKAGE_BYTES, WaczPackage
from drarena.web.warc.warcfile import MAX_DECODED_BYTES, HttpMessage, decode_body

BOMB = 400 << 20  # decoded size of every bomb here
PEAK = 200 << 20  # allowed peak of Python allocations while one is handled
PAGE = (
    b"<!DOCTYPE html><html><head><title>Plain</title></head><body><p>Plain page.</p></body></html>"
)

try:
    import brotli  # noqa: F401  (optional: br is decoded only when it is installed)

    CODINGS: tuple[str, ...] = ("gzip", "deflate", "br")
except ImportError:  # pragma: no cover - brotli comes with the environment
    CODINGS = ("gzip", "deflate")


def bomb(coding: str, size: int = BOMB) -> bytes:
    if coding == "gzip":
        return gzip_zeros(size)
    if coding == "deflate":
        return deflate_zeros(size)
    return brotli_zeros(size)


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """Peak bytes allocated by Python inside the block (tracemalloc), in out[0]."""
    out: list[int] = []
    tracemalloc.start()
    try:
        yield out
    finally:
        out.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


@pytest.mark.parametrize("coding", [*CODINGS, "deflate-raw"])
def test_decode_body_stops_at_the_cap(coding: str) -> None:
    entity = deflate_zeros(BOMB, raw=True) if coding == "deflate-raw" else bomb(coding)
    message = HttpMessage(200, "OK", (("Content-Encoding", coding.split("-")[0]),), entity)
    with peak_memory() as peak:
        decoded = decode_body(message)
        small = decode_body(message, 1000)
    assert decoded.truncated and len(decoded.body) == MAX_DECODED_BYTES
    assert decoded.body == bytes(MAX_DECODED_BYTES)
    assert small.truncated and small.body == bytes(1000)
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    whole = decode_body(
        HttpMessage(
            200,
            "OK",
            (("Content-Encoding", coding.split("-")[0]),),
            bomb(coding, 5000) if coding != "deflate-raw" else deflate_zeros(5000, raw=True),
        )
    )
    assert not whole.truncated and whole.body == bytes(5000)  # under the cap: all of it


def bomb_site() -> web.Application:
    """/ links to one bomb per coding and a plain page after them."""
    links = "".join(f'<a href="/{c}.html">{c}</a>' for c in CODINGS)

    async def handle(request: web.Request) -> web.StreamResponse:
        name = request.path.strip("/").removesuffix(".html")
        if request.path == "/":
            return web.Response(
                body=f"<html><body>{links}<a href='/plain.html'>p</a></body></html>".encode(),
                content_type="text/html",
            )
        if request.path == "/plain.html":
            return web.Response(body=PAGE, content_type="text/html")
        if name in CODINGS:
            response = web.Response(body=bomb(name), content_type="text/html")
            response.headers["Content-Encoding"] = name
            return response
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


async def test_crawler_caps_bombs_marks_them_truncated_and_goes_on(tmp_path: Path) -> None:
    cap = 1_000_000  # the spec's max_bytes: each bomb body is ~400 KB raw, 400 MB decoded
    with peak_memory() as peak:
        async with serving(bomb_site()) as port:
            spec = parse_spec(
                {
                    "name": "bombs",
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "allow_private_addresses": True,
                    "per_host_delay_s": 0,
                    "max_bytes": cap,
                },
                "spec",
            )
            crawler = Crawler(spec, tmp_path / "snap", progress=False)
            await crawler.run()
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    counts = load_manifest(tmp_path / "snap").counts
    assert counts.truncated == len(CODINGS) and counts.statuses["200"] == len(CODINGS) + 2
    with Snapshot.open(tmp_path / "snap") as snap:
        assert snap.decode_limit == cap
        for coding in CODINGS:
            stored = snap.lookup(f"http://127.0.0.1:{port}/{coding}.html")
            assert stored is not None and stored.truncated and stored.body == bytes(cap)
        plain = snap.lookup(f"http://127.0.0.1:{port}/plain.html")
        assert plain is not None and plain.body == PAGE and not plain.truncated


class ThreadSite:
    """The bomb site in its own thread: LiveWeb's sync calls block the caller's thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.runner = web.AppRunner(bomb_site(), access_log=None)

        async def start() -> int:
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", 0).start()
            return int(self.runner.addresses[0][1])

        port = asyncio.run_coroutine_threadsafe(start(), self.loop).result()
        self.base = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)


def test_live_mode_caps_a_bomb_and_replays_it_alike(tmp_path: Path) -> None:
    from drarena.live.web import LiveWeb, LiveWebSettings

    settings = LiveWebSettings(
        allow_private_addresses=True, per_host_delay_s=0.0, max_bytes=1_000_000
    )
    site = ThreadSite()
    try:
        with peak_memory() as peak, LiveWeb(settings, capture_dir=tmp_path / "cap") as live:
            fetched = live.fetch(f"{site.base}/gzip.html")
    finally:
        site.stop()
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    assert fetched.truncated and fetched.body == bytes(1_000_000)
    with LiveWeb(settings, replay_from=tmp_path / "cap") as replay:
        again = replay.fetch(f"{site.base}/gzip.html")
    assert (again.body, again.truncated) == (fetched.body, fetched.truncated)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An imported snapshot whose one page is a 400 MB gzip bomb inside a gzip WARC member
    (a WARC of a few KB), next to a plain page."""
    folder = tmp_path_factory.mktemp("nested")
    warc = write_warc(
        folder / "nested.warc.gz",
        [
            ("http://bomb.example/", http_block(gzip_zeros(BOMB), "gzip")),
            ("http://bomb.example/plain.html", http_block(PAGE, "identity")),
        ],
    )
    assert warc.stat().st_size < 16_000
    import_archives("nested", [warc], folder / "snap", ImportOptions(progress=False))
    return folder / "snap"


def test_snapshot_reader_and_extract_cap_a_nested_bomb(nested: Path) -> None:
    with peak_memory() as peak:
        with Snapshot.open(nested) as snap:
            stored = snap.lookup("http://bomb.example/")
            assert stored is not None and stored.truncated
            assert len(stored.body) == MAX_DECODED_BYTES == snap.decode_limit
            del stored
        extract_snapshot(nested, workers=1, force=True, progress=False)
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    docs = {d.url: d for d in load_docs(nested)}
    assert docs["http://bomb.example/"].truncated
    assert docs["http://bomb.example/plain.html"].title == "Plain"
    params = json.loads((nested / "extract-manifest.json").read_text())["params"]
    assert params["max_decoded_bytes"] == MAX_PAGE_BYTES + 1  # all extraction reads


def test_extract_of_many_bombs_holds_no_more_than_honest_pages(tmp_path: Path) -> None:
    """24 bombs of 64 MB each must not cost 24 times the 16 MiB snapshot cap: bodies are
    decoded only as far as extraction reads (4 MiB a page), and only the pages in flight
    are held (extraction streams; an older design held every page's body at once)."""
    entity = http_block(gzip_zeros(64 << 20), "gzip")
    warc = write_warc(
        tmp_path / "many.warc.gz", [(f"http://bomb.example/{i}.html", entity) for i in range(24)]
    )
    import_archives("many", [warc], tmp_path / "snap", ImportOptions(progress=False))
    with peak_memory() as peak:
        extract_snapshot(tmp_path / "snap", workers=1, progress=False)
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    docs = load_docs(tmp_path / "snap")
    assert len(docs) == 24 and all(d.truncated for d in docs)


async def test_replay_server_serves_the_capped_body(nested: Path) -> None:
    size = 0
    with peak_memory() as peak, Snapshot.open(nested) as snap:
        async with (
            serving(replay_app(snap, "http://bomb.example")) as port,
            aiohttp.ClientSession() as client,
            client.get(f"http://127.0.0.1:{port}/") as response,
        ):
            assert response.status == 200
            async for chunk in response.content.iter_chunked(1 << 16):
                size += len(chunk)
    assert size == MAX_DECODED_BYTES
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"


def test_a_warc_member_that_expands_hugely_is_damage_named_by_offset(tmp_path: Path) -> None:
    warc = write_member_bomb(
        tmp_path / "member.warc.gz",
        "http://bomb.example/big",
        BOMB,
        (("http://bomb.example/plain.html", http_block(PAGE, "identity")),),
    )
    import_archives(
        "member", [warc], tmp_path / "snap", ImportOptions(progress=False)
    )  # streamed: fine
    with peak_memory() as peak, Snapshot.open(tmp_path / "snap") as snap:
        pages = [r.url for r in snap.iter_responses()]
        skipped = snap.skipped
        with pytest.raises(
            DrarenaError,
            match=r"member\.warc\.gz: damaged record at offset "
            r"\d+ .*expands past 67108864 bytes",
        ) as err:
            snap.lookup("http://bomb.example/big")
        report = snap.verify()
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    assert "\n" not in str(err.value)
    assert pages == ["http://bomb.example/plain.html"] and skipped == 1
    assert len(report.problems) == 1 and "expands past" in report.problems[0]


def test_import_of_a_whole_file_gzip_skips_a_huge_record_as_damage(tmp_path: Path) -> None:
    """A whole-file gzip is rewritten one member per record: one that would inflate past the
    cap (the reader could not read its member) is streamed past and counted as damage, with
    its offset in the report."""
    warc = write_whole_file_bomb(tmp_path / "whole.warc.gz", BOMB)
    assert warc.stat().st_size < 1_000_000
    with peak_memory() as peak:
        result = import_archives("whole", [warc], tmp_path / "snap", ImportOptions(progress=False))
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    (source,) = result.files
    assert source["kept"] == "rewritten-per-record" and source["damaged_records"] == 1
    assert any("past the 67108864-byte cap" in line for line in source["damage"])
    with Snapshot.open(tmp_path / "snap") as snap:
        assert sorted(r.url for r in snap.iter_responses()) == [
            "http://bomb.example/a.html",
            "http://bomb.example/c.html",
        ]


def test_wacz_datapackage_bomb_is_refused_in_one_line(tmp_path: Path) -> None:
    package = wacz_package_bomb(tmp_path / "package.wacz", BOMB)
    with peak_memory() as peak, pytest.raises(DrarenaError) as err:
        WaczPackage.open(package)
    assert peak[0] < PEAK, f"peak {peak[0] >> 20} MB"
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{package}: datapackage.json: ")
    assert f"cap of {MAX_DATAPACKAGE_BYTES}" in message


def test_wacz_member_bomb_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    package = wacz_member_bomb(tmp_path / "member.wacz", BOMB)
    with pytest.raises(DrarenaError) as err:
        import_archives("w", [package], tmp_path / "snap", ImportOptions(progress=False))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{package}: archive/a.warc: ")
    assert "decompression bomb" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["member.wacz"]  # nothing left
    with (
        WaczPackage.open(package) as wacz,
        pytest.raises(DrarenaError, match=r"archive/a\.warc: .*decompression bomb"),
    ):
        wacz.extract_warc(wacz.warcs[0], tmp_path / "out.warc")  # refused alike
    assert not (tmp_path / "out.warc").exists()


def test_wacz_with_overlapping_members_is_refused(tmp_path: Path) -> None:
    package = wacz_overlapping(tmp_path / "overlap.wacz")
    with pytest.raises(DrarenaError) as err:
        WaczPackage.open(package)
    assert str(err.value) == (
        f"{package}: members archive/a.warc and archive/b.warc overlap "
        "in the zip; refused as a zip bomb"
    )
