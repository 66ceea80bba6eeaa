"""Records of a match and its rounds, as appended to a run's matches.jsonl.

Why these fields: a match must be auditable (every task, both answers with trajectories, both
raw judgments and their reconciliation, the transition taken) and replayable byte for byte.
Wall-clock measurements are therefore kept out of these records (see `timings.jsonl`): they
differ on every run, and a replay must reproduce matches.jsonl exactly.
"""

from __future__ import annotations

import dataclasses

from drarena.agents.base import Answer
from drarena.examiner.evolve import MatchScore, Outcome, Transition
from drarena.examiner.judge import PairJudgment
from drarena.examiner.taskgen import TaskOutcome
from drarena.records import Record

SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True, slots=True)
class RoundRecord(Record):
    """One round. `void_reason` non-empty means the round scored nothing for either side."""

    index: int
    node: str
    depth: int
    width: int
    target_urls: tuple[str, ...]
    task: TaskOutcome
    answer_a: Answer | None
    answer_b: Answer | None
    judgment: PairJudgment | None
    score: MatchScore
    transition: Transition | None
    void_reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class MatchRecord(Record):
    """One finished match between agents `a` and `b` on one tree."""

    schema_version: int
    match_id: str
    swiss_round: int
    a: str
    b: str
    tree: str
    seed: int
    rounds: tuple[RoundRecord, ...]
    score: MatchScore
    outcome: Outcome
    void_reason: str = ""

    def score_a(self) -> float | None:
        """1, 0.5 or 0 for a decided match; None for a void one (never a tie)."""
        return {Outcome.A_WINS: 1.0, Outcome.TIE: 0.5, Outcome.B_WINS: 0.0}.get(self.outcome)


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerTiming(Record):
    """Wall-clock figures kept out of matches.jsonl (they differ on every run)."""

    match_id: str
    round: int
    agent: str
    wall_s: float
    model_s: float
