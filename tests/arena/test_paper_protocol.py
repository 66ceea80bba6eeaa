"""`protocol: paper` resolves every switch to what the DR-Arena reference code does (issue 35).

The table below was written from the reference repository (iNLP-Lab/DR-Arena, commit
08f3835: config.py, core/evolvement_loop.py, core/examiner.py, core/agents.py,
tournament_cli.py), one row per resolved field with the line it was read from. A field
without a counterpart in the reference says so and why drarena's value stands; every field
of MatchSettings must have a row, so a new switch cannot slip past the preset unexamined.

The match tests play on the scripted model backend with scripted agents: control flow only.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from arena_fakes import ScriptedAgentForTests, examiner_step, make_tree

from drarena.arena.match import MatchRunner, MatchSettings, match_seed, tree_number
from drarena.config.tournament import ISSUE35_KEYS, PAPER_MATCH, legacy_match, parse_config
from drarena.corpus.records import Doc, Tree
from drarena.corpus.treewalk import TreeWalker
from drarena.examiner.evolve import Move, Outcome
from drarena.examiner.taskgen import fit_pages
from drarena.models.backend import BackendReply
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests
from drarena.runs.session import config_digest, load_trees

RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded-run" / "run.json"

# field -> the value `protocol: paper` resolves it to. Reference lines in the comments.
PAPER_TABLE: dict[str, Any] = {
    # config.py 84: MAX_ROUNDS = 10; evolvement_loop.py 281
    "max_rounds": 10,
    # config.py 85: WIN_THRESHOLD = 2.0; evolvement_loop.py 373-376
    "gap_to_stop": 2,
    # evolvement_loop.py 323-326 (task error: next round), 355-357 (judge error: skipped),
    # no count of either: no limit
    "max_void_rounds": None,
    # evolvement_loop.py 121 (depth >= 1 only), 129-131 (the shallowest content node)
    "start_depth": 1,
    # evolvement_loop.py 43: self.difficulty_nodes = 2
    "start_width": 2,
    # examiner.py 29-30: each node's whole `content` goes into the prompt (the 800-character
    # cut of evolvement_loop.py 90-92 is only for the log and the has-content check)
    "page_chars": None,
    # examiner.py 29-30: no total cap either
    "page_budget_chars": None,
    # evolvement_loop.py 316-326: one generate_question call; an error skips the round
    "task_attempts": 1,
    # evolvement_loop.py 106 and 259: len(content.strip()) > 20, i.e. at least 21
    "content_min_chars": 21,
    # drarena's name for the one Examiner (evolvement_loop.py 30: ExaminerAgent)
    "examiner_role": "examiner",
    # examiner.py 103 -> _call_llm(prompt) at its default temp=0.7 (line 15)
    "taskgen_role": "taskgen",
    # examiner.py 193: _call_llm(prompt, temp=0.1)
    "judge_role": "judge",
    # examiner.py 113: one judge
    "judges": None,
    # evolvement_loop.py 249-252: the histories cut back to the saved length
    "cut_history_on_backtrack": True,
    # evolvement_loop.py 392-399: a DEEP loss that cannot descend widens
    "leaf_fallback_widen": True,
    # examiner.py 88-98: checklists of any length
    "checklist_max_items": None,
    # no counterpart: the reference only asks the model not to name titles (examiner.py
    # 57-60); drarena checks the question by code as well (docs/deviations.md, row 13)
    "forbid_entity_names": True,
    # evolvement_loop.py 283: depth_level = len(node_path_stack); examiner.py 25
    "word_limit_root_counted": True,
    # evolvement_loop.py 149-152: node_path_stack[-3:-1]
    "chain_ancestors": 2,
    # paper 4.3's ablations, off in the main protocol
    "flat_context": False,
    "first_round_only": False,
    # examiner.py 122-190: the reference's judge prompt itself (prompts/paper.txt)
    "judge_prompt": "paper",
    # examiner.py 85-100: the task's JSON has no length bounds
    "task_text_caps": False,
    # examiner.py 35-101
    "taskgen_prompt": "taskgen",
    # examiner.py 136-142: both answers in one prompt
    "judge_mode": "pairwise",
    # examiner.py 193: one judgment per round
    "judge_orders": 1,
    # tournament_cli.py 200-204: swapped = tree_num % 2 != 0, for the whole match
    "judge_order": "tree",
    # examiner.py 131-133: the checklist is in the judge prompt
    "judge_sees_checklist": True,
    # evolvement_loop.py 36 and 45 (stack [root, ...], snapshots [0]), 244-255 (_backtrack
    # pops to the root and restores history length 0), 378-383 (LOW tie; at the root W = 2)
    "backtrack_to_root": True,
    # agents.py 25-42: the answer first, no filler, the limit on the body only, [n] markers
    # and a "## References" list (drarena's wording: drarena.agents.common)
    "agent_instruction": "paper",
    # agents.py 54-55: "Error: No response from API."; evolvement_loop.py 342-349: an
    # exception's text is the answer; judged at line 353 like any other
    "failed_answers": "judged",
    # kept (docs/deviations.md row 18): the LLM judge of the rows above decides every round;
    # the evidence judge grades alongside and decides nothing
    "judge": {"kind": "hybrid", "llm": {"kind": "pairwise", "prompt": "paper", "orders": 1}},
    # kept (docs/deviations.md row 17): the reference's prompt, items tied to their pages
    "taskgen": {"kind": "llm", "prompt": "taskgen", "ground": True},
}
# tournament_cli.py 65-72 and 186-190: every pairing plays every tree file
PAPER_TREES_COUNT = None


def base(**extra: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "snapshot": "snapshots/pydocs",
        "models": {"roles": {"examiner": {"model": "served"}, "agent": {"model": "served"}}},
        "agents": [{"name": "a", "kind": "oracle"}, {"name": "b", "kind": "oracle"}],
        **extra,
    }


def paper() -> MatchSettings:
    return parse_config(base(protocol="paper"), "t.yaml").match


def test_the_table_covers_every_match_field() -> None:
    assert set(PAPER_TABLE) == set(MatchSettings.model_fields)
    assert set(PAPER_MATCH) <= set(PAPER_TABLE)


def test_paper_resolves_every_field_as_the_reference_does() -> None:
    config = parse_config(base(protocol="paper"), "t.yaml")
    resolved = config.match.model_dump(mode="json")
    for key, want in PAPER_TABLE.items():
        got = resolved[key]
        if key == "judge":
            assert got["kind"] == want["kind"]
            llm = got["args"]["llm"]
            assert llm["kind"] == want["llm"]["kind"]
            assert llm["args"]["prompt"] == want["llm"]["prompt"]
            assert llm["args"]["orders"] == want["llm"]["orders"]
            assert llm["args"]["sees_checklist"] is True
        elif key == "taskgen":
            assert got["kind"] == want["kind"]
            assert got["args"]["prompt"] == want["prompt"]
            assert got["args"]["ground"] is want["ground"]
        else:
            assert got == want, key
    assert config.trees.count is PAPER_TREES_COUNT
    # what run.json stores parses back to the same config
    assert parse_config(config.model_dump(mode="json"), "run.json") == config


def test_written_keys_still_win_over_the_preset() -> None:
    config = parse_config(
        base(
            protocol="paper",
            trees={"count": 2},
            match={"failed_answers": "void", "page_chars": 900, "max_void_rounds": 3},
        ),
        "t.yaml",
    )
    assert config.trees.count == 2
    assert (config.match.failed_answers, config.match.page_chars) == ("void", 900)
    assert config.match.max_void_rounds == 3
    assert parse_config(base(protocol="paper", trees={"ids": ["tree-001"]}), "t").trees.count == 3


def test_a_paper_run_stored_before_issue_35_replays_with_the_rules_it_had() -> None:
    stored = parse_config(base(protocol="paper"), "t").model_dump(mode="json")
    for key in ISSUE35_KEYS:
        del stored["match"][key]
    old = parse_config(legacy_match(stored), "run.json").match
    assert (old.content_min_chars, old.judge_order) == (500, "round")
    assert (old.backtrack_to_root, old.failed_answers) == (False, "void")
    assert old.agent_instruction == "drarena"


def test_new_switches_at_their_defaults_leave_the_digest_as_it_was() -> None:
    """A config that does not use issue 35's switches keeps the digest it had before them
    (a stored run still resumes); setting one changes it."""
    import hashlib

    from drarena.runs.session import NOT_DIGESTED

    config = parse_config(base(), "t.yaml")
    dump = config.model_dump(mode="json", exclude=NOT_DIGESTED)
    for key in ISSUE35_KEYS:
        del dump["match"][key]
    before = "sha256:" + hashlib.sha256(json.dumps(dump, sort_keys=True).encode()).hexdigest()
    assert config_digest(config) == before
    assert config_digest(parse_config(base(match={"failed_answers": "judged"}), "t")) != before
    # a run recorded long before (the fixture) resolves with every new switch at its default
    stored = json.loads(RECORDED.read_text(encoding="utf-8"))["config"]
    old = parse_config(legacy_match(stored), "run.json").match
    assert (old.failed_answers, old.backtrack_to_root, old.judge_order) == ("void", False, "round")
    assert old.content_min_chars == 500


def test_tree_numbers_as_the_reference_reads_them() -> None:
    assert [tree_number(t) for t in ("tree_0001", "tree_0030", "tree-003", "t1", "x")] == [
        1,
        30,
        3,
        1,
        0,
    ]


def test_page_chars_null_keeps_each_page_whole() -> None:
    long = "word " * 42_000  # 210,000 characters, as the largest released pages
    assert fit_pages([long], None, None)[0].text == long
    assert not fit_pages([long], None, None)[0].cut
    assert len(fit_pages([long], 15000, None)[0].text) == 15000


# -- the match loop under the preset, on the scripted backend --------------------------------

LOW = {"v": "TIE", "q": "LOW"}


def runner(
    backend: ScriptedBackendForTests,
    settings: MatchSettings,
    a: ScriptedAgentForTests,
    b: ScriptedAgentForTests,
    tree_id: str = "t1",
    tree_docs: tuple[Tree, dict[str, Doc]] | None = None,
) -> MatchRunner:
    tree, docs = tree_docs or make_tree()
    tree = dataclasses.replace(tree, id=tree_id)
    models = ModelsConfig(roles={"examiner": {"model": "openai/scripted"}})
    seed = match_seed(7, "A", "B", tree.id)
    walker = TreeWalker(
        tree=tree, pages=docs, rng=random.Random(seed), min_chars=settings.content_min_chars
    )
    client = ModelClient(models, backend=backend)
    return MatchRunner("m1", 1, "A", "B", a, b, walker, client, settings, seed)


def scripted(verdicts: list[dict[str, str]]) -> ScriptedBackendForTests:
    return ScriptedBackendForTests([examiner_step(verdicts)] * 200)


def judge_prompts(backend: ScriptedBackendForTests) -> list[str]:
    return [
        r["messages"][-1]["content"]
        for r in backend.requests
        if r["response_format"]["json_schema"]["name"] != "task"
    ]


async def test_a_low_tie_at_the_start_depth_goes_to_the_root_and_clears_the_history() -> None:
    """Round 1 at depth 1 is a LOW tie: the reference backtracks to the root (its stack holds
    the root) and restores history length 0; the root is its own only target. A LOW tie at
    the root cannot go up: W back to 2. drarena's default stays on the depth-1 node."""
    a, b = ScriptedAgentForTests("A"), ScriptedAgentForTests("B")
    settings = paper().model_copy(update={"max_rounds": 3})
    backend = scripted([LOW, LOW, LOW])
    record = await runner(backend, settings, a, b).run()
    assert [rd.depth for rd in record.rounds] == [1, 0, 0]
    first, second = record.rounds[0].transition, record.rounds[1].transition
    assert first is not None and second is not None
    assert (first.move, first.depth, first.width, first.history_turns) == (
        Move.BACKTRACK_NARROW,
        0,
        2,
        0,
    )
    assert (second.depth, second.width) == (0, 2)
    tree, _ = make_tree()
    root_url = tree.node(tree.root).url
    assert record.rounds[1].target_urls == (root_url,)
    for agent in (a, b):  # round 2 starts a new conversation: nothing of round 1 is kept
        assert agent.seen[1].history == ()
    # drarena's default: the walk never goes above the start depth
    today = await runner(
        scripted([LOW] * 6), MatchSettings(max_rounds=3, judge_orders=1), *agents()
    ).run()
    assert [rd.depth for rd in today.rounds] == [1, 1, 1]


def agents() -> tuple[ScriptedAgentForTests, ScriptedAgentForTests]:
    return ScriptedAgentForTests("A", "alpha"), ScriptedAgentForTests("B", "beta")


@pytest.mark.parametrize(("tree_id", "b_first"), [("tree_0001", True), ("tree_0002", False)])
async def test_the_order_is_swapped_per_tree_for_the_whole_match(
    tree_id: str, b_first: bool
) -> None:
    """tournament_cli.py 202-204: on an odd-numbered tree the pairing's second agent is
    "Agent A" for every round of the match. drarena's default alternates per round."""
    high = {"v": "TIE", "q": "HIGH"}
    backend = scripted([high] * 3)
    settings = paper().model_copy(update={"max_rounds": 3})
    await runner(backend, settings, *agents(), tree_id=tree_id).run()
    prompts = judge_prompts(backend)
    assert len(prompts) == 3
    assert [p.index("beta") < p.index("alpha") for p in prompts] == [b_first] * 3
    # drarena's default with one order: alternates round by round
    rounds = scripted([high] * 3)
    await runner(
        rounds, MatchSettings(max_rounds=3, judge_orders=1), *agents(), tree_id=tree_id
    ).run()
    order = [p.index("beta") < p.index("alpha") for p in judge_prompts(rounds)]
    assert order[0] != order[1] and order[1] != order[2]


def prefers_a_real_answer() -> Any:
    """A scripted judge (control flow only) that gives the round to whichever answer is not
    an error text, MUCH_BETTER, failing the loser on WIDTH; a HIGH tie otherwise."""
    tasks = examiner_step([])

    def step(request: Mapping[str, Any]) -> BackendReply:
        if request["response_format"]["json_schema"]["name"] == "task":
            return tasks(request)
        prompt = request["messages"][-1]["content"]
        first = prompt.find("Error: ")
        second = prompt.find("report ")
        verdict: dict[str, str] = {"v": "TIE", "q": "HIGH"}
        if first >= 0 and second >= 0:
            verdict = {"v": "B_BETTER" if first < second else "A_BETTER", "f": "WIDTH"}
        return examiner_step([verdict])(request)

    return step


async def test_an_erroring_agent_loses_on_its_error_text_under_the_preset() -> None:
    """The reference judges an agent that raised on its error text (it loses); drarena's
    default voids the round, so a flaky agent escaped its loss."""
    settings = paper().model_copy(update={"max_rounds": 2})
    a, b = ScriptedAgentForTests("A", fail=True), ScriptedAgentForTests("B")
    backend = ScriptedBackendForTests([prefers_a_real_answer()] * 50)
    record = await runner(backend, settings, a, b).run()
    assert [rd.void_reason for rd in record.rounds] == ["", ""]
    first = record.rounds[0]
    assert first.answer_a is not None
    assert first.answer_a.report == "Error: RuntimeError: agent crashed"
    assert first.answer_a.error == "RuntimeError: agent crashed"
    assert (record.score.points_a, record.score.points_b) == (0, 2)
    assert record.outcome == Outcome.B_WINS
    # the failing agent's conversation is not extended (evolvement_loop.py 343-345); the
    # other agent's is
    assert [len(c.history) for c in b.seen] == [0, 1]
    assert [len(c.history) for c in a.seen] == [0, 0]

    # drarena's default: the round is void and nobody scores
    void = await runner(
        ScriptedBackendForTests([prefers_a_real_answer()] * 50),
        MatchSettings(max_rounds=2, judge_orders=1),
        ScriptedAgentForTests("A", fail=True),
        ScriptedAgentForTests("B"),
    ).run()
    assert all(rd.void_reason.startswith("agent A failed") for rd in void.rounds)
    assert void.outcome == Outcome.VOID


async def test_an_empty_report_is_judged_as_an_error_too() -> None:
    settings = paper().model_copy(update={"max_rounds": 1})
    b = ScriptedAgentForTests("B")

    class Empty(ScriptedAgentForTests):
        async def answer(self, conversation: Any, word_limit: tuple[int, int]) -> Any:
            got = await super().answer(conversation, word_limit)
            return dataclasses.replace(got, report="   ")

    backend = ScriptedBackendForTests([prefers_a_real_answer()] * 50)
    record = await runner(backend, settings, Empty("A"), b).run()
    answer = record.rounds[0].answer_a
    assert answer is not None and answer.report == "Error: empty report"
    assert record.outcome == Outcome.B_WINS


def short_page_tree() -> tuple[Tree, dict[str, Doc]]:
    """The fake tree with every page cut to 30 characters: more than the reference's 20,
    fewer than drarena's 500."""
    tree, docs = make_tree()
    short = {k: dataclasses.replace(d, contents=d.contents[:30], chars=30) for k, d in docs.items()}
    nodes = tuple(dataclasses.replace(n, chars=30) for n in tree.nodes)
    return Tree(tree.id, tree.root, nodes, tree.edges), short


async def test_short_pages_are_usable_at_the_references_threshold() -> None:
    record = await runner(
        scripted([LOW]),
        paper().model_copy(update={"max_rounds": 1}),
        *agents(),
        tree_docs=short_page_tree(),
    ).run()
    assert record.rounds and record.rounds[0].depth == 1 and not record.void_reason
    today = await runner(
        scripted([LOW]), MatchSettings(max_rounds=1), *agents(), tree_docs=short_page_tree()
    ).run()
    assert not today.rounds and today.void_reason.startswith("no starting node")


def test_every_tree_of_the_snapshot_under_the_preset(tmp_path: Path) -> None:
    from drarena.corpus.trees import TREES_DIR, TREES_INDEX, tree_to_json

    tree, _ = make_tree()
    folder = tmp_path / TREES_DIR
    folder.mkdir()
    entries = []
    for i in range(1, 6):
        t = dataclasses.replace(tree, id=f"tree_{i:04d}")
        (folder / f"{t.id}.json").write_text(tree_to_json(t), encoding="utf-8")
        entries.append({"id": t.id, "file": f"{t.id}.json"})
    (folder / TREES_INDEX).write_text(json.dumps({"trees": entries}), encoding="utf-8")
    config = parse_config(base(protocol="paper", snapshot=str(tmp_path)), "t.yaml")
    assert sorted(load_trees(config)) == [f"tree_{i:04d}" for i in range(1, 6)]
    three = parse_config(base(snapshot=str(tmp_path)), "t.yaml")
    assert len(load_trees(three)) == 3


async def test_the_report_counts_each_agents_failed_rounds() -> None:
    """Voided under drarena's default, judged (and lost) under the preset: both show, per
    agent, in report.html's "Failed answers" table."""
    from drarena.ledger.leaderboard import failed_rounds
    from drarena.report.sections.failed import failed_table

    judged = await runner(
        ScriptedBackendForTests([prefers_a_real_answer()] * 50),
        paper().model_copy(update={"max_rounds": 2}),
        ScriptedAgentForTests("A", fail=True),
        ScriptedAgentForTests("B"),
    ).run()
    voided = await runner(
        ScriptedBackendForTests([prefers_a_real_answer()] * 50),
        MatchSettings(max_rounds=3, judge_orders=1, max_void_rounds=5),
        ScriptedAgentForTests("A", fail=True),
        ScriptedAgentForTests("B"),
    ).run()
    counts = {f.agent: (f.voided, f.judged) for f in failed_rounds(["A", "B"], [judged, voided])}
    assert counts == {"A": (3, 2), "B": (0, 0)}
    assert "<td>A</td><td class=num>3</td><td class=num>2</td>" in failed_table(
        ["B", "A"], [judged, voided]
    )


async def test_agents_are_told_the_papers_instruction_under_the_preset() -> None:
    """Every round's conversation carries the match's instruction (a follow-up and a cut one
    too), and a built-in agent's last message ends with it: the reference's rules under the
    preset, drarena's one line by default (unchanged, so recorded runs replay)."""
    from drarena.agents.common import conversation_messages

    a, b = agents()
    settings = paper().model_copy(update={"max_rounds": 3})
    await runner(scripted([{"v": "TIE", "q": "HIGH"}, LOW, LOW]), settings, a, b).run()
    assert [c.instruction for c in a.seen] == ["paper"] * 3
    assert len(a.seen[1].history) == 1  # a follow-up keeps it
    paper_msg = conversation_messages("sys", a.seen[1], (230, 330))[-1]["content"]
    assert "Answer length: 230-330 words" in paper_msg
    assert "body of the answer only" in paper_msg and "'## References'" in paper_msg
    assert "Write a Markdown report" not in paper_msg

    c, d = agents()
    await runner(scripted([LOW] * 2), MatchSettings(max_rounds=1, judge_orders=1), c, d).run()
    assert c.seen[0].instruction == "drarena"
    plain = conversation_messages("sys", c.seen[0], (200, 300))[-1]["content"]
    assert (
        plain == f"Question: {c.seen[0].question}\n\nWrite a Markdown report of 200 to 300 words."
    )


def test_the_task_text_caps_are_lifted_under_the_preset() -> None:
    """The reference bounds no part of the task (core/examiner.py 85-100); drarena's default
    schema caps the question, items and rationale at 400, 160 and 300 characters, which
    cut a long question short under constrained decoding (or failed the task)."""
    from drarena.examiner.taskcheck import task_schema

    capped = task_schema(3, 2)
    assert capped["properties"]["question"]["maxLength"] == 400
    assert capped["properties"]["rationale"]["maxLength"] == 300
    rules = paper().task_rules()
    assert rules.text_caps is False
    free = task_schema(3, 2, text_caps=rules.text_caps)
    assert "maxLength" not in free["properties"]["question"]
    assert "maxLength" not in free["properties"]["rationale"]
    assert "maxLength" not in free["properties"]["checklist_depth"]["items"]["properties"]["item"]
    assert free["properties"]["question"]["minLength"] == 1
    assert MatchSettings().task_rules().text_caps is True
