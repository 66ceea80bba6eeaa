"""A judge panel's majority (pure, hand-computed cases) and `judge_panel`'s protocol: every
member judges with the same options, concurrently, and one member failing for good fails
the panel (scripted backend: control flow only, nothing about any model)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from judge_helpers import TASK, A, B

from drarena.errors import DrarenaError
from drarena.examiner.judge import JudgeOptions, PairJudgment, judge_panel
from drarena.examiner.panel import majority, majority_verdict, median_signed, most_common
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.models.backend import BackendReply
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply

V = Verdict
F = FailureType
Q = TieQuality


def j(
    verdict: Verdict, failure: FailureType = F.DEPTH, quality: TieQuality | None = None
) -> Judgment:
    if verdict == V.TIE:
        return Judgment(verdict, quality, F.NONE)
    return Judgment(verdict, quality, failure)


@pytest.mark.parametrize(
    ("values", "median"),
    [
        ([2], 2),
        ([2, 1, -1], 1),  # odd: the middle value
        ([2, 2, 1, -1, -2], 1),
        ([-2, -2, 1], -2),
        ([1, -1], 0),  # even, straddling zero: TIE
        ([2, 2, 1, 1], 1),  # even, both middles positive: the weaker
        ([-2, -1, -1, -2], -1),
        ([-1, 0, 0, 1], 0),
        ([0, 2], 0),  # middles 0 and 2: zero lies in [0, 2]
    ],
)
def test_median_of_signed_verdicts(values: list[int], median: int) -> None:
    assert median_signed(values) == median


def test_no_judgments_have_no_majority() -> None:
    with pytest.raises(ValueError):
        median_signed([])
    with pytest.raises(ValueError):
        majority([])


def test_more_than_half_decides() -> None:
    assert majority_verdict([V.A_BETTER, V.A_BETTER, V.B_MUCH_BETTER]) == V.A_BETTER
    # 3 of 5 is a majority even though the median (A_BETTER) differs from it
    five = [V.A_MUCH_BETTER] * 3 + [V.B_MUCH_BETTER, V.B_MUCH_BETTER]
    assert majority_verdict(five) == V.A_MUCH_BETTER
    assert median_signed([v.signed for v in five]) == 2


def test_without_a_majority_the_median_decides() -> None:
    # every verdict once: median of 2, 1, -1 is 1
    assert majority_verdict([V.A_MUCH_BETTER, V.A_BETTER, V.B_BETTER]) == V.A_BETTER
    # 2 of 5 is no majority: median of 2, 2, 1, -1, -2 is 1
    five = [V.A_MUCH_BETTER, V.A_MUCH_BETTER, V.A_BETTER, V.B_BETTER, V.B_MUCH_BETTER]
    assert majority_verdict(five) == V.A_BETTER
    # half is no majority in an even panel: 2, 2, 1, 1 -> the weaker middle, 1
    four = [V.A_MUCH_BETTER, V.A_MUCH_BETTER, V.A_BETTER, V.A_BETTER]
    assert majority_verdict(four) == V.A_BETTER


def test_a_single_judgment_is_its_own_majority() -> None:
    one = j(V.B_BETTER, F.WIDTH)
    assert majority([one]) == one


def test_quality_and_failure_come_from_the_voters_of_the_verdict() -> None:
    got = majority([j(V.A_BETTER, F.WIDTH), j(V.A_BETTER, F.WIDTH), j(V.B_BETTER, F.DEPTH)])
    assert got == Judgment(V.A_BETTER, None, F.WIDTH)
    # median case: only the A_BETTER voter speaks for the failure type
    got = majority([j(V.A_MUCH_BETTER, F.BOTH), j(V.A_BETTER, F.WIDTH), j(V.B_BETTER, F.DEPTH)])
    assert got == Judgment(V.A_BETTER, None, F.WIDTH)


def test_equally_common_values_follow_the_fixed_order() -> None:
    # failure split DEPTH / WIDTH among the two voters: DEPTH comes before WIDTH
    got = majority([j(V.A_BETTER, F.WIDTH), j(V.A_BETTER, F.DEPTH), j(V.B_BETTER, F.BOTH)])
    assert got == Judgment(V.A_BETTER, None, F.DEPTH)
    # NONE against WIDTH: a diagnosis first
    got = majority([j(V.B_BETTER, F.NONE), j(V.B_BETTER, F.WIDTH)])
    assert got == Judgment(V.B_BETTER, None, F.WIDTH)
    # tie quality split LOW / HIGH: LOW (the cautious one); None comes last
    got = majority([j(V.TIE, quality=Q.HIGH), j(V.TIE, quality=Q.LOW), j(V.A_BETTER)])
    assert got == Judgment(V.TIE, Q.LOW, F.NONE)
    got = majority([j(V.TIE, quality=None), j(V.TIE, quality=Q.HIGH)])
    assert got == Judgment(V.TIE, Q.HIGH, F.NONE)
    assert most_common([None, None, Q.HIGH], (Q.LOW, Q.HIGH, None)) is None


def test_an_even_panel_split_on_direction_is_a_high_tie() -> None:
    assert majority([j(V.A_BETTER), j(V.B_MUCH_BETTER)]) == Judgment(V.TIE, Q.HIGH, F.NONE)
    four = [j(V.A_BETTER), j(V.A_MUCH_BETTER), j(V.B_BETTER), j(V.B_BETTER)]
    assert majority(four) == Judgment(V.TIE, Q.HIGH, F.NONE)
    # a TIE some members gave takes their quality: -1, 0, 0, 1 has TIE at the median
    four = [j(V.TIE, quality=Q.LOW), j(V.TIE, quality=Q.LOW), j(V.A_BETTER), j(V.B_BETTER)]
    assert majority(four) == Judgment(V.TIE, Q.LOW, F.NONE)


ROLES = ("j1", "j2", "j3")


def by_model(verdicts: Mapping[str, str | None]) -> ScriptedBackendForTests:
    """Each judge role has its own model name; it answers every order with its verdict in
    the shown order's labels, or broken JSON (a judge failing for good) for None."""

    def step(request: Mapping[str, Any]) -> BackendReply:
        verdict = verdicts[request["model"].split("/", 1)[1]]
        if verdict is None:
            return reply('{"verdict": [')
        prompt = request["messages"][0]["content"]
        shown_a_first = prompt.index("Answer A: the csv") < prompt.index("Answer B: no idea")
        shown = verdict if shown_a_first else Verdict(verdict).swapped().value
        return reply(
            json.dumps(
                {
                    "checklist_a": [True, True],
                    "checklist_b": [False, False],
                    "reasoning": "r",
                    "tie_quality": "HIGH" if verdict == "TIE" else "NA",
                    "loser_failure_type": "NONE" if verdict == "TIE" else "WIDTH",
                    "verdict": shown,
                }
            )
        )

    return ScriptedBackendForTests([step] * 50)


def panel_client(backend: ScriptedBackendForTests) -> ModelClient:
    roles = {r: {"model": f"openai/{r}"} for r in ROLES}
    return ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/x"}, **roles}), backend=backend
    )


async def test_every_member_judges_and_the_majority_decides() -> None:
    backend = by_model({"j1": "A_BETTER", "j2": "B_BETTER", "j3": "A_BETTER"})
    got = await judge_panel(panel_client(backend), ROLES, TASK, A, B, JudgeOptions())
    assert got.ab is None and got.ba is None and got.pointwise is None
    assert got.panel is not None and [m.role for m in got.panel] == list(ROLES)
    assert [m.judgment.reconciled.verdict for m in got.panel] == [
        V.A_BETTER,
        V.B_BETTER,
        V.A_BETTER,
    ]
    assert all(len(m.judgment.orders()) == 2 for m in got.panel)  # both orders each
    assert got.reconciled == majority([m.judgment.reconciled for m in got.panel])
    assert got.reconciled == Judgment(V.A_BETTER, None, F.WIDTH)
    assert sorted(r["model"] for r in backend.requests) == sorted(
        f"openai/{r}" for r in ROLES for _ in range(2)
    )
    assert PairJudgment.from_json(got.to_json()) == got


async def test_members_share_the_judging_options() -> None:
    backend = by_model({"j1": "A_BETTER", "j2": "A_BETTER", "j3": "B_BETTER"})
    options = JudgeOptions(orders=1, swap=True)
    got = await judge_panel(panel_client(backend), ROLES, TASK, A, B, options)
    assert got.panel is not None
    assert all(m.judgment.ab is None and m.judgment.ba is not None for m in got.panel)
    assert len(backend.requests) == 3  # one order per member


async def test_one_member_failing_fails_the_panel_after_all_finished() -> None:
    backend = by_model({"j1": "A_BETTER", "j2": None, "j3": "A_BETTER"})
    with pytest.raises(DrarenaError, match="panel judge 'j2'"):
        await judge_panel(panel_client(backend), ROLES, TASK, A, B, JudgeOptions())
    models = [r["model"] for r in backend.requests]
    # the failed member used up its repairs; the others ran to the end (gather_settled)
    assert models.count("openai/j1") == models.count("openai/j3") == 2
    assert models.count("openai/j2") == 6


def test_a_single_judges_record_has_no_panel_key() -> None:
    single = PairJudgment(None, None, j(V.TIE, quality=Q.HIGH))
    assert "panel" not in json.loads(single.to_json())
