"""A frozen tournament with a command agent: it plays inside its own network namespace and
run.json says so. The run is real (a loopback site frozen with the real LiveWeb, the real
tournament); only the Examiner and the in-process agent are the scripted backend (control
flow only)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "arena"))
from agent_helpers import DIAL_TEST_NET
from arena_live_site import frozen_site, scripted_models
from runconfig import scripted_config, scripted_options

from drarena.agents import sandbox
from drarena.cli import main
from drarena.config.tournament import parse_config
from drarena.ledger.folder import RunDir
from drarena.runs.execute import execute

NETNS = sandbox.probe()


def proxy_installed() -> bool:
    from drarena.errors import DrarenaError
    from drarena.webproxy.proxy import find_mitmdump

    try:
        find_mitmdump()
    except DrarenaError:
        return False
    return True


AGENT = (
    "import errno, json, os, sys\nrequest = json.load(sys.stdin)\nDIAL_TIMEOUT_S = 20\n"
    + DIAL_TEST_NET
    + """
def peek(path):
    try:
        with open(path, "rb") as f:
            return "read %d bytes" % len(f.read())
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc))
def unmount(path):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(path.encode(), 2) == 0:  # MNT_DETACH
        return "unmounted"
    return errno.errorcode.get(ctypes.get_errno(), "?")
private = json.loads(os.environ["PRIVATE"])
seen = {"netns": os.readlink("/proc/self/ns/net"), "public": dialled,
        "secret": os.environ.get("DRARENA_TEST_SECRET"),
        "files": {path: peek(path) for path in private["files"]},
        "unmount": {path: unmount(path) for path in private["folders"]},
        "files_after": {path: peek(path) for path in private["files"]}}
with open(os.environ["PROBE_OUT"], "a") as out:
    out.write(json.dumps(seen) + "\\n")
print(json.dumps({"report": "Report strength=1 from " + request["question"], "citations": []}))
"""
)


@pytest.mark.skipif(not NETNS.available, reason=f"no network namespace here: {NETNS.reason}")
def test_frozen_tournament_runs_command_agents_in_a_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRARENA_TEST_SECRET", "s3cret")
    snapshot = frozen_site(tmp_path / "frozen")
    probe_out = tmp_path / "probe.jsonl"
    run_path = tmp_path / "runs" / "iso"
    # drarena's files the agent must not read: the snapshot's manifest and a tree, run.json
    private_files = [snapshot / "manifest.json", snapshot / "trees" / "t1.json"]
    private_files.append(run_path / "run.json")
    private = {
        "files": [str(f) for f in private_files],
        "folders": [str(snapshot), str(run_path)],
    }
    probe = {
        "name": "probe",
        "kind": "command",
        "args": {
            "command": [sys.executable, "-c", AGENT],
            "env": {"PROBE_OUT": str(probe_out), "PRIVATE": json.dumps(private)},
        },
    }
    agents = [{"name": "oracle", "kind": "oracle"}, probe]
    config = parse_config(scripted_config(tmp_path, snapshot, "iso", agents=agents), "test")
    run = RunDir(run_path)
    execute(
        config,
        run,
        scripted_options(scripted_models({"fact number": 3})),
    )
    header = json.loads(run.header_path.read_text())
    assert header["agent_isolation"] == NETNS.describe()
    assert header["agent_isolation"] in ("netns", "netns+mountns")
    # the frozen-web proxy's counts over the run: zero outside connections, whether or not
    # mitmproxy is installed here (without it no proxy ran: proxies 0)
    assert header["web_proxy"]["outside_connections"] == 0
    if proxy_installed():  # then every answer of the command agent went through one
        assert header["web_proxy"]["proxies"] >= 1
    seen = [json.loads(line) for line in probe_out.read_text().splitlines()]
    assert seen, "the command agent never ran"
    for f in private_files:  # they exist, so an agent that cannot read them was stopped
        assert f.is_file()
    for answer in seen:
        files, unmount, after = (
            answer.pop("files"),
            answer.pop("unmount"),
            answer.pop("files_after"),
        )
        assert answer == {"netns": answer["netns"], "public": "ENETUNREACH", "secret": None}
        assert answer["netns"] != os.readlink("/proc/self/ns/net")
        if NETNS.hides_files:  # hidden, and it cannot unmount what hides them
            assert set(files.values()) == {"EACCES"}, files
            assert set(unmount.values()) == {"EPERM"}, unmount
            assert after == files
        else:  # the network only: drarena's files are in view, as docs/agents.md says
            assert all(v.startswith("read ") for v in files.values()), files
    board = json.loads((run.path / "leaderboard.json").read_text())
    assert "probe" in json.dumps(board)
    # a replay starts no proxy, yet its run.json counts the recorded run's (from the record)
    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run.path), "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["web_proxy"] == header["web_proxy"]
