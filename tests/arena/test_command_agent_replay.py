"""A tournament with a command agent replays from its record with no agent process started
(issue 37: "replays byte-identically from its record with 0 model calls and no agent process
started"). The agent's reply and the frozen-web proxy's log are kept in the run's tool record
(drarena.agents.external.CommandAgent._recorded_run); a replay reads them back.

The run is real (a snapshot of a loopback site, the real tournament, the command agent a real
process); only the Examiner's model is the scripted backend (control flow only)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from arena_live_site import frozen_site, scripted_models
from runconfig import scripted_config, scripted_options

from drarena.cli import main
from drarena.config.tournament import parse_config
from drarena.ledger.folder import RunDir
from drarena.runs.execute import execute

# The agent: counts its starts in a file named on its command line, then answers with a
# citation of its own choosing (the control flow, not a model's knowledge, is under test).
AGENT = """
import json, sys
with open(sys.argv[1], "a") as f:
    f.write("started\\n")
request = json.load(sys.stdin)
print("agent log line")
print(json.dumps({"report": "An answer to: " + request["question"][:60] + " [1]",
                  "citations": ["http://127.0.0.1:1/not-read.html"]}))
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(run folder, the agent's start log) of a frozen tournament with a command agent."""
    tmp = tmp_path_factory.mktemp("cmdrun")
    snapshot = frozen_site(tmp / "frozen")
    starts = tmp / "starts.log"
    agents = [
        {"name": "closed_book", "kind": "closed_book"},
        {
            "name": "ext",
            "kind": "command",
            "args": {"command": [sys.executable, "-c", AGENT, str(starts)], "web_proxy": False},
        },
    ]
    config = parse_config(scripted_config(tmp, snapshot, "cmd", agents=agents), "test")
    run = RunDir(tmp / "runs" / "cmd")
    execute(config, run, scripted_options(scripted_models({"fact number": 3})))
    return run.path, starts


def test_the_replay_starts_no_agent_and_gives_the_same_bytes(
    made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, starts = made
    started = starts.read_text().count("started")
    assert started >= 1  # the recorded run did start the agent
    # the agent's answers are in the record: its report is in the match log
    assert "An answer to: " in (run / "matches.jsonl").read_text()
    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run), "--out", str(out)]) == 0
    assert "identical" in capsys.readouterr().out
    assert starts.read_text().count("started") == started  # no agent process started
    assert json.loads((out / "run.json").read_text())["model_calls"] == 0


def test_a_record_without_the_agents_reply_fails_the_replay_naming_it(
    made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run recorded before replies were kept (or a record that lost them) is refused in
    one line; the agent is not started in its place."""
    import sqlite3

    run, starts = made
    copy = tmp_path / "runs" / "cmd"
    shutil.copytree(run, copy)
    with sqlite3.connect(copy / "llm-cache.sqlite") as db:
        deleted = db.execute("DELETE FROM tools WHERE request LIKE '{\"command\"%'").rowcount
    assert deleted >= 1
    started = starts.read_text().count("started")
    assert main(["run", "replay", str(copy), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no reply of command agent ext" in err and "Traceback" not in err
    assert starts.read_text().count("started") == started
