"""The `# judging` block of MatchSettings: defaults, selection by name or file, one-line
errors, the order alternation of judge_orders: 1, and the legacy replay rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.arena.config import parse_config
from drarena.arena.execute import legacy_judging
from drarena.arena.match import MatchSettings
from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.judge import JudgeMode


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
        "paper",
        "taskgen",
        JudgeMode.PAIRWISE,
        2,
    )
    assert m.judge_sees_checklist and m.template_specs() == {"taskgen": "taskgen", "judge": "paper"}


def test_selection_by_name_and_by_file(tmp_path: Path) -> None:
    mine = tmp_path / "judge.txt"
    mine.write_text("$question", encoding="utf-8")
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
