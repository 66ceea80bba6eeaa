"""Terminal escape injection (issue 38, item 3): text from a page, a model, an agent, a
manifest, a config or a user's path reaches the terminal only through quoting.shown and the
CLI's stream guard, so it cannot set the title, write the clipboard (OSC 52), clear the
screen, reverse the text or forge a line of drarena's.

The sweep runs the commands on inputs holding the issue's payload and checks what they print.
Each test failed before its fix: `drarena agent ask` printed the payload raw.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from drarena.cli import main
from drarena.quoting import TerminalGuard, shown, terminal_text
from drarena.web.warc.manifest import Counts
from drarena.web.warc.writer import Exchange, SnapshotWriter

PAYLOAD = "\u001b]0;PWNED\u0007\u001b]52;c;cHduZWQ=\u0007\u001b[2J\u202eevil\nerror: forged"
# what a terminal acts on: ESC (CSI, OSC), BEL, the one-byte CSI, bidi overrides, separators
ACTED_ON = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
FORGED = re.compile(r"^error: forged", re.M)


def assert_clean(text: str) -> None:
    found = ACTED_ON.search(text)
    assert found is None, f"{found.group()!r} reached the terminal in {text[:400]!r}"
    assert not FORGED.search(text), f"a forged line reached the terminal: {text[:400]!r}"


# --- the function and the guard ------------------------------------------------------------


def test_shown_one_line_escapes_the_payload() -> None:
    line = shown(PAYLOAD, None)
    assert_clean(line)
    assert "\n" not in line and "PWNED" in line and "\\x1b" in line


def test_shown_lines_keeps_lines_and_escapes_the_rest() -> None:
    text = shown("one\ttwo\nthree\rfour\u202e" + PAYLOAD, None, lines=True)
    assert text.startswith("one\ttwo\nthree\\rfour\\u202e")
    assert text.count("\n") == 2  # the report's own line break and the payload's
    assert ACTED_ON.search(text) is None


def test_the_guard_keeps_json_valid_and_equal() -> None:
    value = {"title": "a\u202eb\u0085c\x7f", "text": PAYLOAD}
    raw = json.dumps(value, ensure_ascii=False)
    guarded = terminal_text(raw)
    assert ACTED_ON.search(guarded) is None
    assert json.loads(guarded) == value


def test_the_guard_passes_progress_bars_and_plain_text() -> None:
    import io

    inner = io.StringIO()
    guard = TerminalGuard(inner)
    guard.write("\r 50%|#####     | 5/10\r")
    guard.write("plain é ü 日本\n")
    assert inner.getvalue() == "\r 50%|#####     | 5/10\rplain é ü 日本\n"


# --- the sweep: the commands, given the payload ----------------------------------------------


def hostile_snapshot(folder: Path) -> Path:
    """Pages whose titles and text hold the payload, linked from a hub."""
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "hostile",
        {"seeds": ["http://h.test/p0.html"]},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
    )
    writer.open()
    # what an HTML parser keeps (no C0 controls): a one-byte CSI, a bidi override, a line
    # separator before a forged line
    title = "\x9b2J\u202eevil PWNED\u2028error: forged"
    for n in range(7):
        links = (
            "".join(f"<li><a href='/p{m}.html'>{title} {m}</a></li>" for m in range(1, 7))
            if n == 0
            else ""
        )
        words = f"{title} words about topic {n}. " * 60
        body = (
            f"<html><head><title>{title} {n}</title></head><body><main><h1>{title}</h1>"
            f"<p>{words}</p><ul>{links}</ul></main></body></html>"
        ).encode()
        writer.write_exchange(
            Exchange(
                f"http://h.test/p{n}.html",
                (("Host", "h.test"),),
                200,
                "OK",
                (("Content-Type", "text/html; charset=utf-8"),),
                body,
            )
        )
    writer.close(complete=True, counts=Counts(pages=7, responses=7))
    return folder


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = hostile_snapshot(tmp_path_factory.mktemp("hostile") / "snap")
    assert main(["snapshot", "trees", str(folder), "--count", "1", "--no-progress"]) == 0
    return folder


class _Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible model that answers every question with the payload."""

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # /v1/models
        self._json({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    def do_POST(self) -> None:  # /v1/chat/completions
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        text = f"{PAYLOAD} [1]\n\n[1] http://h.test/p1.html\u001b]52;c;eA==\u0007"
        self._json(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


@pytest.fixture(scope="module")
def stub_model() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_agent_ask_prints_an_answer_that_holds_the_payload_escaped(
    snap: Path, stub_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's recipe: a loopback OpenAI-compatible stub whose answer is the payload."""
    argv = ["agent", "ask", str(snap), "what?", "--agent", "closed_book"]
    code, text = _run([*argv, "--api-base", stub_model], capsys)
    assert code == 0, text
    assert_clean(text)
    assert "PWNED" in text and "| " in text  # shown, escaped, behind the report's gutter


def test_agent_ask_json_is_escaped_and_still_json(
    snap: Path, stub_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["agent", "ask", str(snap), "what?", "--agent", "closed_book", "--json"]
    code, text = _run([*argv, "--api-base", stub_model], capsys)
    assert code == 0, text
    assert_clean(text)
    assert json.loads(text)["report"].startswith(PAYLOAD)


def test_trees_show_prints_page_titles_escaped(
    snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = next((snap / "trees").glob("tree-*.json"))
    for extra in ([], ["--dot"]):
        code, text = _run(["snapshot", "trees", "show", str(tree), *extra], capsys)
        assert code == 0, text
        assert_clean(text)
        assert "PWNED" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", "verify", "NAME"],
        ["snapshot", "extract", "NAME"],
        ["run", "rank", "NAME"],
        ["agent", "ask", "NAME", "q"],
        ["run", "rank", "r", "NAME"],  # argparse echoes the one it does not take
        ["snapshot", "trees", "show", "NAME"],
    ],
)
def test_error_lines_escape_a_users_path(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path (or argument) holding the payload, echoed in an error line."""
    name = str(tmp_path / PAYLOAD)
    try:
        code = main([name if a == "NAME" else a for a in argv])
    except SystemExit as exc:  # argparse's error
        code = int(exc.code or 0)
    out = capsys.readouterr()
    assert code == 2
    assert_clean(out.out + out.err)
    assert "PWNED" in out.err


def test_snapshot_serve_banner_and_a_manifest_name(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The banner printed a manifest's name raw; a name that is not a safe one is now refused
    (item 5), and the refusal shows it escaped."""
    copy = tmp_path / "named"
    shutil.copytree(snap, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["name"] = PAYLOAD
    (copy / "manifest.json").write_text(json.dumps(manifest))
    code, text = _run(["snapshot", "verify", str(copy)], capsys)
    assert code == 2
    assert_clean(text)
    done = subprocess.run(
        [sys.executable, "-m", "drarena", "snapshot", "serve", str(copy), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert_clean(done.stdout + done.stderr)
