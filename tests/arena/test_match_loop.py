"""Control flow of the match loop on a small hand-made tree, with the scripted model backend
and scripted agents (no real model: the end-to-end match runs in test_match_e2e)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from arena_fakes import ScriptedAgentForTests, examiner, examiner_step, make_tree

from drarena.agents.base import MODEL_CALL_FAILED
from drarena.arena.match import MatchRunner, MatchSettings, match_seed
from drarena.corpus.treewalk import TreeWalker
from drarena.examiner.evolve import Move, Outcome
from drarena.ledger.records import MatchRecord
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply


def runner(backend: ScriptedBackendForTests, a=None, b=None, **settings: Any) -> MatchRunner:
    tree, docs = make_tree()
    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}), backend=backend
    )
    seed = match_seed(7, "A", "B", tree.id)
    walker = TreeWalker(tree=tree, pages=docs, rng=random.Random(seed))
    return MatchRunner(
        "m1",
        1,
        "A",
        "B",
        a or ScriptedAgentForTests("A"),
        b or ScriptedAgentForTests("B"),
        walker,
        client,
        MatchSettings(**settings),
        seed,
    )


AB = {"v": "A_MUCH_BETTER", "f": "DEPTH"}
BA_SAME = {"v": "B_MUCH_BETTER", "f": "DEPTH"}  # the swapped order agreeing with AB


async def test_decisive_first_round_ends_the_match() -> None:
    record = await runner(examiner([AB, BA_SAME])).run()
    assert record.outcome == Outcome.A_WINS and len(record.rounds) == 1
    assert (record.score.points_a, record.score.points_b) == (2, 0)
    first = record.rounds[0]
    assert first.depth == 1 and first.width == 2 and len(first.target_urls) == 2
    assert first.transition is None  # the match stopped: no move taken
    assert first.answer_a is not None and first.answer_a.wall_s == 0.0  # timings kept apart


async def test_transitions_follow_the_table_and_conversations_continue() -> None:
    a, b = ScriptedAgentForTests("A"), ScriptedAgentForTests("B")
    verdicts = [
        {"v": "A_BETTER", "f": "DEPTH"},
        {"v": "B_BETTER", "f": "DEPTH"},  # A +1
        {"v": "TIE", "q": "LOW"},
        {"v": "TIE", "q": "LOW"},  # low tie
        {"v": "B_BETTER", "f": "WIDTH"},
        {"v": "A_BETTER", "f": "WIDTH"},
    ]  # B +1
    r = runner(examiner(verdicts), a, b, max_rounds=3)
    record = await r.run()
    moves = [rd.transition.move if rd.transition else None for rd in record.rounds]
    assert moves == [Move.DEEPEN, Move.BACKTRACK_NARROW, None]
    depths = [rd.depth for rd in record.rounds]
    assert depths == [1, 2, 1]
    assert record.outcome == Outcome.TIE and record.score.points_a == record.score.points_b == 1
    # follow-ups continue each agent's own conversation; the backtrack after round 2 drops
    # the turn asked below the node it returns to (the reference's history cut)
    assert [len(c.history) for c in a.seen] == [0, 1, 1]
    assert a.seen[2].history[0].answer == "report 1"
    assert len(r.timings) == 6 and r.timings[0].wall_s == 1.5
    questions = [rd.task.task.question for rd in record.rounds if rd.task.task]
    assert len(set(questions)) == 3


async def test_failed_judge_voids_the_round_and_the_match() -> None:
    task = examiner_step([])  # tasks succeed; every judge reply is garbage (3 tries x 2)
    backend = ScriptedBackendForTests(
        [task, *[reply("not json")] * 6, task, *[reply("not json")] * 6]
    )
    record = await runner(backend, max_rounds=3, max_void_rounds=1).run()
    assert record.outcome == Outcome.VOID and record.score.rounds_scored == 0
    assert all("judge failed" in rd.void_reason for rd in record.rounds)
    assert record.score_a() is None  # never a tie


async def test_crashing_agent_voids_the_round_never_a_win() -> None:
    record = await runner(
        examiner([]), b=ScriptedAgentForTests("B", fail=True), max_rounds=2, max_void_rounds=1
    ).run()
    assert record.outcome == Outcome.VOID
    assert "agent B failed: RuntimeError: agent crashed" in record.rounds[0].void_reason
    assert record.rounds[0].answer_a is not None and record.rounds[0].judgment is None


async def test_an_answer_cut_by_a_failed_model_call_voids_the_round_never_judged() -> None:
    """The agent salvaged a report (react lists the pages it found) after its model call failed
    for good: an outage, so the round is void and the judge is never asked."""
    outage = f"{MODEL_CALL_FAILED}: role 'agent' ... after 3 attempt(s): 503"
    backend = examiner([])  # a judge verdict would be an error: there is none to give
    b = ScriptedAgentForTests("B", report="The research found these pages", error=outage)
    record = await runner(backend, b=b, max_rounds=2, max_void_rounds=1).run()
    assert record.outcome == Outcome.VOID and record.score.rounds_scored == 0
    assert all(f"agent B failed: {outage}" == rd.void_reason for rd in record.rounds)
    assert all(rd.judgment is None and rd.answer_b is not None for rd in record.rounds)
    judged = [r for r in backend.requests if r["response_format"]["json_schema"]["name"] != "task"]
    assert judged == []


async def test_an_agent_error_without_an_outage_is_still_judged() -> None:
    """A report whose agent noted some other problem (a limit, a tool error) is the agent's
    answer: it is judged, and can lose."""
    b = ScriptedAgentForTests("B", error="no answer call in the final reply")
    record = await runner(examiner([AB, BA_SAME]), b=b).run()
    assert record.outcome == Outcome.A_WINS and record.rounds[0].void_reason == ""


async def test_same_seed_same_record() -> None:
    verdicts = [{"v": "TIE", "q": "HIGH"}] * 2 + [AB, BA_SAME]
    one = await runner(examiner(list(verdicts)), max_rounds=3).run()
    two = await runner(examiner(list(verdicts)), max_rounds=3).run()
    assert one.to_json() == two.to_json()
    assert MatchRecord.from_json(one.to_json()) == one
    assert one.rounds[0].transition is not None
    assert one.rounds[0].transition.move == Move.DEEPEN_WIDEN
    assert one.rounds[1].width == 3


@pytest.mark.parametrize("seed", [1, 2])
def test_match_seed_depends_on_run_pair_and_tree(seed: int) -> None:
    assert match_seed(seed, "A", "B", "t") != match_seed(seed, "B", "A", "t")
    assert match_seed(seed, "A", "B", "t") != match_seed(seed + 10, "A", "B", "t")
    assert match_seed(seed, "A", "B", "t") == match_seed(seed, "A", "B", "t")


async def test_word_limit_counts_the_root_as_the_reference_does() -> None:
    """D is the node path's length with the root counted: a depth-1 node at W=2 asks for
    100 + 30*2 + 20*2 = 200 to 300 words, its depth-2 child for 220 to 320."""
    depth_loss = [{"v": "A_BETTER", "f": "DEPTH"}, {"v": "B_BETTER", "f": "DEPTH"}]
    record = await runner(examiner(depth_loss * 2), max_rounds=2).run()
    limits = [(rd.depth, rd.task.task.word_limit) for rd in record.rounds if rd.task.task]
    assert limits == [(1, (200, 300)), (2, (220, 320))]
