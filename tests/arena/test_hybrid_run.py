"""A hybrid run and an evidence run end to end: the LLM judge decides (scripted backend:
control flow only) while the evidence judge grades the same rounds by code; report.html and
`run rank --json` show their agreement, and `run replay` (the command, and drarena.replay)
reproduces the run byte for byte with zero model calls. The runs are played through the
Python API (drarena.run_tournament); the snapshot, the tournament, the report and the replay
are real."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from arena_live_site import LiveSiteForTests, freeze, scripted_models
from runconfig import scripted_config

import drarena
from drarena.cli import main

STRENGTH = {"fact number": 3}


def config_data(
    tmp: Path, snapshot: Path, name: str, judge: dict[str, Any] | None
) -> dict[str, Any]:
    match: dict[str, Any] = {"max_rounds": 2, "gap_to_stop": 9}
    if judge is not None:
        match["judge"] = judge
    return scripted_config(tmp, snapshot, name, match=match, rating={"resamples": 50})


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hybrid")
    site = LiveSiteForTests().start()
    try:
        return freeze(site, tmp / "frozen")
    finally:
        site.stop()


def play(tmp: Path, snapshot: Path, name: str, judge: dict[str, Any] | None) -> drarena.StoredRun:
    """The tournament through the Python API, as `drarena tournament` plays it but with the
    scripted models, the snapshot as `freeze` made it and no examiner-check."""
    config = drarena.load_config(config_data(tmp, snapshot, name, judge))
    options = dataclasses.replace(
        drarena.tournament_options(config),
        serve=False,
        prepare=False,
        backend=scripted_models(STRENGTH),
        examiner_check_pairs=0,
    )
    run = drarena.run_tournament(config, options)
    assert run.path == tmp / "runs" / name
    return run


def test_a_hybrid_run_shows_the_second_opinion_and_replays_identically(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = play(tmp_path, snapshot, "hybrid", None)  # a new config's default judge: hybrid
    stored: dict[str, Any] = run.header.config
    assert stored["match"]["judge"]["kind"] == "hybrid"
    rounds = [r for r in run.rounds if r.judgment is not None]
    assert rounds and all(r.judgment and r.judgment.evidence is not None for r in rounds)
    assert all(r.judgment and r.judgment.ab is not None for r in rounds)  # the LLM decided
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert "Second opinion: the LLM judge against the evidence" in html
    assert "evidence judge:" in html and "<blockquote class=muted>" in html  # items' evidence
    assert " stated, " in html and " cited, nuance " in html  # what decided each verdict

    assert main(["run", "rank", str(run.path), "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    second = ranked["second_opinion"]
    assert run.analyses.second is not None  # the figures the API returned, as printed
    assert json.loads(json.dumps(run.analyses.second.to_dict())) == second
    assert second["rounds"] == len(rounds)
    assert second["direction"]["n"] == len(rounds)

    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run.path), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "with 0 model calls" in said and "identical" in said
    assert (out / "matches.jsonl").read_bytes() == (run.path / "matches.jsonl").read_bytes()


def test_an_evidence_run_calls_no_judge_and_replays_identically(
    snapshot: Path, tmp_path: Path
) -> None:
    run = play(tmp_path, snapshot, "evidence", {"kind": "evidence"})
    rounds = [r for r in run.rounds if r.judgment is not None]
    assert rounds
    for r in rounds:
        assert r.judgment is not None and r.judgment.evidence is not None
        assert r.judgment.ab is None and r.judgment.ba is None  # no LLM verdict
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert "Second opinion" not in html  # nothing to compare with
    assert run.analyses.second is None
    replayed = drarena.replay(run.path, tmp_path / "replayed")
    assert replayed.identical and replayed.differ == () and replayed.model_calls == 0
    assert replayed.run.matches == run.matches
