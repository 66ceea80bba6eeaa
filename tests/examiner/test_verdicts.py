from __future__ import annotations

import itertools

import pytest

from drarena.examiner.verdicts import (
    FailureType,
    Judgment,
    TieQuality,
    Verdict,
    merge_failure_types,
    reconcile,
)

V = Verdict


def j(
    verdict: Verdict, quality: TieQuality | None = None, failure: FailureType = FailureType.NONE
) -> Judgment:
    return Judgment(verdict, quality, failure)


def test_swap_is_an_involution_and_mirrors_strength() -> None:
    for v in Verdict:
        assert v.swapped().swapped() == v
        assert v.swapped().signed == -v.signed
    assert V.A_MUCH_BETTER.swapped() == V.B_MUCH_BETTER


@pytest.mark.parametrize("v", list(Verdict))
def test_agreeing_verdicts_stand(v: Verdict) -> None:
    q = TieQuality.HIGH if v == V.TIE else None
    assert reconcile(j(v, q), j(v, q)).verdict == v


def test_opposite_directions_become_a_high_tie() -> None:
    got = reconcile(j(V.A_MUCH_BETTER, failure=FailureType.DEPTH), j(V.B_BETTER))
    assert got == Judgment(V.TIE, TieQuality.HIGH, FailureType.NONE)


def test_strength_difference_takes_the_weaker() -> None:
    assert reconcile(j(V.A_MUCH_BETTER), j(V.A_BETTER)).verdict == V.A_BETTER
    assert reconcile(j(V.B_BETTER), j(V.B_MUCH_BETTER)).verdict == V.B_BETTER
    # a tie against a lean is the weaker of the two: a tie, with the tie side's quality
    got = reconcile(j(V.TIE, TieQuality.LOW), j(V.A_MUCH_BETTER))
    assert got.verdict == V.TIE and got.tie_quality == TieQuality.LOW


def test_tie_quality_low_wins_and_missing_counts_high() -> None:
    """The reference's default (issue 16): a tie without a stated quality is HIGH."""
    high, low = TieQuality.HIGH, TieQuality.LOW
    assert reconcile(j(V.TIE, high), j(V.TIE, low)).tie_quality == low
    assert reconcile(j(V.TIE, high), j(V.TIE, high)).tie_quality == high
    assert reconcile(j(V.TIE), j(V.TIE)).tie_quality == TieQuality.HIGH
    assert reconcile(j(V.TIE), j(V.TIE, low)).tie_quality == low


def test_reconcile_is_symmetric_in_its_arguments() -> None:
    for a, b in itertools.product(Verdict, repeat=2):
        left = reconcile(j(a, TieQuality.HIGH), j(b, TieQuality.HIGH))
        right = reconcile(j(b, TieQuality.HIGH), j(a, TieQuality.HIGH))
        assert left.verdict == right.verdict


def test_failure_types_merge_into_both() -> None:
    assert merge_failure_types(FailureType.DEPTH, FailureType.WIDTH) == FailureType.BOTH
    assert merge_failure_types(FailureType.NONE, FailureType.WIDTH) == FailureType.WIDTH
    assert merge_failure_types(FailureType.DEPTH, FailureType.DEPTH) == FailureType.DEPTH
    got = reconcile(
        j(V.A_BETTER, failure=FailureType.DEPTH), j(V.A_BETTER, failure=FailureType.WIDTH)
    )
    assert got.loser_failure_type == FailureType.BOTH


def test_judgment_round_trips_through_json() -> None:
    x = j(V.B_BETTER, None, FailureType.WIDTH)
    assert Judgment.from_json(x.to_json()) == x
