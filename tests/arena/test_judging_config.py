"""The `# judging` block of MatchSettings: defaults, selection by name or file, one-line
errors, the order alternation of judge_orders: 1, and the legacy replay rule."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from arena_fakes import ScriptedAgentForTests, examiner_step, make_tree

from drarena.arena.match import MatchRunner, MatchSettings, match_seed
from drarena.config.tournament import parse_config
from drarena.corpus.treewalk import TreeWalker
from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.evolve import Outcome
from drarena.examiner.judge import JudgeMode
from drarena.ledger.records import MatchRecord
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.runs.execute import legacy_judging


def config(**match: object) -> dict:
    return {
        "name": "t",
        "snapshot": "snapshots/pydocs",
        "models": {"roles": {"examiner": {"model": "openai/x"}}},
        "agents": [{"name": "a", "kind": "closed_book"}, {"name": "b", "kind": "closed_book"}],
        "match": match,
    }


def test_defaults_follow_the_paper_with_both_orders() -> None:
    m = MatchSettings()
    assert (m.judge_prompt, m.taskgen_prompt, m.judge_mode, m.judge_orders) == (
        "drarena",
        "taskgen",
        JudgeMode.PAIRWISE,
        2,
    )
    assert m.judge_sees_checklist and m.template_specs() == {
        "taskgen": "taskgen",
        "judge": "drarena",
    }


def test_selection_by_name_and_by_file(tmp_path: Path) -> None:
    mine = tmp_path / "taskgen.txt"
    mine.write_text("Mine.\n" + templates.load("taskgen"), encoding="utf-8")
    got = parse_config(
        config(judge_prompt="checklist-first", taskgen_prompt=str(mine), judge_mode="both"), "c"
    )
    assert got.match.template_specs() == {
        "taskgen": str(mine),
        "judge": "checklist-first",
        "pointwise": "pointwise",
    }
    pointwise = parse_config(config(judge_mode="pointwise"), "c").match
    assert "judge" not in pointwise.template_specs()  # the pairwise prompt is not used


@pytest.mark.parametrize(
    ("match", "message"),
    [
        ({"judge_prompt": "nope"}, r"^c: match\.judge_prompt: .*no prompt template named 'nope'"),
        ({"taskgen_prompt": "x/none.txt"}, r"^c: match\.taskgen_prompt: .*x/none\.txt not found"),
        ({"judge_orders": 3}, r"^c: match\.judge_orders: "),
        ({"judge_mode": "majority"}, r"^c: match\.judge_mode: "),
    ],
)
def test_bad_choices_are_one_line_naming_the_field(match: dict, message: str) -> None:
    with pytest.raises(DrarenaError, match=message) as err:
        parse_config(config(**match), "c")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("judge_prompt", "Judge $questoin", r"missing \['answer_a', .*unknown \['questoin'\]"),
        ("judge_prompt", "no variables at all", r"missing \['answer_a', "),
        ("taskgen_prompt", "$question $answer_a", r"unknown \['answer_a', 'question'\]"),
    ],
)
def test_a_prompt_file_with_the_wrong_variables_is_refused_at_config(
    tmp_path: Path, field: str, text: str, message: str
) -> None:
    """A typo in a prompt file used to pass the config and void every round at its first
    judging, after both agents had spent their calls; the config check now names it."""
    mine = tmp_path / "mine.txt"
    mine.write_text(text, encoding="utf-8")
    with pytest.raises(DrarenaError, match=rf"^c: match\.{field}: .*{message}") as err:
        parse_config(config(**{field: str(mine)}), "c")
    assert "\n" not in str(err.value)


def test_shipped_templates_use_their_slots_variables() -> None:
    """SLOT_VARIABLES (what the config check asks of a file) is what the renderers fill: the
    shipped templates, which they render in every test run, use exactly those."""
    assert templates.resolve("taskgen").variables() == templates.SLOT_VARIABLES["taskgen"]
    for name in ("drarena", "checklist-first"):
        assert templates.resolve(name).variables() == templates.SLOT_VARIABLES["judge"]
    # the reference's own judge prompt has the reference's shape (judge.judge_prompt)
    assert templates.resolve("paper").variables() == templates.REFERENCE_JUDGE_VARIABLES


def test_one_order_alternates_within_a_match() -> None:
    m = MatchSettings(judge_orders=1)
    assert [m.judge_options(7, i).swap for i in range(4)] == [True, False, True, False]
    assert [m.judge_options(8, i).swap for i in range(4)] == [False, True, False, True]
    assert not any(MatchSettings().judge_options(7, i).swap for i in range(4))  # two orders


def test_a_run_recorded_before_the_choice_replays_with_the_v1_prompt() -> None:
    old = config()
    old["match"] = {"max_rounds": 1}
    assert parse_config(legacy_judging(old), "c").match.judge_prompt == "judge"
    new = config(judge_prompt="checklist-first")
    assert legacy_judging(new) == new
    assert templates.LEGACY_JUDGE_PROMPT in templates.shipped_names()


def judge_runner(step: Any, **settings: Any) -> MatchRunner:
    tree, docs = make_tree()
    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
        backend=ScriptedBackendForTests([step] * 50),
    )
    seed = match_seed(7, "A", "B", tree.id)
    return MatchRunner(
        "m1",
        1,
        "A",
        "B",
        ScriptedAgentForTests("A", report="Alpha found entity one and detail one clearly"),
        ScriptedAgentForTests("B", report="Beta says nothing useful here at all"),
        TreeWalker(tree=tree, pages=docs, rng=random.Random(seed)),
        client,
        MatchSettings(**settings),
        seed,
    )


async def test_one_order_in_the_match_loop_alternates_the_order_shown() -> None:
    tasks = examiner_step([{"v": "TIE", "q": "HIGH"}] * 3)
    shown: list[str] = []

    def step(request: Mapping[str, Any]) -> Any:
        prompt = request["messages"][0]["content"]
        if request["response_format"]["json_schema"]["name"] == "verdict":
            shown.append("A" if prompt.index("Alpha found") < prompt.index("Beta says") else "B")
        return tasks(request)

    r = judge_runner(step, judge_orders=1, max_rounds=3)
    record = await r.run()
    assert len(record.rounds) == 3 and len(shown) == 3  # one judgment per round
    first = "B" if r.seed % 2 else "A"
    assert shown == [first, "A" if first == "B" else "B", first]
    for rnd in record.rounds:
        assert rnd.judgment is not None and len(rnd.judgment.orders()) == 1


async def test_pointwise_in_the_match_loop_records_verified_grades() -> None:
    tasks = examiner_step([])

    def step(request: Mapping[str, Any]) -> Any:
        if request["response_format"]["json_schema"]["name"] != "grades":
            return tasks(request)
        prompt = request["messages"][0]["content"]
        n = int(re.search(r"CHECKLIST \((\d+) items", prompt).group(1))  # type: ignore[union-attr]
        quote = "Alpha found entity one" if "Alpha found" in prompt else "an invented passage"
        return reply(json.dumps({"items": [{"satisfied": True, "quote": quote}] * n}))

    record = await judge_runner(step, judge_mode="pointwise").run()
    assert record.outcome == Outcome.A_WINS and len(record.rounds) == 1
    judged = record.rounds[0].judgment
    assert judged is not None and judged.ab is None and judged.pointwise is not None
    assert all(g.verified for g in judged.pointwise.a.items)
    assert not any(g.verified for g in judged.pointwise.b.items)  # claimed, quote not found
    assert MatchRecord.from_json(record.to_json()) == record


async def test_a_taskgen_prompt_file_is_what_the_task_generator_is_asked(tmp_path: Path) -> None:
    mine = tmp_path / "taskgen.txt"
    shipped = templates.load("taskgen")
    mine.write_text("MY TASK PROMPT\n" + shipped, encoding="utf-8")
    tasks = examiner_step([{"v": "A_MUCH_BETTER", "f": "DEPTH"}, {"v": "B_MUCH_BETTER"}])
    asked: list[str] = []

    def step(request: Mapping[str, Any]) -> Any:
        if request["response_format"]["json_schema"]["name"] == "task":
            asked.append(request["messages"][0]["content"])
        return tasks(request)

    record = await judge_runner(step, taskgen_prompt=str(mine)).run()
    assert record.outcome == Outcome.A_WINS
    assert asked and all(p.startswith("MY TASK PROMPT\n") for p in asked)
    assert MatchSettings(taskgen_prompt=str(mine)).template_specs()["taskgen"] == str(mine)


def test_a_run_judged_by_the_old_paper_wording_replays_with_it() -> None:
    """Before issue 35 "paper" named drarena's wording (now "drarena"): a run.json whose
    prompt_hashes give "paper" that wording's hash replays with "drarena"; a run judged by
    the reference's prompt (today's "paper") keeps it."""
    old_hash = templates.RENAMED_PROMPTS["paper"][1]
    judge = {"kind": "hybrid", "args": {"llm": {"kind": "pairwise", "args": {"prompt": "paper"}}}}
    stored = {"match": {"judge_prompt": "paper", "judge": judge}}
    renamed = legacy_judging(stored, {"paper": old_hash, "taskgen": "x"})
    assert renamed["match"]["judge_prompt"] == "drarena"
    assert renamed["match"]["judge"]["args"]["llm"]["args"]["prompt"] == "drarena"
    today = {"paper": templates.template_hash("paper")}
    assert legacy_judging(stored, today) == stored
    assert legacy_judging(stored) == stored
