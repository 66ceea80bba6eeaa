"""The second opinion: how far a run's LLM judge agrees with the evidence judge (pure).

Why: a GPU user's LLM judge decides every round, and nothing said how far it agrees with what
the frozen pages say. The hybrid judge (`match.judge: hybrid`, the default whenever an LLM
judge is configured) has the evidence judge grade every round beside the LLM's verdict; this
measures, over the played rounds that hold both, the share of rounds where they agree and
Cohen's kappa (drarena.ledger.agreement: each with a seeded bootstrap 95% interval), on the
5-way verdict and on its direction (A / TIE / B), and lists the rounds where the directions
differ, so a reader can open them and see who was right.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drarena.ledger.agreement import Agreement, collapse, measure
from drarena.ledger.records import MatchRecord
from drarena.records import Record

LISTED = 50  # disagreeing rounds listed by id; the rest are counted


@dataclasses.dataclass(frozen=True, slots=True)
class Disagreement(Record):
    """One round where the LLM's direction and the evidence judge's differ."""

    match_id: str
    round: int
    a: str
    b: str
    llm: str
    evidence: str


@dataclasses.dataclass(frozen=True, slots=True)
class SecondOpinion(Record):
    """Rounds with both verdicts, agreement on the verdict and on its direction, and the
    disagreeing rounds (the first LISTED of `disagreeing`)."""

    rounds: int
    verdict: Agreement
    direction: Agreement
    disagreeing: int
    listed: tuple[Disagreement, ...]


def second_opinion(
    log: Sequence[MatchRecord], *, resamples: int, seed: int
) -> SecondOpinion | None:
    """The LLM-vs-evidence agreement of a run; None when no played round was judged both
    ways (an evidence-only or an LLM-only run)."""
    pairs: list[tuple[str, str]] = []
    rows: list[Disagreement] = []
    for m in log:
        for r in m.rounds:
            j = r.judgment
            if r.void_reason or j is None or j.evidence is None:
                continue
            if j.ab is None and j.ba is None and j.pointwise is None and j.panel is None:
                continue  # the evidence judge decided alone: nothing to compare
            llm, ev = j.reconciled.verdict.value, j.evidence.derived.verdict.value
            pairs.append((llm, ev))
            if collapse(llm) != collapse(ev):
                rows.append(Disagreement(m.match_id, r.index, m.a, m.b, llm, ev))
    if not pairs:
        return None
    directions = [(collapse(a), collapse(b)) for a, b in pairs]
    return SecondOpinion(
        len(pairs),
        measure("verdict (5-way)", pairs, resamples=resamples, seed=seed),
        measure("direction (A/TIE/B)", directions, resamples=resamples, seed=seed),
        len(rows),
        tuple(rows[:LISTED]),
    )
