"""Drift against a live site whose redirects are not URLs: one page's verdict, never the
run's end; the same verdict offline from the capture; terminal-safe reasons; output paths
checked before any fetching. A two-page snapshot and a loopback site (no network)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.web.warc.manifest import Counts
from drarena.web.warc.writer import Exchange, SnapshotWriter

ORIGIN = "http://127.0.0.1:8765"
PAGES = {
    path: (
        f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
        + "".join(f"<p>Paragraph {i} of {title} holds the value {i * 7}.</p>" for i in range(9))
        + "</main></body></html>"
    ).encode()
    for path, title in (("/", "Home"), ("/a.html", "Alpha"))
}
Handler = Callable[[str], tuple[int, list[tuple[str, str]], bytes]]


def snapshot(out: Path, robots: bool = False) -> Path:
    ticks = iter(range(10**6))
    spec = {"name": out.name, "seeds": [ORIGIN + "/"], "robots": robots, "per_host_delay_s": 0}
    writer = SnapshotWriter(
        out,
        out.name,
        spec,
        {"test": "drift"},
        clock=lambda: datetime.fromtimestamp(1_800_000_000 + next(ticks), UTC),
    )
    writer.open()
    for path, body in PAGES.items():
        headers = (("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body))))
        writer.write_exchange(
            Exchange(ORIGIN + path, (("User-Agent", "t"),), 200, "OK", headers, body)
        )
    writer.close(complete=True, counts=Counts(pages=len(PAGES)))
    return out


@pytest.fixture
def site() -> Iterator[Callable[[Handler], int]]:
    servers: list[ThreadingHTTPServer] = []

    def start(handle: Handler) -> int:
        class Answer(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = handle(self.path)
                self.send_response(status)
                for name, value in [*headers, ("Content-Length", str(len(body)))]:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def redirecting(location: str, at: str = "/a.html") -> Handler:
    def handle(path: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if path == at:
            return 301, [("Location", location)], b""
        if path in PAGES:
            return 200, [("Content-Type", "text/html")], PAGES[path]
        return 404, [], b"no"

    return handle


def drift(snap: Path, port: int, *more: str) -> list[str]:
    return [
        "drift", "snapshot", str(snap), "--no-progress", "--allow-private",
        "--connect-to", f"127.0.0.1:8765=127.0.0.1:{port}", *more,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://[oops/", "bad_url: redirect to malformed URL http://[oops/"),
        ("http://127.0.0.1:99999/x", "bad_url: redirect to malformed URL http://127.0.0.1:99999/x"),
    ],
)
def test_a_redirect_that_is_no_url_is_that_pages_verdict_live_and_offline(
    tmp_path: Path,
    site: Callable[[Handler], int],
    capsys: pytest.CaptureFixture[str],
    location: str,
    reason: str,
) -> None:
    snap, capture = snapshot(tmp_path / "snap"), tmp_path / "capture"
    assert main(drift(snap, site(redirecting(location)), "--capture", str(capture))) == 0
    live = capsys.readouterr().out
    assert f"unchecked  {ORIGIN}/a.html  {reason}" in live
    assert main(["drift", "snapshot", str(snap), "--against", str(capture), "--no-progress"]) == 0
    assert f"unchecked  {ORIGIN}/a.html  {reason}" in capsys.readouterr().out


def test_a_robots_txt_redirect_that_is_no_url_imposes_nothing(
    tmp_path: Path, site: Callable[[Handler], int], capsys: pytest.CaptureFixture[str]
) -> None:
    snap = snapshot(tmp_path / "snap", robots=True)  # the live fetch then reads robots.txt
    port = site(redirecting("http://[oops/", at="/robots.txt"))
    assert main(drift(snap, port)) == 0
    assert "2 pages: 0 gone, 0 redirected, 0 changed, 0 unchecked, 2 unchanged" in (
        capsys.readouterr().out
    )


def test_control_characters_from_a_server_never_reach_the_terminal(
    tmp_path: Path, site: Callable[[Handler], int], capsys: pytest.CaptureFixture[str]
) -> None:
    snap = snapshot(tmp_path / "snap")
    assert main(drift(snap, site(redirecting("ftp://x/a\x1b]0;TITLE\x07\x1b[31mRED")))) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "ftp://x/a?]0;TITLE??[31mRED" in out


@pytest.mark.parametrize("kind", ["folder", "html", "capture-file", "page-not-drifts"])
def test_output_paths_are_checked_before_any_fetch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    snap = snapshot(tmp_path / "snap")
    taken = tmp_path / "taken"
    taken.mkdir()
    (tmp_path / "afile").write_text("mine", encoding="utf-8")
    (tmp_path / "afile.html").write_text("a run's report.html", encoding="utf-8")
    option = {
        "folder": ["--json", str(taken)],
        "html": ["--json", str(tmp_path / "out" / "d.html")],
        "capture-file": ["--capture", str(tmp_path / "afile")],
        # the page beside OUT.json would replace a page drift did not write
        "page-not-drifts": ["--json", str(tmp_path / "afile.json")],
    }[kind]
    assert main(drift(snap, 9, *option)) == 2  # port 9: nothing answers, nothing is asked
    err = capsys.readouterr().err.strip()
    assert err.startswith("drarena: error: --") and "\n" not in err
    assert (tmp_path / "afile").read_text() == "mine" and not (tmp_path / "out").exists()
    assert (tmp_path / "afile.html").read_text() == "a run's report.html"
    assert not (tmp_path / "afile.json").exists()


@pytest.mark.parametrize(
    ("complete", "kind", "expected"),
    [
        (False, "drift-capture", "holds a drift capture that was interrupted (marked incomplete)"),
        (True, "drift-capture", "holds an earlier drift capture; give a new folder"),
        (True, "crawl", "folder exists and holds a snapshot; give a new folder"),
    ],
)
def test_a_capture_folder_in_use_says_what_it_holds_and_is_kept(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    complete: bool,
    kind: str,
    expected: str,
) -> None:
    """A capture cut short (Ctrl-C) leaves a snapshot marked incomplete; the rerun said only
    "folder exists and is not empty". It now says what the folder holds, and leaves it."""
    snap, capture = snapshot(tmp_path / "snap"), tmp_path / "capture"
    writer = SnapshotWriter(capture, "capture", {"kind": kind}, {"test": "drift"})
    writer.open()
    writer.close(complete=complete, counts=Counts())
    before = {p.name: p.read_bytes() for p in capture.iterdir()}
    assert main(drift(snap, 9, "--capture", str(capture))) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"drarena: error: --capture {capture}: ")
    assert expected in err and "\n" not in err
    assert {p.name: p.read_bytes() for p in capture.iterdir()} == before


def test_a_run_report_that_is_not_utf8_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`drift --run` splices its section into the run's report.html: one that was not UTF-8
    stopped it with a UnicodeDecodeError traceback after drift.json and drift.html were
    written. It is read first, and refused in one line naming it."""
    import json

    from drarena.web.warc.snapshot import Snapshot

    snap = snapshot(tmp_path / "snap")
    run = tmp_path / "run"
    run.mkdir()
    with Snapshot.open(snap) as opened:
        header = {"snapshot_fingerprint": opened.fingerprint, "config": {"name": "r"}}
    (run / "run.json").write_text(json.dumps(header), encoding="utf-8")
    (run / "matches.jsonl").write_text("", encoding="utf-8")
    (run / "report.html").write_bytes(b"<html><body>\xff\xfe</body></html>")
    args = ["drift", "snapshot", str(snap), "--against", str(snap), "--run", str(run)]
    assert main([*args, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"drarena: error: {run / 'report.html'}:1: not UTF-8") and "\n" not in err
    assert sorted(p.name for p in run.iterdir()) == ["matches.jsonl", "report.html", "run.json"]
