"""The match loop follows the DR-Arena reference where drarena used to differ (issue 16):
history cut on backtrack, the leaf fallback to widening, the 10-round limit, separate task
and judge roles at the paper's temperatures, and the ablation switches. Control flow only:
the scripted model backend and scripted agents (no real model)."""

from __future__ import annotations

import random
from typing import Any

from arena_fakes import ScriptedAgentForTests, examiner, make_tree

from drarena.agents.base import Conversation, Turn
from drarena.arena.match import MatchRunner, MatchSettings, cut_conversation, match_seed
from drarena.config.tournament import parse_config
from drarena.corpus.treewalk import TreeWalker
from drarena.examiner.evolve import Move
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests

A_WINS = [{"v": "A_BETTER", "f": "DEPTH"}, {"v": "B_BETTER", "f": "DEPTH"}]  # both orders
B_WINS = [{"v": "B_BETTER", "f": "DEPTH"}, {"v": "A_BETTER", "f": "DEPTH"}]
LOW_TIE = [{"v": "TIE", "q": "LOW"}] * 2


def runner(
    backend: ScriptedBackendForTests,
    a: ScriptedAgentForTests | None = None,
    b: ScriptedAgentForTests | None = None,
    models: ModelsConfig | None = None,
    **settings: Any,
) -> MatchRunner:
    tree, docs = make_tree()
    client = ModelClient(
        models or ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}), backend=backend
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
        settings if isinstance(settings, MatchSettings) else MatchSettings(**settings),
        seed,
    )


async def test_backtrack_cuts_both_conversations_back() -> None:
    """Round 1 at depth 1, A wins on DEPTH: down to depth 2. Round 2 a low tie: back up to
    depth 1, and the turn asked at depth 2 leaves both conversations (reference
    `_backtrack` restores the history length saved at the descend)."""
    a, b = ScriptedAgentForTests("A"), ScriptedAgentForTests("B")
    record = await runner(examiner(A_WINS + LOW_TIE + B_WINS), a, b, max_rounds=3).run()
    assert [rd.depth for rd in record.rounds] == [1, 2, 1]
    back = record.rounds[1].transition
    assert back is not None and back.move == Move.BACKTRACK_NARROW and back.history_turns == 1
    for agent in (a, b):
        third = agent.seen[2]
        assert [t.question for t in third.history] == [agent.seen[0].question]
        assert third.history[0].answer == "report 1"
    assert record.rounds[0].transition is not None
    assert record.rounds[0].transition.history_turns is None  # a descend cuts nothing


async def test_backtrack_keeps_every_turn_when_the_switch_is_off() -> None:
    a = ScriptedAgentForTests("A")
    record = await runner(
        examiner(A_WINS + LOW_TIE + B_WINS), a, max_rounds=3, cut_history_on_backtrack=False
    ).run()
    assert [len(c.history) for c in a.seen] == [0, 1, 2]
    assert record.rounds[1].transition is not None
    assert record.rounds[1].transition.history_turns is None


def test_cut_conversation_keeps_the_first_turns() -> None:
    conv = Conversation("q3", (Turn("q1", "a1"), Turn("q2", "a2")))
    assert cut_conversation(conv, "a3", 3) == (conv, "a3")
    assert cut_conversation(conv, "a3", 2) == (Conversation("q2", (Turn("q1", "a1"),)), "a2")
    assert cut_conversation(conv, "a3", 1) == (Conversation("q1"), "a1")
    assert cut_conversation(conv, "a3", 0) == (None, "")
    assert cut_conversation(None, "", 0) == (None, "")


async def test_depth_loss_at_a_leaf_widens() -> None:
    """The fake tree's leaves are at depth 3: a DEPTH loss there cannot go deeper, so the
    walk widens (W+1) as the reference's failed `_advance_tree` does."""
    verdicts = A_WINS + B_WINS + A_WINS + B_WINS
    record = await runner(examiner(verdicts), max_rounds=4).run()
    assert [rd.depth for rd in record.rounds] == [1, 2, 3, 3]
    at_leaf = record.rounds[2].transition
    assert at_leaf is not None
    assert (at_leaf.move, at_leaf.depth, at_leaf.width) == (Move.WIDEN, 3, 3)


async def test_depth_loss_at_a_leaf_stays_when_the_fallback_is_off() -> None:
    verdicts = A_WINS + B_WINS + A_WINS + B_WINS
    record = await runner(examiner(verdicts), max_rounds=4, leaf_fallback_widen=False).run()
    at_leaf = record.rounds[2].transition
    assert at_leaf is not None
    assert (at_leaf.move, at_leaf.depth, at_leaf.width) == (Move.DEEPEN, 3, 2)


async def test_a_close_match_plays_the_papers_ten_rounds() -> None:
    assert MatchSettings().max_rounds == 10
    width_loss = [{"v": "A_BETTER", "f": "WIDTH"}, {"v": "B_BETTER", "f": "WIDTH"}]
    width_loss_b = [{"v": "B_BETTER", "f": "WIDTH"}, {"v": "A_BETTER", "f": "WIDTH"}]
    record = await runner(examiner((width_loss + width_loss_b) * 5)).run()
    assert len(record.rounds) == 10 and record.score.rounds_scored == 10
    assert record.score.points_a == record.score.points_b == 5


async def test_first_round_only_ends_after_the_first_scored_round() -> None:
    record = await runner(examiner([{"v": "TIE", "q": "HIGH"}] * 2), first_round_only=True).run()
    assert len(record.rounds) == 1 and record.rounds[0].transition is None
    assert record.score.rounds_scored == 1


async def test_flat_context_shows_target_pages_only() -> None:
    backend = examiner(A_WINS)
    await runner(backend, max_rounds=1, flat_context=True).run()
    prompt = backend.requests[0]["messages"][0]["content"]
    chain = prompt.split("A. REASONING CHAIN", 1)[1].split("B. TARGET PAGES", 1)[0]
    assert "<<<BEGIN SOURCE" not in chain  # no ancestor pages
    assert "relation:" not in prompt  # no link relations
    assert prompt.count("<<<BEGIN SOURCE") == 2  # the two targets, numbered from 1
    assert "<<<BEGIN SOURCE 1>>>" in prompt

    full = examiner(A_WINS)
    await runner(full, max_rounds=1).run()
    full_prompt = full.requests[0]["messages"][0]["content"]
    assert full_prompt.count("<<<BEGIN SOURCE") == 3 and "relation: subtopic" in full_prompt


async def test_task_and_judge_roles_use_the_papers_temperatures() -> None:
    """A tournament config with only an Examiner role gets a taskgen and a judge role
    derived from it; the match sends tasks to the first (0.7) and judgments to the second
    (0.1)."""
    config = parse_config(
        {
            "name": "t",
            "snapshot": "snapshots/pydocs",
            "models": {
                "roles": {
                    "examiner": {"model": "openai/scripted", "sampling": {"temperature": 0.0}},
                    "agent": {"model": "openai/scripted"},
                }
            },
            "agents": [{"name": "a", "kind": "oracle"}, {"name": "b", "kind": "oracle"}],
        },
        "t.yaml",
    )
    backend = examiner(A_WINS)
    await runner(backend, models=config.models, max_rounds=1).run()
    temps = {
        r["response_format"]["json_schema"]["name"]: r["temperature"] for r in backend.requests
    }
    assert temps["task"] == 0.7
    assert [t for n, t in temps.items() if n != "task"] == [0.1]


async def test_page_chars_cuts_each_page() -> None:
    backend = examiner(A_WINS)
    record = await runner(backend, max_rounds=1, page_chars=300).run()
    prompt = backend.requests[0]["messages"][0]["content"]
    assert prompt.count("(text cut to 300 of ") == 3
    assert len(record.rounds[0].task.pages_cut) == 3


async def test_task_generation_sees_the_last_two_ancestors() -> None:
    """At depth 3 the reference shows the two nearest ancestors (path[-3:-1]), not the root;
    chain_ancestors: null shows all three, 0 none (the paper's No Logic Chain ablation)."""
    verdicts = A_WINS + B_WINS + A_WINS
    counts = {}
    for ancestors in (2, None, 0):
        backend = examiner(verdicts)
        await runner(backend, max_rounds=3, chain_ancestors=ancestors).run()
        task_prompts = [
            r["messages"][0]["content"]
            for r in backend.requests
            if r["response_format"]["json_schema"]["name"] == "task"
        ]
        chain = task_prompts[2].split("A. REASONING CHAIN", 1)[1].split("B. TARGET PAGES")[0]
        counts[ancestors] = chain.count("<<<BEGIN SOURCE")
        if ancestors == 2:
            assert "/r.html" not in chain  # the root is not among the last two ancestors
    assert counts == {2: 2, None: 3, 0: 0}
