"""Verdicts, judging in both orders, and their reconciliation (pure).

Why both orders: judges favour a position (in the LMSYS data 12.9% of verdicts flip when the
answers are swapped). Each pair is judged as (A, B) and as (B, A); the second judgment is
mapped back to the first order and the two are reconciled conservatively: agreeing verdicts
stand, opposite directions become a tie, and a difference in strength takes the weaker one.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum

from drarena.records import Record


class Verdict(StrEnum):
    A_MUCH_BETTER = "A_MUCH_BETTER"
    A_BETTER = "A_BETTER"
    TIE = "TIE"
    B_BETTER = "B_BETTER"
    B_MUCH_BETTER = "B_MUCH_BETTER"

    @property
    def signed(self) -> int:
        """+2 .. -2: positive favours A, magnitude is the strength (and the points won)."""
        return _SIGNED[self]

    @classmethod
    def from_signed(cls, value: int) -> Verdict:
        return _FROM_SIGNED[value]

    def swapped(self) -> Verdict:
        """The same judgment with the answers' positions exchanged."""
        return Verdict.from_signed(-self.signed)


_SIGNED = {
    Verdict.A_MUCH_BETTER: 2,
    Verdict.A_BETTER: 1,
    Verdict.TIE: 0,
    Verdict.B_BETTER: -1,
    Verdict.B_MUCH_BETTER: -2,
}
_FROM_SIGNED = {v: k for k, v in _SIGNED.items()}


class TieQuality(StrEnum):
    HIGH = "HIGH"
    LOW = "LOW"


class FailureType(StrEnum):
    DEPTH = "DEPTH"
    WIDTH = "WIDTH"
    BOTH = "BOTH"
    NONE = "NONE"


@dataclasses.dataclass(frozen=True, slots=True)
class Judgment(Record):
    """One verdict about (A, B) in the match's own order."""

    verdict: Verdict
    tie_quality: TieQuality | None
    loser_failure_type: FailureType

    def swapped(self) -> Judgment:
        return dataclasses.replace(self, verdict=self.verdict.swapped())


def merge_failure_types(a: FailureType, b: FailureType) -> FailureType:
    """Union of two diagnoses of the same loser: DEPTH and WIDTH together make BOTH."""
    if a == b:
        return a
    if FailureType.NONE in (a, b):
        return b if a == FailureType.NONE else a
    return FailureType.BOTH


def reconcile(first: Judgment, second_swapped_back: Judgment) -> Judgment:
    """Reconcile the (A, B) judgment with the (B, A) one already mapped back to (A, B).

    A tie that comes from disagreement (each order preferred a different answer) is HIGH
    quality: each answer convinced the judge once, so the next round should press harder.
    """
    s1, s2 = first.verdict.signed, second_swapped_back.verdict.signed
    if s1 * s2 < 0:
        return Judgment(Verdict.TIE, TieQuality.HIGH, FailureType.NONE)
    signed = s1 if abs(s1) <= abs(s2) else s2
    verdict = Verdict.from_signed(signed)
    if verdict == Verdict.TIE:
        qualities = [
            j.tie_quality for j in (first, second_swapped_back) if j.verdict == Verdict.TIE
        ]
        # A tie judged without a quality counts as HIGH, as in the reference: only a stated
        # LOW backs the walk off.
        quality = TieQuality.LOW if TieQuality.LOW in qualities else TieQuality.HIGH
        return Judgment(Verdict.TIE, quality, FailureType.NONE)
    failure = merge_failure_types(first.loser_failure_type, second_swapped_back.loser_failure_type)
    return Judgment(verdict, None, failure)
