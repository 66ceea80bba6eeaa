"""`drarena run rejudge` control flow on a small recorded run, with the scripted model backend
(control flow only: no real model). The run is played here by scripted agents of known
strength and the scripted strength Examiner, and written as a run folder with a header."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from arena_fakes import ScriptedAgentForTests, make_tree, strength_examiner

from drarena.arena.match import MatchSettings
from drarena.arena.tournament import Tournament
from drarena.cli import main
from drarena.config.tournament import parse_config
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.leaderboard import build_leaderboard
from drarena.models.backend import BackendReply
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.runs.rejudge import JudgeSpec, RejudgeOptions, prepare_out, rejudge

STRENGTHS = {"s1": 1, "s2": 2, "s3": 3, "s4": 4}
CONFIG = {
    "name": "scripted",
    "snapshot": "snapshots/none",
    "seed": 3,
    "match": {"max_rounds": 2},
    "rating": {"resamples": 50, "seed": 0},
    "models": {"roles": {"examiner": {"model": "openai/scripted"}}},
    "agents": [{"name": n, "kind": "closed_book"} for n in STRENGTHS],
}


def judge_only(step: Any) -> ScriptedBackendForTests:
    return ScriptedBackendForTests([step] * 10_000)


def weakness_examiner() -> Any:
    """The strength Examiner with every verdict turned round: it prefers the weaker answer."""
    strong = strength_examiner()
    flip = {"A_MUCH_BETTER": "B_MUCH_BETTER", "B_MUCH_BETTER": "A_MUCH_BETTER"}

    def step(request: Mapping[str, Any]) -> BackendReply:
        value = json.loads(strong(request).text)
        value["verdict"] = flip.get(value["verdict"], value["verdict"])
        return reply(json.dumps(value))

    return step


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A finished run folder: run.json (a config naming the agents), matches.jsonl."""
    run = tmp_path / "runs" / "scripted"
    tree, docs = make_tree()
    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
        backend=judge_only(strength_examiner()),
    )
    agents = {n: ScriptedAgentForTests(n, report=f"strength={s}") for n, s in STRENGTHS.items()}
    asyncio.run(
        Tournament(
            RunDir(run),
            3,
            agents,
            {"t1": tree},
            docs,
            client,
            MatchSettings(max_rounds=2),
            concurrency=2,
            log=lambda _: None,
        ).play()
    )
    config = parse_config(CONFIG, "test")
    RunDir(run).write_header(
        {
            "config": config.model_dump(mode="json"),
            "bound_roles": {"examiner": {"model": "openai/scripted", "sampling": {}}},
        }
    )
    return run


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def played_rounds(run: Path) -> int:
    return sum(
        1
        for m in RunDir(run).read_log()
        for r in m.rounds
        if r.judgment is not None and not r.void_reason
    )


def test_the_same_judge_agrees_perfectly_and_a_second_rejudge_is_free(
    recorded: Path, tmp_path: Path
) -> None:
    before = digests(recorded)
    out = tmp_path / "rejudged"
    backend = judge_only(strength_examiner())
    first = rejudge(recorded, out, JudgeSpec(), RejudgeOptions(backend=backend)).report
    n = played_rounds(recorded)
    assert n >= 4 and first.rounds_compared == first.rounds_rejudged == n
    assert first.model_calls == 2 * n == len(backend.requests)  # both orders per round
    assert first.verdict.kappa == 1.0 and first.direction.kappa == 1.0
    assert first.verdict.agreement == 1.0 and first.verdict.kappa_ci == (1.0, 1.0)
    # the scripted judge always names DEPTH: agreement 1, kappa undefined (one label only)
    assert first.failure_type.agreement == 1.0 and first.failure_type.kappa is None
    assert {"A_MUCH_BETTER -> A_MUCH_BETTER", "B_MUCH_BETTER -> B_MUCH_BETTER"} <= set(
        first.verdict.confusion
    )
    assert digests(recorded) == before  # the source run is only read

    silent = ScriptedBackendForTests([])  # any model call would fail the test
    second = rejudge(recorded, out, JudgeSpec(), RejudgeOptions(backend=silent)).report
    assert second.model_calls == 0 and silent.requests == []
    assert second.rounds == first.rounds and second.verdict == first.verdict
    saved = json.loads((out / "rejudge.json").read_text(encoding="utf-8"))
    assert saved["schema_version"] == 1 and saved["rejudge_of"] == str(recorded.resolve())
    assert "| verdict (5-way) |" in (out / "rejudge.md").read_text(encoding="utf-8")


def test_a_contrary_judge_and_the_written_run_it_ranks(recorded: Path, tmp_path: Path) -> None:
    before = digests(recorded)
    out = tmp_path / "contrary"
    spec = JudgeSpec(model="openai/contrary", temperature=0.5, seed=7)
    result = rejudge(
        recorded, out, spec, RejudgeOptions(write=True, backend=judge_only(weakness_examiner()))
    )
    report = result.report
    assert report.direction.agreement == 0.0
    assert report.direction.kappa is not None and report.direction.kappa < 0
    assert set(report.direction.confusion) <= {"A -> B", "B -> A"}
    assert report.failure_type.n == 0  # never the same winner: no failure type compared
    assert report.judge["model"] == "openai/contrary"
    assert report.judge["sampling"]["temperature"] == 0.5 and report.judge["sampling"]["seed"] == 7
    assert digests(recorded) == before

    header = RunDir(out).header()
    assert header is not None
    written: dict[str, Any] = header.as_json()  # rejudge_of and rejudge: kept as extras
    assert written["rejudge_of"] == str(recorded.resolve())
    assert written["rejudge"]["judge"]["model"] == "openai/contrary"
    source_log, new_log = RunDir(recorded).read_log(), RunDir(out).read_log()
    assert [m.match_id for m in new_log] == [m.match_id for m in source_log]
    for old, new in zip(source_log, new_log, strict=True):
        assert [r.task for r in new.rounds] == [r.task for r in old.rounds]
        assert [r.answer_a for r in new.rounds] == [r.answer_a for r in old.rounds]
        assert (new.score.points_a, new.score.points_b) == (
            old.score.points_b,
            old.score.points_a,
        )
    names = list(STRENGTHS)
    source_order = [r.agent for r in build_leaderboard(names, source_log, resamples=0)]
    new_order = [r.agent for r in build_leaderboard(names, new_log, resamples=0)]
    assert source_order[0] == "s4" and new_order[0] == "s1"
    assert (out / "leaderboard.md").is_file()
    assert main(["run", "rank", str(out)]) == 0  # a run folder like any other


def test_a_failing_judge_voids_rounds_it_could_not_judge(recorded: Path, tmp_path: Path) -> None:
    def broken(request: Mapping[str, Any]) -> BackendReply:
        raise ValueError("judge down")

    result = rejudge(
        recorded,
        tmp_path / "down",
        JudgeSpec(),
        RejudgeOptions(write=True, backend=judge_only(broken)),
    )
    report = result.report
    assert report.rounds_compared == 0 and report.rounds_new_judge_failed == report.rounds_rejudged
    assert report.verdict.kappa is None and report.verdict.n == 0
    assert all(m.outcome.value == "VOID" for m in result.log)
    assert all(r.void_reason.startswith("judge failed:") for m in result.log for r in m.rounds)


def test_the_output_folder_is_never_the_run_nor_someone_elses(
    recorded: Path, tmp_path: Path
) -> None:
    with pytest.raises(DrarenaError, match="inside the run being rejudged"):
        prepare_out(recorded, recorded / "sub")
    with pytest.raises(DrarenaError, match="lies inside the run"):
        prepare_out(recorded, recorded)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(DrarenaError, match="nothing was deleted"):
        rejudge(
            recorded, other, JudgeSpec(), RejudgeOptions(backend=judge_only(strength_examiner()))
        )
    assert (other / "notes.txt").read_text() == "mine"


def test_unknown_role_and_an_unjudgeable_run_are_one_line(recorded: Path, tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match="no role 'nobody'"):
        rejudge(
            recorded,
            tmp_path / "x",
            JudgeSpec(role="nobody"),
            RejudgeOptions(backend=judge_only(None)),
        )
    log = RunDir(recorded).read_log()
    bare = [m.__class__.from_dict({**m.to_dict(), "rounds": []}) for m in log]
    RunDir(recorded).write_log(bare)
    with pytest.raises(DrarenaError, match="nothing to rejudge"):
        rejudge(recorded, tmp_path / "y", JudgeSpec(), RejudgeOptions(backend=judge_only(None)))
    assert main(["run", "rejudge", str(tmp_path / "missing")]) == 2


def test_the_run_s_judging_options_are_used_again(recorded: Path, tmp_path: Path) -> None:
    header = RunDir(recorded).header()
    assert header is not None
    config = parse_config({**CONFIG, "match": {"max_rounds": 2, "judge_orders": 1}}, "test")
    RunDir(recorded).write_header({**header.as_json(), "config": config.model_dump(mode="json")})
    backend = judge_only(strength_examiner())
    once = rejudge(recorded, tmp_path / "once", JudgeSpec(), RejudgeOptions(backend=backend)).report
    assert once.model_calls == once.rounds_rejudged == played_rounds(recorded)  # one order
    assert once.direction.kappa == 1.0
    # a run recorded before judging was configurable (its stored config has neither
    # judge_prompt nor taskgen_role): the Examiner's role judges again, with the v1 prompt
    RunDir(recorded).write_header({**header.as_json(), "config": CONFIG})
    old = rejudge(
        recorded,
        tmp_path / "old",
        JudgeSpec(),
        RejudgeOptions(backend=judge_only(strength_examiner())),
    )
    assert list(old.report.prompt_hashes) == ["judge"]
    assert old.report.source_judge["role"] == "examiner"
    assert old.report.judge["from"] == "the run's config, role examiner"
