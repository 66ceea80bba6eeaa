"""Replay of the committed snapshot: byte-identical bodies, redirects, 404s, and a re-crawl of
the replay server that yields the same payload digests as the committed crawl."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
import yaml

from drarena.web.crawling.crawl import Crawler
from drarena.web.crawling.spec import parse_spec
from drarena.web.serving.serve import replay_app, serving
from drarena.web.warc.snapshot import Snapshot

BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def snap(repo_root: Path) -> Snapshot:
    return Snapshot.open(repo_root / "snapshots" / "pydocs")


async def test_replay_serves_captures_as_stored(snap: Snapshot) -> None:
    async with serving(replay_app(snap)) as port, aiohttp.ClientSession() as http:
        here = f"http://127.0.0.1:{port}"
        for path in ("/library/os.html", "/tutorial/index.html", "/howto/"):
            stored = snap.lookup(BASE + path)
            assert stored is not None
            async with http.get(here + path) as resp:
                assert resp.status == stored.status
                assert await resp.read() == stored.body  # byte-identical payload
                assert resp.headers["Content-Type"] == stored.header("Content-Type")
        async with http.get(here + "/howto", allow_redirects=False) as resp:
            assert resp.status == 301
            assert resp.headers["Location"] in (here + "/howto/", "/howto/")
        async with http.get(here + "/howto") as resp:  # following the redirect stays local
            assert resp.status == 200 and str(resp.url) == here + "/howto/"
        async with http.get(here + "/library/not-captured.html") as resp:
            assert resp.status == 404


async def test_recrawl_of_replay_gives_same_payload_digests(
    snap: Snapshot, repo_root: Path, tmp_path: Path
) -> None:
    async with serving(replay_app(snap)) as port:
        text = (repo_root / "corpus" / "pydocs.yaml").read_text()
        data = yaml.safe_load(text.replace("127.0.0.1:8765", f"127.0.0.1:{port}"))
        data.pop("local_site")
        spec = parse_spec(data, "pydocs (replay)")
        await Crawler(spec, tmp_path / "again", progress=False).run()

    def digests(s: Snapshot) -> dict[str, str]:
        return {
            urlsplit(r.url).path: r.payload_digest
            for r in s.iter_responses()
            if not r.url.endswith("/robots.txt")
        }

    with Snapshot.open(tmp_path / "again") as again:
        original = digests(snap)
        assert digests(again) == original
        assert again.manifest.counts.pages == snap.manifest.counts.pages
        assert len(original) >= 250


async def test_replay_command_serves_fixture(snap: Snapshot, repo_root: Path) -> None:
    """`drarena replay-snapshot SNAPSHOT --port 0` as a user runs it."""
    import asyncio
    import re
    import sys

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "drarena",
        "replay-snapshot",
        str(snap.path),
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        cwd=repo_root,
    )
    try:
        assert proc.stdout is not None
        banner = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", banner)
        assert match, banner
        stored = snap.lookup(BASE + "/tutorial/classes.html")
        assert stored is not None
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{match.group(1)}/tutorial/classes.html") as resp,
        ):
            assert resp.status == 200 and await resp.read() == stored.body
    finally:
        proc.terminate()
        await proc.wait()


@pytest.mark.parametrize("port", [70000, -1])
async def test_a_port_out_of_range_is_one_line(snap: Snapshot, port: int) -> None:
    """bind() raises OverflowError, not OSError, for a port past 65535."""
    from drarena.errors import DrarenaError

    with pytest.raises(DrarenaError) as err:
        async with serving(replay_app(snap), "127.0.0.1", port):
            pass
    assert str(err.value) == f"cannot listen on 127.0.0.1:{port}: ports run from 0 to 65535"
