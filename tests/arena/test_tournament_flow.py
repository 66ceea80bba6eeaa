"""Tournament control flow (planning, concurrency, resume, placement, ranking) with scripted
agents of known strength and the scripted Examiner: no real model."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from arena_fakes import ScriptedAgentForTests, make_tree, strength_examiner

from drarena.arena.match import MatchSettings
from drarena.arena.swiss import default_rounds, plan_round
from drarena.arena.tournament import Tournament
from drarena.ledger.folder import RunDir
from drarena.ledger.leaderboard import build_leaderboard, to_markdown
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests
from drarena.report.html import render_report

STRENGTHS = {"s1": 1, "s2": 2, "s3": 3, "s4": 4, "s5": 5}


def tournament(path: Path, names: dict[str, int] = STRENGTHS, seed: int = 3) -> Tournament:
    tree, docs = make_tree()
    other = tree.__class__(id="t2", root=tree.root, nodes=tree.nodes, edges=tree.edges)
    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
        backend=ScriptedBackendForTests([strength_examiner()] * 10_000),
    )
    agents = {n: ScriptedAgentForTests(n, report=f"strength={s}") for n, s in names.items()}
    return Tournament(
        RunDir(path),
        seed,
        agents,
        {"t1": tree, "t2": other},
        docs,
        client,
        MatchSettings(max_rounds=2),
        concurrency=3,
        log=lambda _: None,
    )


def test_plan_is_a_pure_function_of_seed_and_history() -> None:
    one = plan_round(list(STRENGTHS), ["t1"], 0, 9, [], [])
    two = plan_round(list(reversed(STRENGTHS)), ["t1"], 0, 9, [], [])
    assert one == two and one[0].bye is not None
    assert all(p.match_id.startswith("r0-") for p in one[1])


def test_tournament_ranks_by_strength_and_is_reproducible(tmp_path: Path) -> None:
    log = asyncio.run(tournament(tmp_path / "a").play())
    assert len({m.match_id for m in log}) == len(log) == default_rounds(5) * 2 * 2
    rows = build_leaderboard(list(STRENGTHS), log, resamples=100)
    assert rows[0].agent == "s5" and rows[-1].agent == "s1"
    again = asyncio.run(tournament(tmp_path / "b").play())
    first, second = (tmp_path / d / "matches.jsonl" for d in "ab")
    assert first.read_bytes() == second.read_bytes()
    assert [m.to_json() for m in again] == [m.to_json() for m in log]


def test_resume_after_a_crash_gives_the_same_log(tmp_path: Path) -> None:
    full = asyncio.run(tournament(tmp_path / "full").play())
    crashed = tmp_path / "crashed"
    asyncio.run(tournament(crashed).play())
    # simulate a kill mid-way: a few match files of later rounds lost, the log cut short
    files = sorted((crashed / "matches").glob("r[23]-*.json"))
    for f in random.Random(0).sample(files, 3):
        f.unlink()
    log_text = (crashed / "matches.jsonl").read_text().splitlines()
    (crashed / "matches.jsonl").write_text("\n".join(log_text[:5]) + "\n")
    resumed = asyncio.run(tournament(crashed).play())
    assert [m.to_json() for m in resumed] == [m.to_json() for m in full]
    full_log = tmp_path / "full" / "matches.jsonl"
    assert (crashed / "matches.jsonl").read_bytes() == full_log.read_bytes()


def test_add_agent_plays_placement_rounds_only(tmp_path: Path) -> None:
    base = {k: v for k, v in STRENGTHS.items() if k != "s3"}
    log = asyncio.run(tournament(tmp_path, base).play())
    before = {m.match_id for m in log}
    t = tournament(tmp_path, STRENGTHS)
    placed = asyncio.run(t.place("s3", log))
    new = [m for m in placed if m.match_id not in before]
    assert {m.match_id for m in placed} >= before
    assert new and all("s3" in (m.a, m.b) for m in new)
    assert len({(m.a, m.b) for m in new}) == len(new) // 2  # each rival once, on both trees
    rows = build_leaderboard(list(STRENGTHS), placed, resamples=50)
    order = [r.agent for r in rows]
    assert order.index("s4") < order.index("s3") < order.index("s2")


def test_report_escapes_untrusted_text(tmp_path: Path) -> None:
    evil = {"s1": 1, "s2": 2}
    t = tournament(tmp_path, evil)
    agent: Any = t.agents["s1"]  # the scripted agent: its report is settable
    agent.report = 'strength=1 <script>alert("x")</script> "><img src=x onerror=1>'
    log = asyncio.run(t.play())
    rows = build_leaderboard(list(evil), log, resamples=10)
    page = render_report("t <b>", None, rows, log)
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "t &lt;b&gt;" in page and "| s2 |" in to_markdown(rows)
