"""The frozen web as an HTTP(S) forward proxy: unmodified clients (Python's requests, curl)
given only the proxy and CA variables get captured pages over HTTP and HTTPS, redirects as
captured, and a marked 404 for anything else; nothing leaves through the proxy.

The proxy (mitmproxy + drarena's backend) starts once for the module."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from webproxy_helpers import ProxyThread, mitmdump_missing, write_fixture_snapshot

from drarena import procs
from drarena.errors import DrarenaError
from drarena.web.warc.snapshot import Snapshot
from drarena.webproxy.backend import MISSING_HEADER
from drarena.webproxy.handlers import MAX_REQUEST_BODY, HandlerTable, WebRequest, WebResponse
from drarena.webproxy.proxy import CA_VARIABLES, RunningProxy, body_limit, frozen_web_proxy

MISSING = mitmdump_missing()
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"no mitmproxy here: {MISSING}")


def echo_search(request: WebRequest) -> WebResponse:
    """A handler as the search-API emulation registers one (answers from its arguments)."""
    q = request.query().get("q", "")
    answer: dict[str, object] = {"query": q, "method": request.method}
    if request.method == "POST":
        answer["form"] = request.form()
    return WebResponse.json_response(answer, kind="search", query=q, urls=("https://x/1",))


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    root = tmp_path_factory.mktemp("webproxy")
    snapshot = write_fixture_snapshot(root / "proxyfix")
    handlers = HandlerTable()
    handlers.register("search.example.net", echo_search)
    runner = ProxyThread(snapshot, root / "state", handlers)
    running = runner.start()
    yield running
    runner.stop()


@pytest.fixture
def session(proxy: RunningProxy, monkeypatch: pytest.MonkeyPatch) -> requests.Session:
    """requests configured by the environment alone, as an unmodified agent is."""
    for name in (*CA_VARIABLES, "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in proxy.info.client_env().items():
        monkeypatch.setenv(name, value)
    return requests.Session()


def test_the_ca_and_state_live_in_the_state_dir_not_the_snapshot(proxy: RunningProxy) -> None:
    snapshot = proxy.frozen.snap.path
    assert proxy.info.ca_cert.is_file()
    assert snapshot not in proxy.info.ca_cert.parents
    assert sorted(p.name for p in snapshot.iterdir()) == [
        "index.cdxj",
        "manifest.json",
        "proxyfix-00000.warc.gz",
    ]


def test_https_page_served_as_captured_with_only_the_ca_variable(
    session: requests.Session, proxy: RunningProxy
) -> None:
    got = session.get("https://docs.example.org/", timeout=30)
    assert got.status_code == 200
    assert got.content == b"<html><title>home</title><p>frozen home</p>"
    assert got.headers["Content-Type"] == "text/html; charset=utf-8"


def test_http_page_keeps_captured_headers(session: requests.Session) -> None:
    got = session.get("http://plain.example.org/page", timeout=30)
    assert got.status_code == 200
    assert got.headers["X-Captured"] == "yes"
    assert got.content == b"<html><p>plain http page</p>"


def test_redirect_as_captured_and_followed(session: requests.Session) -> None:
    first = session.get("https://docs.example.org/old", timeout=30, allow_redirects=False)
    assert (first.status_code, first.headers["Location"]) == (302, "/new")
    followed = session.get("https://docs.example.org/old", timeout=30)
    assert followed.url == "https://docs.example.org/new"
    assert [r.status_code for r in followed.history] == [302]
    assert b"moved here" in followed.content


def test_not_in_snapshot_is_a_marked_404_and_logged(
    session: requests.Session, proxy: RunningProxy
) -> None:
    url = "https://www.example.com/never-captured?x=<b>"
    got = session.get(url, timeout=30)
    assert got.status_code == 404
    assert got.headers[MISSING_HEADER] == "1"
    assert b"Not in the snapshot" in got.content and b"<b>" not in got.content
    logged = [e for e in proxy.frozen.log.entries if e.url.startswith("https://www.example.com/")]
    assert [(e.kind, e.status) for e in logged] == [("missing", 404)]


def test_scheme_fallback_serves_an_http_capture_for_https(session: requests.Session) -> None:
    got = session.get("https://plain.example.org/page", timeout=30)
    assert got.status_code == 200 and got.content == b"<html><p>plain http page</p>"


def test_a_handler_host_answers_before_the_snapshot_and_is_logged_as_search(
    session: requests.Session, proxy: RunningProxy
) -> None:
    got = session.get("https://search.example.net/search?q=frozen+web", timeout=30)
    assert got.json() == {"query": "frozen web", "method": "GET"}
    entry = [e for e in proxy.frozen.log.entries if e.kind == "search"][-1]
    assert (entry.query, entry.urls) == ("frozen web", ("https://x/1",))


def test_a_client_cannot_spoof_the_target_header(session: requests.Session) -> None:
    got = session.get(
        "https://www.example.com/elsewhere",
        headers={"X-Drarena-Target": "https://docs.example.org/"},
        timeout=30,
    )
    assert got.status_code == 404


def test_without_the_ca_https_fails_verification(proxy: RunningProxy) -> None:
    """The CA variable is what makes HTTPS work (the proxy's certificates are its own)."""
    session = requests.Session()
    session.trust_env = False
    with pytest.raises(requests.exceptions.SSLError):
        session.get(
            "https://docs.example.org/",
            proxies={"https": proxy.info.url},
            verify=True,
            timeout=30,
        )


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize(
    ("url", "status", "body"),
    [
        ("https://docs.example.org/new", 200, b"moved here"),
        ("http://plain.example.org/page", 200, b"plain http page"),
        ("https://docs.example.org/old", 200, b"moved here"),  # -L follows the capture
        ("https://nowhere.example.com/", 404, b"Not in the snapshot"),
    ],
)
def test_curl_with_only_the_environment(
    proxy: RunningProxy, url: str, status: int, body: bytes
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), **proxy.info.client_env()}
    done = subprocess.run(
        ["curl", "-sS", "-L", "--max-time", "30", "-w", "\n%{http_code}", url],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    content, _, code = done.stdout.rpartition(b"\n")
    assert int(code) == status and body in content


def test_nothing_went_outside(proxy: RunningProxy) -> None:
    state = proxy.state()
    assert state["outside_refused"] == 0
    assert state["backend_connections"] >= 1


def test_a_post_body_reaches_the_handler_over_http2(proxy: RunningProxy) -> None:
    """Regression: a client speaking HTTP/2 to the proxy (primp, the client of ddgs) sent a
    form POST whose body the backend never saw (no Content-Length on the HTTP/1 hop): the
    body was then parsed as a new request."""
    primp = pytest.importorskip("primp")
    client = primp.Client(proxy=proxy.info.url, ca_cert_file=str(proxy.info.ca_cert))
    got = client.request("POST", "https://search.example.net/search", data={"q": "a b", "b": ""})
    assert got.status_code == 200
    assert got.json() == {"query": "", "method": "POST", "form": {"q": "a b", "b": ""}}


def test_a_request_body_over_the_limit_is_refused_unread(proxy: RunningProxy) -> None:
    """mitmproxy buffers a request body whole before the addon sees it: one declaring more
    than body_limit bytes is refused from its head (413), without waiting for the body, and
    never reaches the backend."""
    limit = body_limit(proxy.frozen.snap)
    assert limit >= MAX_REQUEST_BODY
    before = proxy.frozen.tally.requests
    head = (
        "POST http://search.example.net/search HTTP/1.1\r\nHost: search.example.net\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {limit + 1}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", proxy.info.port), timeout=30) as sock:
        sock.sendall(head.encode())  # and no body: an answer can only come from the head
        status_line = sock.makefile("rb").readline()
    assert status_line.split()[1] == b"413", status_line
    assert proxy.frozen.tally.requests == before


async def test_a_state_dir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    snapshot = write_fixture_snapshot(tmp_path / "proxyfix")
    (tmp_path / "state").write_text("mine")
    with Snapshot.open(snapshot) as snap, pytest.raises(DrarenaError) as err:
        async with frozen_web_proxy(snap, state_dir=tmp_path / "state"):
            pass
    assert (
        str(err.value) == f"{tmp_path / 'state'}: cannot hold the proxy's state (Not a directory)"
    )
    assert (tmp_path / "state").read_text() == "mine"


def _mitmdumps_using(state_dir: Path) -> list[int]:
    """Pids of mitmdump processes started with `state_dir` (this test's own folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"mitmdump" in a for a in argv[:2]) and any(
            str(state_dir).encode() in a for a in argv
        ):
            found.append(int(proc.name))
    return found


def _kill_all(proc: subprocess.Popen[str], state: Path) -> None:
    """A test's cleanup, whatever it asserted: the process it started and any mitmdump left
    serving `state`, so a failing test leaves no server holding a port."""
    import signal

    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in _mitmdumps_using(state):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds mitmdump through /proc")
def test_sigterm_stops_serve_web_and_its_mitmdump(tmp_path: Path) -> None:
    """`kill PID` on serve-web: mitmdump runs in a session of its own, so unless drarena stops
    it, it outlives drarena and keeps the port."""
    import signal

    snapshot = write_fixture_snapshot(tmp_path / "proxyfix")
    state = tmp_path / "state"
    command = [sys.executable, "-m", "drarena", "snapshot", "serve-web", str(snapshot)]
    command += ["--port", "0", "--state-dir", str(state), "--search", "none"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed once mitmdump listens
        assert "frozen web: proxyfix" in banner, banner + proc.communicate()[1]
        assert len(_mitmdumps_using(state)) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        assert _mitmdumps_using(state) == []
    finally:
        _kill_all(proc, state)


# A process that opens the proxy and waits; argv: snapshot, state dir, which guards to keep
# ("both"; "deathsig": no lifeline pipe; "lifeline": no prctl), so each is tested alone too.
PARENT = """
import asyncio, contextlib, signal, sys
from pathlib import Path
from drarena.web.warc.snapshot import Snapshot
from drarena import procs
from drarena.webproxy import proxy

if sys.argv[3] == "lifeline":
    procs.load_prctl = lambda: None
elif sys.argv[3] == "deathsig":
    @contextlib.asynccontextmanager
    async def no_lifeline():
        yield -1
    proxy._lifeline = no_lifeline
signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background

async def main():
    with Snapshot.open(Path(sys.argv[1])) as snap:
        async with proxy.frozen_web_proxy(snap, state_dir=Path(sys.argv[2])):
            print("listening", flush=True)
            await asyncio.sleep(300)

asyncio.run(main())
"""


def _parent_pid(pid: int) -> int:
    stat = (Path("/proc") / str(pid) / "stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])  # after "pid (comm)": state, then ppid


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds mitmdump through /proc")
@pytest.mark.parametrize(
    ("signum", "guards"),
    [
        (signal.SIGTERM, "both"),
        (signal.SIGINT, "both"),
        (signal.SIGKILL, "both"),
        (signal.SIGKILL, "deathsig"),
        (signal.SIGKILL, "lifeline"),
    ],
    ids=["SIGTERM", "SIGINT", "SIGKILL", "SIGKILL-deathsig-only", "SIGKILL-lifeline-only"],
)
def test_mitmdump_dies_with_the_process_that_started_it(
    tmp_path: Path, signum: signal.Signals, guards: str
) -> None:
    """A bench or a tournament killed with SIGTERM (default action: no cleanup runs) or
    SIGKILL took its mitmdump down with it only since proxy._spawn's guards; before, the
    mitmdump, in a session of its own, ran on as an orphan holding its port."""
    if guards == "deathsig" and procs.load_prctl() is None:
        pytest.skip("no prctl here: the lifeline is the only guard")
    snapshot = write_fixture_snapshot(tmp_path / "proxyfix")
    state = tmp_path / "state"
    command = [sys.executable, "-c", PARENT, str(snapshot), str(state), guards]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once mitmdump listens
        assert line == "listening\n", line + proc.communicate(timeout=60)[1]
        children = _mitmdumps_using(state)
        assert len(children) == 1  # alive before the signal: the test cannot pass vacuously
        assert _parent_pid(children[0]) == proc.pid
        proc.send_signal(signum)
        proc.wait(timeout=60)
        if signum != signal.SIGINT:  # SIGINT runs the block's cleanup; these end it at once
            assert proc.returncode == -signum
        deadline = time.monotonic() + 10
        while _mitmdumps_using(state) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _mitmdumps_using(state) == []
    finally:
        _kill_all(proc, state)
