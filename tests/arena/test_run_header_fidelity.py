"""run.json records the fidelity switches and ablations a tournament played under (issue 16):
`protocol`, every `match:` switch as resolved, and the task and judge roles as bound, with
their temperatures; the run then replays from its record. A real frozen run on a loopback
site; only the model is the scripted backend (control flow only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from arena_live_site import LiveSiteForTests, freeze, scripted_models
from runconfig import scripted_config, scripted_options

from drarena.config.tournament import PAPER_MATCH, parse_config
from drarena.ledger.folder import RunDir
from drarena.runs.execute import execute, replay


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fidelity")
    site = LiveSiteForTests().start()
    try:
        return freeze(site, tmp / "frozen")
    finally:
        site.stop()


def test_header_records_protocol_switches_ablations_and_stage_roles(
    snapshot: Path, tmp_path: Path
) -> None:
    role = {"model": "openai/scripted-for-tests", "sampling": {"temperature": 0.0}}
    data = scripted_config(
        tmp_path,
        snapshot,
        "fid",
        role,
        protocol="paper",
        match={"first_round_only": True, "flat_context": True},
    )
    config = parse_config(data, "test")
    run = RunDir(tmp_path / "runs" / "fid")
    execute(
        config,
        run,
        scripted_options(scripted_models({"fact number": 3})),
    )
    header = json.loads((run.path / "run.json").read_text(encoding="utf-8"))
    match = header["config"]["match"]
    assert header["config"]["protocol"] == "paper"
    assert match["first_round_only"] is True and match["flat_context"] is True
    for key, value in PAPER_MATCH.items():
        if key not in ("first_round_only", "flat_context"):
            assert match[key] == value, key
    roles = header["bound_roles"]
    assert roles["taskgen"]["sampling"]["temperature"] == 0.7
    assert roles["judge"]["sampling"]["temperature"] == 0.1
    assert roles["examiner"]["sampling"]["temperature"] == 0.0
    matches = [json.loads(line) for line in (run.path / "matches.jsonl").read_text().splitlines()]
    assert matches and all(len(m["rounds"]) == 1 for m in matches if not m["void_reason"])

    _, differ = replay(run, RunDir(tmp_path / "replayed"))
    assert differ == []
