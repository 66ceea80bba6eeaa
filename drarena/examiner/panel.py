"""A judge panel's decision: the majority of its members' reconciled judgments (pure).

Why a panel: one judge model has its own biases (position, length, style); several judges
that decide by majority make a round's verdict less dependent on any one of them, and their
agreement with each other says how far a verdict can be trusted (DR-Arena reports kappa
0.84-0.90 between Examiners). Each member judges the round as a single judge would (both
orders reconciled, or one order, or pointwise: the same JudgeOptions for all); this module
only combines the members' final judgments.

The rule (`majority`), over n >= 1 judgments:

1. Verdict: the verdict more than half of the members gave (count * 2 > n). With no such
   verdict, the median of the signed verdicts (+2 A_MUCH_BETTER .. -2 B_MUCH_BETTER). With
   an even n the median lies between the two middle values lo <= hi; the panel takes the
   value of [lo, hi] nearest zero: TIE when they straddle zero (-1 and +1: the panel is split
   on the direction), else the weaker of the two (1 and 2 give A_BETTER), which is how
   `reconcile` treats a difference in strength between two orders. With an odd n the median
   is the middle value itself.
2. Tie quality and the loser's failure type: the most common value among the members that
   gave the chosen verdict; equally common values go to the first in a fixed order, the more
   cautious first: tie quality LOW, HIGH, then none (only a stated LOW backs the walk off, so
   a split between LOW and HIGH is resolved towards the walk's safer move, as `reconcile`
   does); failure type BOTH, DEPTH, WIDTH, NONE (the fuller diagnosis first, a diagnosis
   before none, and DEPTH, the checklist's identity-and-logic half, before WIDTH). Only values
   some voter gave can be chosen: voters split one DEPTH, one WIDTH give DEPTH, not BOTH.
3. A TIE that no member gave (an even panel split on the direction) is a HIGH tie with
   failure NONE: each answer convinced part of the panel, as `reconcile` rules for two orders
   that disagree on the direction. Any other chosen verdict was given by at least one member
   (it is one of the middle values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TypeVar

from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict

# equally common values go to the first of these (see the module doc)
TIE_QUALITY_ORDER: tuple[TieQuality | None, ...] = (TieQuality.LOW, TieQuality.HIGH, None)
FAILURE_ORDER: tuple[FailureType, ...] = (
    FailureType.BOTH,
    FailureType.DEPTH,
    FailureType.WIDTH,
    FailureType.NONE,
)

T = TypeVar("T")


def median_signed(values: Sequence[int]) -> int:
    """The median of signed verdicts; for an even count, the value between the two middle
    ones nearest zero (0 when they straddle it, else the weaker one)."""
    if not values:
        raise ValueError("the median of no verdicts")
    ordered = sorted(values)
    lo, hi = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    if lo <= 0 <= hi:
        return 0
    return lo if lo > 0 else hi


def most_common(values: Sequence[T], order: Sequence[T]) -> T:
    """The most frequent of `values` (non-empty, each one of `order`); equally frequent ones
    go to the first in `order`."""
    counts = Counter(values)
    top = max(counts.values())
    return next(v for v in order if counts.get(v, 0) == top)


def majority_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """The verdict more than half gave; without one, the median of the signed verdicts."""
    if not verdicts:
        raise ValueError("a panel of no judgments has no verdict")
    verdict, count = Counter(verdicts).most_common(1)[0]
    if count * 2 > len(verdicts):
        return verdict
    return Verdict.from_signed(median_signed([v.signed for v in verdicts]))


def majority(judgments: Sequence[Judgment]) -> Judgment:
    """The panel's judgment of a round from its members' reconciled judgments, all in the
    match's (A, B) order (the rule is in the module doc). Raises ValueError for no
    judgments: a panel with a failed member voids the round before this is reached."""
    verdict = majority_verdict([j.verdict for j in judgments])
    voters = [j for j in judgments if j.verdict == verdict]
    if not voters:  # an even panel split on the direction: rule 3
        return Judgment(Verdict.TIE, TieQuality.HIGH, FailureType.NONE)
    return Judgment(
        verdict,
        most_common([j.tie_quality for j in voters], TIE_QUALITY_ORDER),
        most_common([j.loser_failure_type for j in voters], FAILURE_ORDER),
    )
