"""A hybrid run and an evidence run end to end: the LLM judge decides (scripted backend:
control flow only) while the evidence judge grades the same rounds by code; report.html and
`run rank --json` show their agreement, and `run replay` reproduces the run byte for byte with
zero model calls. The snapshot, the tournament, the report and the replay are real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from arena_live_site import LiveSiteForTests, freeze, scripted_models

from drarena.cli import main
from drarena.config.tournament import parse_config
from drarena.ledger.folder import RunDir
from drarena.models.config import CacheMode
from drarena.report.run import write_report
from drarena.runs.execute import RunOptions, execute

STRENGTH = {"fact number": 3}


def config_data(
    tmp: Path, snapshot: Path, name: str, judge: dict[str, Any] | None
) -> dict[str, Any]:
    role = {"model": "openai/scripted-for-tests"}
    match: dict[str, Any] = {"max_rounds": 2, "gap_to_stop": 9}
    if judge is not None:
        match["judge"] = judge
    return {
        "name": name,
        "snapshot": str(snapshot),
        "runs_root": str(tmp / "runs"),
        "index_root": str(tmp / "index"),
        "seed": 1,
        "swiss_rounds": 1,
        "trees": {"count": 1},
        "match": match,
        "rating": {"resamples": 50},
        "models": {"retry": {"max_attempts": 1}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "oracle", "kind": "oracle"},
            {"name": "closed_book", "kind": "closed_book"},
        ],
    }


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hybrid")
    site = LiveSiteForTests().start()
    try:
        return freeze(site, tmp / "frozen")
    finally:
        site.stop()


def play(tmp: Path, snapshot: Path, name: str, judge: dict[str, Any] | None) -> RunDir:
    config = parse_config(config_data(tmp, snapshot, name, judge), "test")
    run = RunDir(tmp / "runs" / name)
    result = execute(
        config,
        run,
        RunOptions(
            serve=False,
            cache_mode=CacheMode.READ_WRITE,
            prepare=False,
            backend=scripted_models(STRENGTH),
        ),
    )
    write_report(run, config, result.log)
    return run


def test_a_hybrid_run_shows_the_second_opinion_and_replays_identically(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = play(tmp_path, snapshot, "hybrid", None)  # a new config's default judge: hybrid
    header = run.header()
    assert header is not None
    stored: dict[str, Any] = header.config
    assert stored["match"]["judge"]["kind"] == "hybrid"
    rounds = [r for m in run.read_log() for r in m.rounds if r.judgment is not None]
    assert rounds and all(r.judgment and r.judgment.evidence is not None for r in rounds)
    assert all(r.judgment and r.judgment.ab is not None for r in rounds)  # the LLM decided
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert "Second opinion: the LLM judge against the evidence" in html
    assert "evidence judge:" in html and "<blockquote class=muted>" in html  # items' evidence
    assert " stated, " in html and " cited, nuance " in html  # what decided each verdict

    assert main(["run", "rank", str(run.path), "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    second = ranked["second_opinion"]
    assert second["rounds"] == len(rounds)
    assert second["direction"]["n"] == len(rounds)

    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run.path), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "with 0 model calls" in said and "identical" in said
    assert (out / "matches.jsonl").read_bytes() == (run.path / "matches.jsonl").read_bytes()


def test_an_evidence_run_calls_no_judge_and_replays_identically(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = play(tmp_path, snapshot, "evidence", {"kind": "evidence"})
    rounds = [r for m in run.read_log() for r in m.rounds if r.judgment is not None]
    assert rounds
    for r in rounds:
        assert r.judgment is not None and r.judgment.evidence is not None
        assert r.judgment.ab is None and r.judgment.ba is None  # no LLM verdict
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert "Second opinion" not in html  # nothing to compare with
    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run.path), "--out", str(out)]) == 0
    assert "identical" in capsys.readouterr().out
