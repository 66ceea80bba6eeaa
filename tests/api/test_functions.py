"""The Python API end to end (drarena.api.functions, used as `drarena.<name>`): a whole small
tournament played through `drarena.run_tournament` on a frozen loopback site with the scripted
backend (control flow only: no test reads what a model said), read back, ranked again,
replayed byte for byte with zero model calls and rejudged by the evidence judge; the
examiner-check run and replayed. The snapshot, tournament, report, replay and check are real.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from api_helpers import config_data, scripted
from arena_live_site import scripted_models

import drarena

LEADERBOARD = ("leaderboard.md", "leaderboard.csv", "leaderboard.json")
RECORDED = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"


def test_a_tournament_is_played_read_ranked_replayed_and_rejudged(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = drarena.load_config(config_data(tmp_path, snapshot))
    assert isinstance(config, drarena.TournamentConfig)
    run = drarena.run_tournament(config, scripted(config))
    assert capsys.readouterr().out == ""  # returned, not printed
    assert isinstance(run, drarena.StoredRun)
    assert run.path == tmp_path / "runs" / "api"
    assert run.header.model_calls and run.header.model_calls > 0
    # the protocol: one Swiss round of two agents is one match, its rounds judged
    assert len(run.matches) == 1 and run.matches[0].rounds
    assert all(r.judgment is not None for r in run.rounds if not r.void_reason)
    assert sorted(r.agent for r in run.leaderboard) == config.agent_names()
    for name in (*LEADERBOARD, "report.html", "matches.jsonl", "run.json"):
        assert (run.path / name).is_file(), name
    stored = json.loads((run.path / "leaderboard.json").read_text(encoding="utf-8"))
    assert [r.to_dict() for r in run.leaderboard] == stored
    # what run_tournament returns is what read_run reads back from the folder
    back = drarena.read_run(run.path)
    assert (back.header, back.config, back.matches) == (run.header, run.config, run.matches)
    assert back.analyses.to_dict() == run.analyses.to_dict()

    before = {name: (run.path / name).read_bytes() for name in LEADERBOARD}
    ranked = drarena.rank(run.path)
    assert ranked.leaderboard == run.leaderboard
    assert {name: (run.path / name).read_bytes() for name in LEADERBOARD} == before

    replayed = drarena.replay(run.path)
    assert replayed.identical and replayed.differ == () and replayed.model_calls == 0
    assert replayed.run.path == tmp_path / "runs" / "api-replay"
    assert replayed.run.matches == run.matches
    assert (replayed.run.path / "report.html").is_file()
    for name in ("matches.jsonl", *LEADERBOARD):
        assert (replayed.run.path / name).read_bytes() == (run.path / name).read_bytes()

    out = tmp_path / "rejudged"
    rejudged = drarena.rejudge(
        run.path, drarena.JudgeSpec(judge={"kind": "evidence"}), out, write=True
    )
    assert rejudged.report.model_calls == 0 and rejudged.report.written_run
    assert rejudged.report.rounds_rejudged == len([r for r in run.rounds if r.judgment])
    assert (out / "rejudge.json").is_file() and (out / "report.html").is_file()
    assert drarena.read_run(out).matches == tuple(rejudged.log)
    assert capsys.readouterr().out == ""


def test_a_replay_into_a_named_folder_of_a_run_that_moved(snapshot: Path, tmp_path: Path) -> None:
    """`out` and `snapshot` as `run replay --out` and a snapshot found elsewhere: the run's
    config names a snapshot path that no longer exists."""
    config = drarena.load_config(config_data(tmp_path, snapshot))
    run = drarena.run_tournament(config, scripted(config))
    moved = tmp_path / "moved-snapshot"
    shutil.copytree(snapshot, moved)
    header = json.loads((run.path / "run.json").read_text(encoding="utf-8"))
    header["config"]["snapshot"] = str(tmp_path / "gone")
    (run.path / "run.json").write_text(json.dumps(header), encoding="utf-8")
    replayed = drarena.replay(run.path, tmp_path / "again", snapshot=moved)
    assert replayed.identical and replayed.model_calls == 0
    assert replayed.run.path == tmp_path / "again"


def test_the_recorded_run_ranks_to_its_own_leaderboard_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`drarena.rank` on the committed recorded run (a copy): the leaderboard files come out
    as committed, report.html is written, and nothing is printed."""
    copy = tmp_path / "recorded-run"
    shutil.copytree(RECORDED, copy)
    ranked = drarena.rank(copy)
    assert capsys.readouterr().out == ""
    assert [r.agent for r in ranked.leaderboard] == [
        r.agent for r in drarena.read_run(RECORDED).leaderboard
    ]
    for name in LEADERBOARD:
        assert (copy / name).read_bytes() == (RECORDED / name).read_bytes(), name
    assert (copy / "report.html").is_file()


def test_rank_refuses_an_empty_log_and_a_folder_that_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(drarena.DrarenaError, match=r"no run\.json"):
        drarena.rank(tmp_path)
    (tmp_path / "run.json").write_bytes((RECORDED / "run.json").read_bytes())
    with pytest.raises(drarena.DrarenaError, match=r"matches\.jsonl: no match log"):
        drarena.rank(tmp_path)
    (tmp_path / "matches.jsonl").write_bytes(b"")
    with pytest.raises(drarena.DrarenaError, match="no matches in the log; nothing ranked"):
        drarena.rank(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matches.jsonl", "run.json"]


def test_the_examiner_check_runs_and_replays_identically(imported: Path, tmp_path: Path) -> None:
    config = drarena.load_config(config_data(tmp_path, imported))
    out = tmp_path / "check"
    options = drarena.CheckOptions(
        pairs=1, paraphrase=False, out=out, serve=False, backend=scripted_models()
    )
    checked = drarena.examiner_check(imported, config, options)
    assert checked.path == out / "examiner-check.json" and checked.path.is_file()
    assert checked.report == json.loads(checked.path.read_text(encoding="utf-8"))
    assert checked.model_calls > 0 and checked.identical is None
    judge = config.match.judge_spec().kind
    assert list(checked.verdicts) == [judge] and judge in checked.table
    again = drarena.examiner_check(
        imported, config, dataclasses.replace(options, replay=True, backend=None)
    )
    assert again.identical is True and again.model_calls == 0
    assert again.report == checked.report


def test_check_options_are_checked_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(drarena.DrarenaError, match="pairs: at least 1"):
        drarena.examiner_check(tmp_path / "none", None, drarena.CheckOptions(pairs=0, out=out))
    with pytest.raises(drarena.DrarenaError, match="unknown judge kind 'majority'"):
        drarena.examiner_check(
            tmp_path / "none", None, drarena.CheckOptions(judges=("majority",), out=out)
        )
    assert not out.exists()
