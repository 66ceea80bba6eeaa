"""A frozen tournament with deliberately broken command agents (issue 37 item 4): one hangs,
one crashes, one floods stdout, one ignores the proxy and dials a public address itself. Each
is contained (time limit, output cap, network namespace), its failure is recorded on the
rounds it played, and the tournament goes on to a leaderboard. The run is real (a loopback
site frozen with the real LiveWeb, the real tournament and command-agent runner); only the
Examiner and the in-process agents are the scripted backend (control flow only)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "arena"))
from agent_helpers import DIAL_TEST_NET
from arena_live_site import frozen_site, scripted_models
from runconfig import scripted_config, scripted_options

from drarena.agents import sandbox
from drarena.config.tournament import parse_config
from drarena.ledger.folder import RunDir
from drarena.ledger.leaderboard import failed_rounds
from drarena.runs.execute import execute

NETNS = sandbox.probe()

HANG = "import time; time.sleep(600)"
CRASH = "import sys; sys.stderr.write('adapter bug: KeyError plan\\n'); sys.exit(3)"
FLOOD = (
    "import sys\n"
    "block = b'y' * (1 << 20)\n"
    "for _ in range(16): sys.stdout.buffer.write(block)\n"
    "sys.stdout.flush()\n"
)
# ignores HTTP(S)_PROXY: dials a TEST-NET address directly, notes what happened, then answers
DIRECT = (
    "import json, os, sys\nrequest = json.load(sys.stdin)\nDIAL_TIMEOUT_S = 5\n"
    + DIAL_TEST_NET
    + """
with open(os.environ["DIAL_OUT"], "a") as out:
    out.write(dialled + "\\n")
print(json.dumps({"report": "Report strength=1 without the proxy", "citations": []}))
"""
)


def command(name: str, script: str, **args: object) -> dict[str, object]:
    return {
        "name": name,
        "kind": "command",
        "args": {"command": [sys.executable, "-c", script], "timeout_s": 3, **args},
    }


@pytest.mark.skipif(not NETNS.available, reason=f"no network namespace here: {NETNS.reason}")
def test_broken_agents_are_contained_recorded_and_the_tournament_goes_on(
    tmp_path: Path,
) -> None:
    snapshot = frozen_site(tmp_path / "frozen")
    dial_out = tmp_path / "dial.txt"
    agents: list[dict[str, object]] = [
        {"name": "oracle", "kind": "oracle"},
        {"name": "closed_book", "kind": "closed_book"},
        command("hang", HANG),
        command("crash", CRASH),
        command("flood", FLOOD),
        command("direct", DIRECT, env={"DIAL_OUT": str(dial_out)}),
    ]
    config = parse_config(
        scripted_config(tmp_path, snapshot, "broken", agents=agents, swiss_rounds=2), "test"
    )
    run = RunDir(tmp_path / "runs" / "broken")
    execute(
        config,
        run,
        scripted_options(scripted_models({"fact number": 3})),
    )
    # the tournament finished: every agent is on the leaderboard
    board = (run.path / "leaderboard.json").read_text()
    names = [str(agent["name"]) for agent in agents]
    for name in names:
        assert f'"{name}"' in board
    matches = run.read_log()
    assert len(matches) == 6  # 2 Swiss rounds of 3 matches: no match lost to a broken agent
    reasons: dict[str, set[str]] = {}
    for m in matches:
        for rnd in m.rounds:
            for side, answer in ((m.a, rnd.answer_a), (m.b, rnd.answer_b)):
                if answer is not None and answer.error:
                    reasons.setdefault(side, set()).add(answer.error)
    assert reasons["hang"] == {"external agent hang: no answer within 3 s (killed)"}
    assert reasons["flood"] == {
        "external agent flood: stdout passed its cap of 4194304 bytes (4194305 bytes read; killed)"
    }
    (crash,) = reasons["crash"]
    assert crash.startswith("external agent crash: exited with status 3;")
    assert "adapter bug: KeyError plan" in crash
    # drarena's default (failed_answers: void): each broken agent's rounds are void for it,
    # never a tie or a win
    failed = {f.agent: f for f in failed_rounds(names, matches)}
    for name in ("hang", "crash", "flood"):
        assert failed[name].voided == 2 and failed[name].judged == 0, failed[name]
    assert failed["oracle"].voided == failed["closed_book"].voided == 0
    # the agent that ignored the proxy answered, but from a namespace with no route out
    assert "direct" not in reasons and failed["direct"].voided == 0
    dials = dial_out.read_text().split()
    assert dials and set(dials) == {"ENETUNREACH"}, dials
    header = json.loads(run.header_path.read_text())
    assert header["web_proxy"]["outside_connections"] == 0
