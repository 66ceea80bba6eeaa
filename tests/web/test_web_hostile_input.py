"""Hostile input to the frozen-web commands (issue 14, item 3): each test reproduces a finding
of the probe and failed before its fix.

- an imported WARC named like a file drarena writes (index.cdxj, manifest.json, docs.jsonl)
  is never written through nor left in the way;
- `local_site.apt_package` cannot smuggle options or a local .deb into `apt-get` as root;
- SIGTERM during a crawl leaves a resumable snapshot, as SIGINT does;
- unbounded or non-finite timings in a spec (or live settings) are refused, naming the field;
- a spec or tournament config that is not UTF-8, not YAML or not a mapping is one line;
- the replay server drops a client that never finishes its request head (slowloris).
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest
import yaml
from web_site import CrawlSite, site_spec

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.web.crawling.spec import CrawlSpec, load_spec, parse_spec
from drarena.web.serving.serve import replay_app, serving
from drarena.web.warc.manifest import Counts, load_manifest
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.writer import Exchange, SnapshotWriter


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _warc(folder: Path) -> Path:
    """A small gzip-per-record WARC of two pages (written by drarena's own writer)."""
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "mini",
        {"seeds": []},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
    )
    writer.open()
    for path, body in (
        ("a", b"<html><title>A</title><p>one</p></html>"),
        ("b", b"<html><title>B</title><p>two</p></html>"),
    ):
        writer.write_exchange(
            Exchange(
                f"http://example.org/{path}.html",
                (("Host", "example.org"),),
                200,
                "OK",
                (("Content-Type", "text/html"),),
                body,
            )
        )
    writer.close(complete=True, counts=Counts())
    return folder / "mini-00000.warc.gz"


# --- 1. import: inputs named like drarena's own files ------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "index.cdxj",
        "manifest.json",
        "docs.jsonl",
        "links.jsonl",
        "extract-manifest.json",
        "manifest.json.tmp",
    ],
)
@pytest.mark.parametrize("keep", ["--link", "--copy"])
def test_import_never_writes_through_an_input_named_like_a_snapshot_file(
    tmp_path: Path, name: str, keep: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in" / name
    src.parent.mkdir()
    shutil.copyfile(_warc(tmp_path / "made"), src)
    before = _sha(src)
    out = tmp_path / "out"
    assert (
        main(["snapshot", "import", "t", str(src), "--out", str(out), keep, "--no-progress"]) == 0
    )
    assert _sha(src) == before  # the user's file is untouched
    with Snapshot.open(out) as snap:
        assert snap.verify().ok
        assert len(snap) == 2
        kept = [f.name for f in snap.manifest.warc_files]
    assert kept == ["t-00000.warc.gz"]  # staged under a WARC name, never the input's
    # a later stage writing its own files next to the WARCs cannot reach the input either
    assert main(["extract", str(out), "--no-progress"]) == 0
    assert _sha(src) == before
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()


def test_import_keeps_a_plain_warc_name(tmp_path: Path) -> None:
    """A file already named like a WARC keeps its name (and is hard-linked, bytes shared)."""
    src = _warc(tmp_path / "made")
    out = tmp_path / "out"
    assert (
        main(["snapshot", "import", "t", str(src), "--out", str(out), "--link", "--no-progress"])
        == 0
    )
    assert (out / src.name).samefile(src)


def test_import_never_removes_a_build_folder_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The staging folder `.OUT.importing` is cleared only when an earlier import made it."""
    src = _warc(tmp_path / "made")
    theirs = tmp_path / ".out.importing"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep")
    assert (
        main(["snapshot", "import", "t", str(src), "--out", str(tmp_path / "out"), "--no-progress"])
        == 2
    )
    assert "was not made by drarena" in capsys.readouterr().err
    assert (theirs / "notes.txt").read_text() == "keep"
    (theirs / "notes.txt").unlink()
    (theirs / ".drarena-import").touch()  # as an interrupted import leaves it
    assert (
        main(["snapshot", "import", "t", str(src), "--out", str(tmp_path / "out"), "--no-progress"])
        == 0
    )
    assert not theirs.exists() and not (tmp_path / "out" / ".drarena-import").exists()


# --- 2. local_site.apt_package ------------------------------------------------------------------


@pytest.mark.parametrize(
    "package",
    [
        "-oAPT::Get::AllowUnauthenticated=true",
        "--allow-downgrades",
        "./evil.deb",
        "/tmp/evil.deb",
        "python3-doc=3.11.2-1",
        "Python3-Doc",
        "python3-doc extra",
        "a",
        "",
        "python3-doc\n",
        "python3-doc\n-oX=1",
    ],
)
def test_apt_package_must_be_a_debian_package_name(tmp_path: Path, package: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "x",
                "seeds": ["http://127.0.0.1:8765/"],
                "local_site": {"root": str(tmp_path / "site"), "apt_package": package},
            }
        )
    )
    with pytest.raises(DrarenaError, match=r"field local_site\.apt_package: "):
        load_spec(path)


def test_apt_package_is_passed_after_end_of_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The argv handed to apt-get: options first, then `--`, then the validated name."""
    from drarena.web import commands

    seen: list[list[str]] = []

    class Done:
        returncode = 0

    def fake_run(argv: list[str], **_: object) -> Done:
        seen.append(list(argv))
        (tmp_path / "site").mkdir(exist_ok=True)
        return Done()

    monkeypatch.setattr(commands.os, "geteuid", lambda: 0)
    monkeypatch.setattr(commands.subprocess, "run", fake_run)
    spec = parse_spec(
        {
            "name": "x",
            "seeds": ["http://127.0.0.1:8765/"],
            "local_site": {"root": str(tmp_path / "site"), "apt_package": "python3-doc"},
        },
        "t.yaml",
    )
    assert spec.local_site is not None
    commands._ensure_local_site(spec.local_site.root, spec.local_site.apt_package, True)
    assert seen == [["apt-get", "install", "-y", "--no-install-recommends", "--", "python3-doc"]]


# --- 3. SIGTERM during a crawl ------------------------------------------------------------------


async def test_sigterm_leaves_incomplete_snapshot_that_resumes(tmp_path: Path) -> None:
    """A real SIGTERM to `drarena snapshot` mid-crawl; `--resume` then completes it and
    `drarena verify` passes (before the fix: no manifest, and --resume refused)."""
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
        proc.send_signal(signal.SIGTERM)
        _, err = await proc.communicate()
        assert proc.returncode == 128 + signal.SIGTERM, err.decode()
        assert err.decode().strip().splitlines()[-1].startswith("drarena: terminated")
        partial = load_manifest(out)
        assert not partial.complete and 1 <= partial.counts.pages < 19
        resumed = await asyncio.create_subprocess_exec(
            *cmd, "--resume", stdout=asyncio.subprocess.PIPE
        )
        stdout, _ = await resumed.communicate()
        assert resumed.returncode == 0, stdout.decode()
    manifest = load_manifest(out)
    assert manifest.complete and manifest.counts.pages == 19
    verify = subprocess.run(
        [sys.executable, "-m", "drarena", "verify", str(out)], capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert ": OK:" in verify.stdout and "complete" in verify.stdout


# --- 4. timings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("per_host_delay_s", ".inf"),
        ("per_host_delay_s", ".nan"),
        ("per_host_delay_s", "61"),
        ("per_host_delay_s", "1e300"),
        ("per_host_delay_s", "-1"),
        ("timeout_s", ".inf"),
        ("timeout_s", ".nan"),
        ("timeout_s", "601"),
        ("timeout_s", "0"),
        ("timeout_s", "-.inf"),
    ],
)
def test_spec_timings_are_finite_and_bounded(tmp_path: Path, field: str, value: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: x\nseeds: [http://a.example/]\n{field}: {value}\n")
    with pytest.raises(DrarenaError) as info:
        load_spec(path)
    message = str(info.value)
    assert message.startswith(f"{path}: field {field}: ") and "\n" not in message


def test_spec_timings_at_their_maxima_are_accepted() -> None:
    spec = CrawlSpec(name="x", seeds=("http://a.example/",), per_host_delay_s=60, timeout_s=600)
    assert (spec.per_host_delay_s, spec.timeout_s) == (60, 600)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout_s", float("inf")),
        ("timeout_s", float("nan")),
        ("timeout_s", 601.0),
        ("per_host_delay_s", float("inf")),
        ("per_host_delay_s", float("nan")),
        ("per_host_delay_s", 61.0),
    ],
)
def test_live_web_timings_are_finite_and_bounded(field: str, value: float) -> None:
    from pydantic import ValidationError

    from drarena.live.web import LiveWebSettings

    with pytest.raises(ValidationError) as info:
        LiveWebSettings.model_validate({field: value})
    assert info.value.errors()[0]["loc"] == (field,)


# --- 5. spec and config files that are not UTF-8 YAML mappings -------------------------------

BAD_FILES = [
    (b"name: caf\xe9\nseeds: [http://a.example/]\n", "not UTF-8 text (byte 0xe9 on line 1)"),
    (b"\xff\xfe n\x00a\x00", "not UTF-8"),
    (b"- just\n- a list\n", "must be a mapping of fields (got a list)"),
    (b"just words\n", "must be a mapping of fields (got a string)"),
    (b"", "must be a mapping of fields (got an empty file)"),
    (b"name: [unclosed\n", "line 2 column 1: not valid YAML"),
    (b"name: x\n\tseeds: []\n", "not valid YAML"),
    (b"when: 2001-13-45\n", "not valid YAML (a value cannot be read: month must be in"),
    (b"n: !!int x\n", "not valid YAML (a value cannot be read"),
    (b"x: !!python/object:os.system ls\n", "not valid YAML"),
    (b"[" * 5000, "not valid YAML"),
]


@pytest.mark.parametrize(("raw", "expected"), BAD_FILES)
def test_bad_spec_file_is_one_line_naming_it(tmp_path: Path, raw: bytes, expected: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(raw)
    result = subprocess.run(
        [sys.executable, "-m", "drarena", "snapshot", "crawl", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"drarena: error: {path}:"), result.stderr
    assert expected in lines[0]


@pytest.mark.parametrize(("raw", "expected"), BAD_FILES)
def test_bad_tournament_config_is_one_line_naming_it(
    tmp_path: Path, raw: bytes, expected: str
) -> None:
    from drarena.config.tournament import load_config

    path = tmp_path / "t.yaml"
    path.write_bytes(raw)
    with pytest.raises(DrarenaError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}:") and "\n" not in message and expected in message


def test_folder_given_as_spec_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match="is a folder"):
        load_spec(tmp_path)


# --- 6. replay server: half-open connections ------------------------------------------------


@pytest.fixture(scope="module")
def snap(repo_root: Path) -> Snapshot:
    return Snapshot.open(repo_root / "snapshots" / "pydocs")


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the server closed the connection (EOF or reset) within `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


async def test_replay_drops_a_client_that_never_finishes_its_request(snap: Snapshot) -> None:
    timeout = 0.5
    async with serving(replay_app(snap), header_timeout_s=timeout) as port:
        # a partial request line, then silence
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /library/os.html HTT")
        await writer.drain()
        assert await _closed_within(reader, 3 * timeout)
        writer.close()
        # a slowloris: a header byte every tenth of a second, never the blank line
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /library/os.html HTTP/1.1\r\nHost: x\r\nX-Slow: ")

        async def trickle() -> None:
            for _ in range(100):
                writer.write(b"a")
                await asyncio.sleep(0.1)

        dribble = asyncio.ensure_future(trickle())
        try:
            assert await _closed_within(reader, 3 * timeout)
        finally:
            dribble.cancel()
            await asyncio.gather(dribble, return_exceptions=True)
            writer.close()
        # a client that sends its request answers as before, on the same server
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /library/os.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), 30)
        writer.close()
    stored = snap.lookup("http://127.0.0.1:8765/library/os.html")
    assert stored is not None
    assert response.startswith(b"HTTP/1.1 200") and response.endswith(stored.body)


async def test_replay_caps_request_heads_and_connections(snap: Snapshot) -> None:
    async with serving(replay_app(snap), header_timeout_s=30, max_connections=2) as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        for _, writer in held:
            writer.write(b"GET / HTTP/1.1\r\n")
            await writer.drain()
        await asyncio.sleep(0.2)  # let the server register both
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await _closed_within(reader, 5)  # over the cap: closed at once
        writer.close()
        reader, writer = held[0]
        writer.write(b"X-Big: " + b"a" * 70_000)  # a head over the 64 KiB cap
        assert await _closed_within(reader, 5)
        for _, w in held:
            w.close()
