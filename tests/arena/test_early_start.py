"""Early start of next-round matches: which pairings are certain (pure, hand-made histories),
and the scheduler's control flow with the scripted backend (same records as round by round)."""

from __future__ import annotations

import asyncio
import itertools
import random
from pathlib import Path

import pytest
from test_tournament_flow import tournament

from drarena.arena.earlystart import OUTCOMES, EarlyPlan, certain_matches
from drarena.arena.swiss import PlannedMatch, Result, plan_round
from drarena.ledger.records import MatchRecord

AGENTS = ["a", "b", "c", "d"]


def open_(swiss_round: int, a: str, b: str, tree: str = "t") -> PlannedMatch:
    return PlannedMatch(f"r{swiss_round}-{a}-vs-{b}-{tree}", swiss_round, a, b, tree)


def test_a_pairing_forced_whatever_the_open_match_gives_is_certain() -> None:
    # a beat b and c: top whatever happens. Unmet pairs left are a-d and b-c only, so the
    # third round is {a, d}, {b, c} under every outcome of b-d; a leads, so a-d is certain.
    # b-c is not: b above c if b beats d, below if d wins, so its A/B sides are not known.
    known = [Result("a", "b", 1.0), Result("c", "d", 1.0), Result("a", "c", 1.0)]
    certain = certain_matches(AGENTS, ["t"], 2, 7, [*known, open_(1, "b", "d")], [])
    assert [p.match_id for p in certain] == ["r2-a-vs-d-t"]
    b_wins = plan_round(AGENTS, ["t"], 2, 7, [*known, Result("b", "d", 1.0)], [])[1]
    d_wins = plan_round(AGENTS, ["t"], 2, 7, [*known, Result("b", "d", 0.0)], [])[1]
    assert {p.match_id for p in b_wins} == {"r2-a-vs-d-t", "r2-b-vs-c-t"}
    assert {p.match_id for p in d_wins} == {"r2-a-vs-d-t", "r2-c-vs-b-t"}


def test_a_pairing_that_follows_the_open_result_is_not_certain() -> None:
    # second round: a beat b; whoever wins c-d meets a, so nothing is certain
    a_won = Result("a", "b", 1.0)
    assert certain_matches(AGENTS, ["t"], 1, 7, [a_won, open_(0, "c", "d")], []) == []
    c_wins = plan_round(AGENTS, ["t"], 1, 7, [a_won, Result("c", "d", 1.0)], [])[1]
    d_wins = plan_round(AGENTS, ["t"], 1, 7, [a_won, Result("c", "d", 0.0)], [])[1]
    assert "r1-a-vs-c-t" in {p.match_id for p in c_wins}
    assert "r1-a-vs-d-t" in {p.match_id for p in d_wins}


def test_nothing_open_gives_the_plan_and_too_many_open_give_nothing() -> None:
    history = [Result("a", "b", 1.0), Result("c", "d", 0.5)]
    planned = plan_round(AGENTS, ["t1", "t2"], 1, 7, history, [])[1]
    assert certain_matches(AGENTS, ["t1", "t2"], 1, 7, history, []) == planned
    many = [open_(0, "a", "b", t) for t in ("t1", "t2")] + [
        open_(0, "c", "d", t) for t in ("t1", "t2")
    ]
    assert certain_matches(AGENTS, ["t1", "t2"], 1, 7, many, [], max_open=3) == []


def filled(
    history: list[Result | PlannedMatch], outcomes: tuple[float | None, ...]
) -> list[Result]:
    """`history` with its open matches ended by `outcomes`, in order."""
    left = iter(outcomes)
    return [Result(h.a, h.b, next(left)) if isinstance(h, PlannedMatch) else h for h in history]


def test_certain_matches_are_in_the_real_plan_whatever_happens() -> None:
    """The guarantee the scheduler relies on, over random histories of 8 agents: for every
    outcome the open matches can end with, the plan contains every certain match."""
    agents = [f"x{i}" for i in range(8)]
    rng = random.Random(5)
    seen_certain = 0
    for seed in range(12):
        done: list[Result] = []
        for r in range(3):
            pairs = plan_round(agents, ["t"], r, seed, done, [])[0].pairs
            done += [Result(a, b, rng.choice(OUTCOMES)) for a, b in pairs]
        history: list[Result | PlannedMatch] = list(done)
        for i in rng.sample(range(8, 12), 2):  # two of the third round's matches still open
            history[i] = open_(2, done[i].a, done[i].b)
        certain = {p.match_id for p in certain_matches(agents, ["t"], 3, seed, history, [])}
        seen_certain += len(certain)
        for outcomes in itertools.product(OUTCOMES, repeat=2):
            planned = plan_round(agents, ["t"], 3, seed, filled(history, outcomes), [])[1]
            assert certain <= {p.match_id for p in planned}
    assert seen_certain > 0  # the property is not vacuous


def run_dir_bytes(path: Path) -> dict[str, bytes]:
    """Every file a run writes that a replay must reproduce (timings differ on every run)."""
    files = [path / "matches.jsonl", *sorted((path / "matches").glob("*.json"))]
    return {str(f.relative_to(path)): f.read_bytes() for f in files}


FOUR = {f"s{i}": i for i in range(1, 5)}
SIX = {f"s{i}": i for i in range(1, 7)}


@pytest.mark.parametrize(("names", "seed"), [(FOUR, 5), (SIX, 3)])
def test_scripted_control_flow_early_start_writes_what_round_by_round_writes(
    tmp_path: Path, names: dict[str, int], seed: int
) -> None:
    """Scripted backend, control flow only: the same matches and byte-identical files with the
    early-start scheduler as with the round-by-round one; and some matches did start early."""
    lines: list[str] = []
    sequential = tournament(tmp_path / "seq", names, seed)
    sequential.early_start = 0
    early = tournament(tmp_path / "early", names, seed)
    early.log = lines.append
    # every match of a round may wait at once below; the gate must not be what they wait on
    early.concurrency = 4 * len(names)
    play = early.play_match
    plans: list[EarlyPlan] = []
    release: dict[str, asyncio.Event] = {}

    def on_plan(plan: EarlyPlan) -> None:
        plans.append(plan)
        if all(p.tree == "t2" for p in plan.open):  # let the first open one end
            release.setdefault(plan.open[0].match_id, asyncio.Event()).set()

    async def t2_waits_for_the_plan(p: PlannedMatch) -> MatchRecord:
        # scripted matches end at once, and a plan still running when a round's last match
        # ends is dropped; so a match on tree t2 ends only once the next round was planned
        # with it first among nothing but t2 matches open, one at a time (as model calls
        # outlast a plan, and end one by one), whatever the load
        if p.tree == "t2" and p.swiss_round + 1 < early.n_rounds():
            event = release.setdefault(p.match_id, asyncio.Event())
            await asyncio.wait_for(event.wait(), timeout=60)
        return await play(p)

    early.play_match = t2_waits_for_the_plan  # type: ignore[method-assign,unused-ignore]
    early.on_plan = on_plan
    seq_log = asyncio.run(sequential.play())
    early_log = asyncio.run(early.play())
    assert [m.to_json() for m in early_log] == [m.to_json() for m in seq_log]
    assert run_dir_bytes(tmp_path / "early") == run_dir_bytes(tmp_path / "seq")
    # two trees: once a round's t1 matches are done, at most early_start=4 (its t2 matches)
    # are open, so the next round is planned while they play (the last round's pairs are
    # forced; their A/B sides are certain in these draws)
    t2_only = [plan for plan in plans if all(p.tree == "t2" for p in plan.open)]
    assert {plan.next_round for plan in t2_only} == set(range(1, early.n_rounds()))
    assert any(plan.certain for plan in plans), plans
    assert any("started early" in line for line in lines), lines


def test_scripted_control_flow_early_start_resumes_after_a_crash(tmp_path: Path) -> None:
    full = tournament(tmp_path / "full", SIX, 3)
    full.early_start = 0
    expected = asyncio.run(full.play())
    crashed = tmp_path / "crashed"
    asyncio.run(tournament(crashed, SIX, 3).play())
    # a kill mid-way: a round's log not written yet, matches of two rounds lost
    files = sorted((crashed / "matches").glob("r[23]-*.json"))
    for f in random.Random(1).sample(files, 4):
        f.unlink()
    log_text = (crashed / "matches.jsonl").read_text().splitlines()
    (crashed / "matches.jsonl").write_text("\n".join(log_text[:8]) + "\n")
    resumed = asyncio.run(tournament(crashed, SIX, 3).play())
    assert [m.to_json() for m in resumed] == [m.to_json() for m in expected]
    assert run_dir_bytes(crashed) == run_dir_bytes(tmp_path / "full")


def test_scripted_control_flow_a_failed_match_stops_the_run_and_it_resumes(
    tmp_path: Path,
) -> None:
    """A match that raises (not a void: e.g. a replay's cache miss) ends the run once every
    started match has settled, nothing left running; the run then resumes to the same log."""
    full = tournament(tmp_path / "full", SIX, 3)
    full.early_start = 0
    expected = asyncio.run(full.play())
    broken = tournament(tmp_path / "broken", SIX, 3)
    real = broken.play_match

    async def fails_once(p: PlannedMatch) -> MatchRecord:
        if p.match_id == expected[13].match_id:  # in round 3, while round 4 may start early
            raise RuntimeError("boom")
        return await real(p)

    broken.play_match = fails_once
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(broken.play())
    resumed = asyncio.run(tournament(tmp_path / "broken", SIX, 3).play())
    assert [m.to_json() for m in resumed] == [m.to_json() for m in expected]
    assert run_dir_bytes(tmp_path / "broken") == run_dir_bytes(tmp_path / "full")


def test_early_start_is_scheduling_only_so_not_in_the_config_digest() -> None:
    """A run may resume with another early_start, and runs recorded before the field existed
    keep their digest (their stored config has no such key)."""
    from test_arena_config import base

    from drarena.config.tournament import parse_config
    from drarena.runs.session import config_digest

    default = parse_config(base(), "t.yaml")
    assert default.early_start == 4
    assert config_digest(parse_config({**base(), "early_start": 0}, "t.yaml")) == config_digest(
        default
    )
    assert config_digest(default) != config_digest(parse_config({**base(), "seed": 99}, "t.yaml"))


def test_models_transport_is_not_in_the_config_digest_either() -> None:
    """models.transport (direct or litellm) sends the same bodies and reads the same replies,
    so a run may resume or replay with either; the rest of the models block still counts."""
    from test_arena_config import base

    from drarena.config.tournament import parse_config
    from drarena.runs.session import config_digest

    def with_models(**models: object) -> str:
        config = base()
        config["models"] = {**config["models"], **models}
        return config_digest(parse_config(config, "t.yaml"))

    assert parse_config(base(), "t.yaml").models.transport == "direct"
    assert with_models(transport="litellm") == with_models() == with_models(transport="direct")
    assert with_models(concurrency=9) != with_models()


def test_a_stopped_plan_finds_nothing_certain() -> None:
    """The scheduler stops a plan it no longer needs (its round ended, or a match finished
    and a cheaper plan replaces it): a stopped plan starts nothing."""
    import threading

    # the history of the first test above, where a-vs-d is certain: a stop must be what
    # empties the answer, not a history with nothing certain in it
    known = [Result("a", "b", 1.0), Result("c", "d", 1.0), Result("a", "c", 1.0)]
    history: list[Result | PlannedMatch] = [*known, open_(1, "b", "d")]
    stop = threading.Event()
    running = certain_matches(AGENTS, ["t"], 2, 7, history, [], stop=stop)
    assert [p.match_id for p in running] == ["r2-a-vs-d-t"]
    stop.set()
    assert certain_matches(AGENTS, ["t"], 2, 7, history, [], stop=stop) == []


def test_scripted_control_flow_the_fitter_is_imported_beside_round_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first fit that needs scipy comes at round 1's tail (the early-start planner) or
    end (round by round); its import is done in a thread while round 1 plays, once, either
    way. A tournament told not to (a replay: see the next test) never asks for it, so a
    replay of tied fits still skips scipy."""
    import drarena.arena.tournament as tournament_module

    calls: list[str] = []
    monkeypatch.setattr(tournament_module, "warm_up_fits", lambda: calls.append("warm"))
    early = tournament(tmp_path / "early", SIX, 3)
    asyncio.run(early.play())
    assert calls == ["warm"]
    calls.clear()
    sequential = tournament(tmp_path / "seq", SIX, 3)
    sequential.early_start = 0
    asyncio.run(sequential.play())
    assert calls == ["warm"]
    calls.clear()
    replaying = tournament(tmp_path / "replaying", SIX, 3)
    replaying.early_start, replaying.warm_up = 0, False
    asyncio.run(replaying.play())
    assert calls == []


@pytest.mark.parametrize("replaying", [False, True])
def test_only_a_replay_is_played_without_the_warm_up(tmp_path: Path, replaying: bool) -> None:
    from types import SimpleNamespace
    from typing import Any

    from drarena.ledger.folder import RunDir
    from drarena.runs.context import RunContext
    from drarena.runs.webmode import FrozenMode

    config: Any = SimpleNamespace(
        seed=1, match=None, swiss_rounds=3, concurrency=1, early_start=4
    )  # what tournament() reads
    ctx = RunContext(config, None, None, {}, FrozenMode(config), None, replaying=replaying)  # type: ignore[arg-type]
    for name in ("trees", "pages", "expander"):  # loaded on first use: not here
        ctx.__dict__[name] = None
    assert ctx.tournament(RunDir(tmp_path)).warm_up is not replaying
