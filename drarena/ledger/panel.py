"""How far a judge panel's members agreed, from a run's log alone (pure).

Why: a panel (`match.judges`) decides each round by majority; the verdict is only as
trustworthy as the judges are consistent. For every pair of judges this gives, over the
played rounds both judged, the percent agreement and Cohen's kappa on the 5-way verdict
(drarena.ledger.agreement, the figures `drarena run rejudge` reports), each with a seeded
bootstrap 95% interval; and for every judge how often it gave the panel's verdict. Void
rounds are left out: a panel with a failed member has no judgments to compare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from itertools import combinations

from drarena.ledger.agreement import Agreement, Pair, measure
from drarena.ledger.records import MatchRecord
from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class JudgePair(Record):
    """Two judges of the panel over the rounds both judged: 5-way verdict agreement."""

    first: str
    second: str
    verdict: Agreement


@dataclasses.dataclass(frozen=True, slots=True)
class JudgeMajority(Record):
    """One judge against the panel's decision: rounds judged, and in how many its own
    verdict was the panel's."""

    judge: str
    rounds: int
    with_majority: int


@dataclasses.dataclass(frozen=True, slots=True)
class PanelAgreement(Record):
    """The panel's judges (in the order first seen), the played rounds with a panel, each
    judge's agreement with the majority, and every pair's agreement."""

    judges: tuple[str, ...]
    rounds: int
    majority: tuple[JudgeMajority, ...]
    pairs: tuple[JudgePair, ...]


def panel_agreement(
    log: Sequence[MatchRecord], *, resamples: int, seed: int
) -> PanelAgreement | None:
    """The agreement of the run's judge panel; None for a run judged without one."""
    judges: list[str] = []
    rounds: list[tuple[str, dict[str, str]]] = []  # (panel verdict, judge -> verdict)
    for m in log:
        for r in m.rounds:
            if r.void_reason or r.judgment is None or r.judgment.panel is None:
                continue
            votes = {p.role: p.judgment.reconciled.verdict.value for p in r.judgment.panel}
            judges.extend(j for j in votes if j not in judges)
            rounds.append((r.judgment.reconciled.verdict.value, votes))
    if not rounds:
        return None
    majority = tuple(
        JudgeMajority(
            j,
            sum(j in votes for _, votes in rounds),
            sum(votes.get(j) == decided for decided, votes in rounds),
        )
        for j in judges
    )
    pairs = []
    for first, second in combinations(judges, 2):
        labels: list[Pair] = [
            (votes[first], votes[second])
            for _, votes in rounds
            if first in votes and second in votes
        ]
        pairs.append(
            JudgePair(first, second, measure("verdict", labels, resamples=resamples, seed=seed))
        )
    return PanelAgreement(tuple(judges), len(rounds), majority, tuple(pairs))
