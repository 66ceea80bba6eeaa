"""What the proxy reads from its state folder (webproxy.proxy): the state file, bounded, and
the end of mitmdump's log, read from its end (files.read_tail, tested in tests/test_files.py).

Why a file of its own: these need no mitmdump, and test_webproxy_proxy.py is skipped where
mitmproxy is not installed. The state folder is the user's --state-dir, which may hold
anything, and mitmdump's log there is appended to at every start, so it may be any size.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import drarena.webproxy.proxy as proxy
from drarena.webproxy.proxy import ProxyInfo, RunningProxy


def test_a_state_file_over_the_limit_reads_as_no_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state file was decoded whole, however large: one over MAX_STATE_BYTES reads as no
    state yet, as a file cut short does (and a start then waits for the addon's own)."""
    state = tmp_path / "mitmdump-state.json"
    state.write_text('{"port": 8080, "outside_refused": 0, "padding": "' + "x" * 100 + '"}')
    running = RunningProxy(ProxyInfo(0, tmp_path / "ca.pem"), None, state, 0.0)  # type: ignore[arg-type]
    assert running.state()["port"] == 8080
    monkeypatch.setattr(proxy, "MAX_STATE_BYTES", 64)
    assert running.state() == {}
    assert running.outside_connections() == 0


def test_the_log_tail_is_the_end_of_mitmdumps_log(tmp_path: Path) -> None:
    """_tail read the whole log to keep 400 characters; it now reads its end (files.read_tail)
    and keeps the same characters."""
    log = tmp_path / "mitmdump.log"
    log.write_bytes(b"".join(b"line %d of the log\n" % i for i in range(200_000)))
    assert proxy._tail(log) == log.read_text(encoding="utf-8").strip()[-400:]
    assert proxy._tail(log, 7) == "the log"
    assert proxy._tail(tmp_path / "missing.log") == ""
