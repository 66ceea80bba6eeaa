"""`drarena run ablate RUN --first-rounds K`: the paper's round ablation (section 4.3,
Table 6) computed the paper's way, from the rounds a tournament recorded.

Why from the log: the paper measured what its rankings would have been had each match
stopped after its first K rounds by cutting rounds off the logs of the same tournament, so
every cut ranks the same pairings, tasks and answers. drarena's `first_round_only: true`
plays a new tournament whose matches stop after one round: its Swiss pairings then follow
other results and its tasks may differ, so the two measure different things. Here each match
keeps its first K rounds as recorded, is scored again (the same points per verdict, the same
void rules), and the agents are rated again with the run's rating settings; no model is
called and the run folder is not written to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drarena.errors import DrarenaError
from drarena.examiner.evolve import MatchScore, add_round, match_void, outcome
from drarena.examiner.verdicts import Verdict
from drarena.ledger.records import MatchRecord, RoundRecord


def round_verdict(rnd: RoundRecord) -> Verdict | None:
    """The verdict a recorded round scored with, or None for a void round."""
    if rnd.void_reason or rnd.judgment is None:
        return None
    return rnd.judgment.reconciled.verdict


def first_rounds(match: MatchRecord, k: int, max_void_rounds: int | None) -> MatchRecord:
    """`match` as if it had stopped after its first `k` rounds: those rounds as recorded,
    the score folded again from their verdicts, the outcome by the match's void rule."""
    if k < 1:
        raise DrarenaError(f"--first-rounds must be at least 1, got {k}")
    if not match.rounds:  # void before its first round (no starting node): stays so
        return match
    kept = tuple(match.rounds[:k])
    score = MatchScore(0, 0, 0, 0)
    for rnd in kept:
        score = add_round(score, round_verdict(rnd))
    void = ""
    if match_void(score, max_void_rounds):  # the match loop's wording (arena/match.py)
        reasons = "; ".join(r.void_reason for r in kept if r.void_reason)
        void = f"{score.rounds_void} void round(s): {reasons}"
    return dataclasses.replace(
        match,
        rounds=kept,
        score=score,
        outcome=outcome(score, max_void_rounds=max_void_rounds),
        void_reason=void,
    )


def cut_log(log: Sequence[MatchRecord], k: int, max_void_rounds: int | None) -> list[MatchRecord]:
    """Every match of the log cut to its first `k` rounds (matches already shorter stay)."""
    return [first_rounds(m, k, max_void_rounds) for m in log]
