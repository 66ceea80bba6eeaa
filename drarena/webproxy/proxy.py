"""The frozen-web proxy as one context manager: backend + mitmdump + a CA, and the client env.

`frozen_web_proxy(snap, handlers, state_dir=...)` starts drarena's backend (backend.py) on a
loopback port, then `mitmdump` (mitmproxy, from its own virtual environment) with the
addon in mitm_addon.py, listening on 127.0.0.1. mitmproxy generates its certificate
authority in `state_dir/ca/` on first start (kept and reused there: a run folder or a working
folder, never the snapshot). `ProxyInfo.client_env()` is what an unmodified agent needs:
HTTP(S)_PROXY in both cases, and the CA for OpenSSL, requests, curl and Node.

mitmdump never outlives the process that started it, however that process ends (see
`_spawn`): a bench or a tournament killed with SIGTERM or SIGKILL takes its proxy with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from drarena.errors import DrarenaError
from drarena.files import open_append, own_folder, read_bounded, read_tail
from drarena.procs import die_with_parent
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.warcfile import MAX_DECODED_BYTES
from drarena.webproxy.backend import FrozenWeb, ProxyTally, backend
from drarena.webproxy.handlers import MAX_REQUEST_BODY, HandlerTable

MITMDUMP_ENV = "DRARENA_MITMDUMP"
PROXY_VENV = ".venv-proxy"  # `make setup-proxy`: mitmproxy with its own pinned dependencies
CA_CERT_NAME = "mitmproxy-ca-cert.pem"  # mitmproxy's name for the CA certificate (PEM)
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
ADDON = Path(__file__).with_name("mitm_addon.py")
# Every proxy of this process adds its counts here when it stops; a run records the difference
# between its start and its end (drarena.runs.execute: run.json's `web_proxy`).
TALLY = ProxyTally()
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
# The state file is in the user's --state-dir, which may hold anything, so it is read bounded.
# Why 64 MiB: the addon writes {"port", "outside_refused", "backend_connections"}, under
# 200 bytes however much is crawled or served; the project's bound for small files is far
# above it. A larger one reads as no state yet, like a file cut short.
MAX_STATE_BYTES = 64 << 20


def find_mitmdump() -> str:
    """$DRARENA_MITMDUMP, else .venv-proxy/bin/mitmdump beside drarena's venv or checkout,
    else mitmdump on PATH; a clear error naming the fix otherwise."""
    explicit = os.environ.get(MITMDUMP_ENV)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise DrarenaError(f"{MITMDUMP_ENV}={explicit}: not an executable file")
        return explicit
    roots = [Path(sys.prefix).parent, Path(__file__).resolve().parents[2]]
    for root in roots:
        candidate = root / PROXY_VENV / "bin" / "mitmdump"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("mitmdump")
    if found:
        return found
    raise DrarenaError(
        "mitmdump not found: `make setup-proxy` installs mitmproxy into .venv-proxy "
        f"(its pins conflict with drarena's), or set {MITMDUMP_ENV} to a mitmdump executable"
    )


@dataclass(frozen=True, slots=True)
class ProxyInfo:
    """Where the proxy listens and the CA certificate clients must trust."""

    port: int
    ca_cert: Path
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client_env(self, direct: Iterable[tuple[str, int]] = ()) -> dict[str, str]:
        """Variables that send an unmodified client through the proxy and make it trust the
        CA. `direct`: loopback (host, port) services the agent reaches without the proxy
        (its model server), listed in NO_PROXY as host:port (requests and httpx honour the
        port; a captured 127.0.0.1 page on another port still goes through the proxy)."""
        env = {name: self.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
        env |= {name.lower(): value for name, value in env.items()}
        no_proxy = ",".join(f"{h}:{p}" for h, p in direct)
        env["NO_PROXY"] = env["no_proxy"] = no_proxy
        env |= {name: str(self.ca_cert) for name in CA_VARIABLES}
        return env


@dataclass
class RunningProxy:
    """A started proxy: its address, the backend's log, and mitmproxy's counters."""

    info: ProxyInfo
    frozen: FrozenWeb
    state_path: Path
    started_s: float  # seconds from the call to a listening proxy

    def state(self) -> dict[str, Any]:
        try:  # DrarenaError: missing, unreadable or larger than MAX_STATE_BYTES
            value = json.loads(read_bounded(self.state_path, MAX_STATE_BYTES).decode("utf-8"))
        except (DrarenaError, ValueError, RecursionError):  # RecursionError: nested too deep
            return {}
        return value if isinstance(value, dict) else {}

    def outside_connections(self) -> int:
        """Upstream connections mitmproxy tried toward anything but drarena's backend (each
        refused; zero when the setup is right)."""
        return int(self.state().get("outside_refused", 0))


def body_limit(snap: Snapshot) -> int:
    """mitmproxy's `body_size_limit`: without one it reads a request body whole into memory,
    however large, before the addon hands it to the backend (which takes MAX_REQUEST_BODY
    and answers 413 past it). mitmproxy 11 applies the option to responses as well (a larger
    one becomes a 502), so it must also pass the largest body the backend sends: a capture,
    decoded up to the snapshot's decode limit, or a search answer (a few MB at most)."""
    return max(MAX_REQUEST_BODY, MAX_DECODED_BYTES, snap.decode_limit)


def mitmdump_argv(
    exe: str,
    port: int,
    confdir: Path,
    backend_port: int,
    state: Path,
    max_body: int,
    lifeline: int = -1,
) -> list[str]:
    """`lifeline`: the descriptor of the pipe whose end of file tells the addon that drarena
    is gone (-1: none; see _spawn)."""
    return [
        exe,
        "--quiet",
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        f"confdir={confdir}",
        "--set",
        "connection_strategy=lazy",  # a CONNECT opens nothing upstream
        "--set",
        "upstream_cert=false",  # certificates are made from the name asked, never fetched
        "--set",
        "onboarding=false",
        "--set",
        "http3=false",
        "--set",
        "termlog_verbosity=warn",
        "--set",
        f"body_size_limit={max_body}",  # bytes; a bigger request is a 413, never buffered
        "-s",
        str(ADDON),
        "--set",
        f"drarena_backend=127.0.0.1:{backend_port}",
        "--set",
        f"drarena_state={state}",
        "--set",
        f"drarena_lifeline={lifeline}",
    ]


async def _spawn(argv: list[str], log: IO[bytes], lifeline: int) -> asyncio.subprocess.Process:
    """Start mitmdump so that it cannot outlive this process.

    Why: mitmdump runs in a session of its own (a Ctrl-C in the terminal reaches drarena,
    which then stops it in order), so nothing else stops it when drarena ends without
    running frozen_web_proxy's cleanup: the default action of SIGTERM (`kill`, a CI
    timeout, a bench's timer), SIGKILL, a crash. It was then left running as an orphan,
    holding its port. Two guards, as neither covers every case alone:

    - Linux's parent-death signal (drarena.procs.die_with_parent, set in the child before
      exec): the kernel sends mitmdump SIGTERM when drarena dies, however it dies, even while
      mitmdump is still starting. Linux ties it to the thread that started the child (here
      the event loop's thread, which runs until the proxy's block has ended).
    - A lifeline pipe, on any POSIX system: mitmdump holds the read end (`lifeline`), only
      this process the write end (os.pipe's descriptors are closed at exec: no other child
      gets them), so the pipe reaches end of file when this process is gone and the addon
      (mitm_addon.py) shuts mitmdump down. It needs no prctl, but needs mitmdump running.
    """
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        pass_fds=(lifeline,) if lifeline >= 0 else (),
        preexec_fn=die_with_parent(),
    )


def _tail(path: Path, chars: int = 400) -> str:
    """The end of mitmdump's log (appended to at every start, so any size), read from its
    end only (files.read_tail)."""
    return read_tail(path).strip()[-chars:]


@asynccontextmanager
async def _lifeline() -> AsyncIterator[int]:
    """The read end of a pipe for mitmdump (-1 off POSIX: no descriptors to pass). This
    process writes nothing to it and holds the write end until the block ends (see _spawn)."""
    if os.name != "posix":
        yield -1
        return
    read_end, write_end = os.pipe()
    try:
        yield read_end
    finally:
        os.close(read_end)
        os.close(write_end)


@asynccontextmanager
async def frozen_web_proxy(
    snap: Snapshot,
    handlers: HandlerTable | None = None,
    *,
    state_dir: Path,
    port: int = 0,
    mitmdump: str | None = None,
) -> AsyncIterator[RunningProxy]:
    """Run the proxy for the duration of the block. `state_dir` holds the CA (`ca/`, reused
    if present), mitmdump's log and its state file; it must not be the snapshot folder."""
    began = time.monotonic()
    if state_dir.resolve() == snap.path.resolve() or snap.path.resolve() in (
        state_dir.resolve().parents
    ):
        raise DrarenaError(f"{state_dir}: the proxy's CA and logs never go in the snapshot")
    exe = mitmdump or find_mitmdump()
    confdir = state_dir / "ca"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # --state-dir names a file (or a link to one)
        raise DrarenaError(
            f"{state_dir}: cannot hold the proxy's state (Not a directory)"
        ) from None
    except OSError as exc:
        raise DrarenaError(f"{state_dir}: cannot hold the proxy's state ({exc.strerror})") from None
    own_folder(confdir)  # the CA's key: never written through a link
    state = state_dir / "mitmdump-state.json"
    state.unlink(missing_ok=True)  # our own file from an earlier start
    log_path = state_dir / "mitmdump.log"
    frozen = FrozenWeb(snap, handlers)
    async with backend(frozen) as backend_port, _lifeline() as lifeline:
        argv = mitmdump_argv(exe, port, confdir, backend_port, state, body_limit(snap), lifeline)
        with open_append(log_path, "ab") as log:
            process = await _spawn(argv, log, lifeline)
        running = RunningProxy(ProxyInfo(0, confdir / CA_CERT_NAME), frozen, state, 0.0)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not running.state().get("port"):
                if process.returncode is not None:
                    raise DrarenaError(
                        f"mitmdump exited with status {process.returncode} at start "
                        f"({log_path}): {_tail(log_path)!r}"
                    )
                if time.monotonic() > deadline:
                    raise DrarenaError(f"mitmdump did not start within {START_TIMEOUT_S:g} s")
                await asyncio.sleep(0.05)
            info = ProxyInfo(int(running.state()["port"]), confdir / CA_CERT_NAME)
            if not info.ca_cert.is_file():
                raise DrarenaError(f"{info.ca_cert}: mitmproxy wrote no CA certificate")
            yield RunningProxy(info, frozen, state, time.monotonic() - began)
        finally:
            frozen.tally.outside_connections = running.outside_connections()
            TALLY.add(frozen.tally)
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                    await process.wait()
