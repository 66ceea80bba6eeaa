"""The paper's analyses on a hand-built run: every expected figure is worked out in comments."""

from __future__ import annotations

import dataclasses
import math

import pytest
from matchkit import answer, judgment, match, round_

from drarena.examiner.evolve import Outcome
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.ledger.analysis import Price, agent_models, analyse, litellm_prices, pearson
from drarena.ledger.header import RunHeader
from drarena.ledger.records import AnswerTiming, MatchRecord

V = Verdict
F = FailureType

MATCHES = [
    # x beats y in two rounds: A_BETTER (width loss) at depth 1, then A_MUCH_BETTER (depth
    # loss) at depth 2, width 2; both judged consistently in both orders
    match(
        "m1",
        "x",
        "y",
        Outcome.A_WINS,
        (
            round_(0, answer("x"), answer("y"), judgment(V.A_BETTER, failure=F.WIDTH), 1, 2),
            round_(1, answer("x"), answer("y"), judgment(V.A_MUCH_BETTER), 2, 2),
        ),
    ),
    # y and z tie: the two orders disagree (A_BETTER, then B_BETTER mapped back): a high tie
    match(
        "m2",
        "y",
        "z",
        Outcome.TIE,
        (round_(0, answer("y"), answer("z"), judgment(V.A_BETTER, V.B_BETTER), 1, 3),),
    ),
    # z beats x: a void round with no answers, then B_BETTER vs B_MUCH_BETTER (reconciled to
    # the weaker, B_BETTER; same direction, not the same verdict), loser failed BOTH
    match(
        "m3",
        "x",
        "z",
        Outcome.B_WINS,
        (
            round_(0, None, None, None, 1, 2, void="task failed"),
            round_(
                1,
                answer("x"),
                answer("z"),
                judgment(V.B_BETTER, V.B_MUCH_BETTER, failure=F.BOTH),
                3,
                4,
            ),
        ),
    ),
    match("m4", "x", "y", Outcome.VOID, ()),
]
RATINGS = {"x": 1100.0, "y": 1000.0, "z": 950.0}


def test_verdict_and_failure_shares_count_judged_rounds_only() -> None:
    a = analyse(MATCHES, RATINGS)
    assert a.judged_rounds == 4  # m1 x2, m2, m3's second round; the void one is out
    assert a.verdict_counts == {"much_better": 1, "better": 2, "tie_high": 1, "tie_low": 0}
    assert a.verdict_shares == {"much_better": 0.25, "better": 0.5, "tie_high": 0.25, "tie_low": 0}
    assert a.failure_counts == {"DEPTH": 1, "WIDTH": 1, "BOTH": 1, "NONE": 0, "TIE": 1}
    assert a.failure_shares["TIE"] == 0.25


def test_a_tie_with_no_stated_quality_counts_as_high() -> None:
    def tie(quality: TieQuality | None) -> MatchRecord:
        pj = judgment(V.TIE)
        pj = dataclasses.replace(pj, reconciled=Judgment(V.TIE, quality, F.NONE))
        return match("t", "x", "y", Outcome.TIE, (round_(0, answer("x"), answer("y"), pj),))

    assert analyse([tie(None)], RATINGS).verdict_counts["tie_high"] == 1
    assert analyse([tie(TieQuality.HIGH)], RATINGS).verdict_counts["tie_high"] == 1
    assert analyse([tie(TieQuality.LOW)], RATINGS).verdict_counts["tie_low"] == 1


def test_rounds_against_rating_gap_by_hand() -> None:
    a = analyse(MATCHES, RATINGS)
    # pairs in name order: (x,y) 2 rounds gap 100; (x,z) 2 rounds (void one included) gap
    # 150; (y,z) 1 round gap 50. The void match m4 is not a decided match.
    assert [(p.a, p.b, p.matches, p.mean_rounds, p.rating_gap) for p in a.pairs] == [
        ("x", "y", 1, 2.0, 100.0),
        ("x", "z", 1, 2.0, 150.0),
        ("y", "z", 1, 1.0, 50.0),
    ]
    # gaps (100, 150, 50), rounds (2, 2, 1): deviations (0, 50, -50) and (1/3, 1/3, -2/3);
    # r = 50 / sqrt(5000 * 2/3) = sqrt(3)/2; t = r / sqrt(1 - r^2) = sqrt(3) on 1 degree of
    # freedom: p = 2 * (1/2 - atan(sqrt 3) / pi) = 1/3
    assert a.rounds_gap_pearson_r == round(math.sqrt(3) / 2, 4)
    assert a.rounds_gap_p_value == round(1 / 3, 4)


def test_pearson_is_undefined_for_fewer_than_three_points_or_a_constant_side() -> None:
    assert pearson([1.0, 2.0], [1.0, 2.0]) is None
    assert pearson([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) is None
    r = pearson([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0])
    assert r is not None and r[0] == -1.0


def test_depth_and_width_of_the_verdict_round() -> None:
    a = analyse(MATCHES, RATINGS)
    assert a.depth_histogram == {"1": 1, "2": 1, "3": 1}  # m2 at 1, m1 at 2, m3 at 3
    assert a.width_histogram == {"2": 1, "3": 1, "4": 1}


def test_position_consistency() -> None:
    a = analyse(MATCHES, RATINGS)
    assert a.both_orders_rounds == 4
    assert a.position_agree_exact == 0.5  # m1's two rounds agree; m2 and m3 do not
    assert a.position_agree_direction == 0.75  # m3 agrees on the direction (B)


def test_tokens_cost_and_seconds() -> None:
    prices = {"x": Price("api-x", 1e-6, 2e-6), "y": None, "z": Price("api-z", 0.0, 1e-6)}
    timings = [
        AnswerTiming("m1", 0, "y", wall_s=3.0, model_s=2.0),
        AnswerTiming("m1", 1, "y", wall_s=3.0, model_s=2.0),
    ]
    a = analyse(MATCHES, RATINGS, models={"x": "api-x"}, prices=prices, timings=timings)
    costs = {c.agent: c for c in a.agent_costs}
    # x answered 3 times (90 prompt, 10 completion tokens each): 270e-6 + 30 * 2e-6
    assert (costs["x"].answers, costs["x"].prompt_tokens, costs["x"].completion_tokens) == (
        3,
        270,
        30,
    )
    assert costs["x"].cost_usd == pytest.approx(0.00033)
    assert costs["x"].model == "api-x" and costs["x"].model_seconds is None
    assert costs["y"].cost_usd is None  # served: seconds instead
    assert (costs["y"].model_seconds, costs["y"].wall_seconds) == (4.0, 6.0)
    per_match = {c.match_id: c for c in a.match_costs}
    assert per_match["m1"].cost_usd is None  # one side unpriced: no total
    assert per_match["m3"].cost_usd == pytest.approx(90e-6 + 20e-6 + 10e-6)
    assert (per_match["m3"].prompt_tokens, per_match["m3"].completion_tokens) == (180, 20)
    assert per_match["m4"].prompt_tokens == 0


def test_agent_models_from_the_header() -> None:
    header = {
        "config": {
            "agents": [
                {"name": "a", "kind": "react", "args": {}},
                {"name": "b", "kind": "react", "args": {"role": "big"}},
                {"name": "c", "kind": "external", "args": {"role": "none"}},
            ],
            "models": {"roles": {"agent": {"model": "served"}, "big": {"model": "gpt-4o"}}},
        },
        "bound_roles": {"agent": {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"}},
    }
    assert agent_models(RunHeader.model_validate(header)) == {
        "a": "openai/m (served at http://127.0.0.1:9/v1)",
        "b": "gpt-4o",
        "c": "",
    }


def test_litellm_prices_from_the_bundled_map() -> None:
    prices = litellm_prices(
        {
            "api": "gpt-4o-mini",
            "prefixed": "openai/gpt-4o-mini",
            "served": "served",
            "local": "gpt-4o-mini (served at http://127.0.0.1:9/v1)",
            "unknown": "no-such-model-anywhere",
            "command": "",
        }
    )
    api = prices["api"]
    assert api is not None and api.input_per_token > 0 and api.output_per_token > 0
    prefixed = prices["prefixed"]  # the provider prefix is tried off when the full name misses
    assert prefixed is not None and prefixed.input_per_token == api.input_per_token
    assert [prices[k] for k in ("served", "local", "unknown", "command")] == [None] * 4
