"""The adaptive evolvement loop's transition table and match scoring (pure).

DR-Arena (paper Table 2, reference core/evolvement_loop.py): after each round the Examiner
moves through the Information Tree to press on the loser's weakness. A low-quality tie means
the question was too hard for both: back off to the parent and narrow. A high-quality tie is
a pressure test: deeper and wider. A loser failing on depth gets a deeper question, on width
a wider one; BOTH or NONE get both.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from typing import ClassVar

from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.records import Record

MIN_WIDTH = 2


class Move(StrEnum):
    BACKTRACK_NARROW = "BACKTRACK_NARROW"  # parent, W-1 (floor 2)
    DEEPEN_WIDEN = "DEEPEN_WIDEN"  # D+1, W+1
    DEEPEN = "DEEPEN"  # D+1
    WIDEN = "WIDEN"  # W+1
    RESTART = "RESTART"  # after a void round at a node that cannot go deeper: a new start node


@dataclasses.dataclass(frozen=True, slots=True)
class Transition(Record):
    """The move taken after a round and the (depth, width) it leads to; `history_turns`:
    when a backtrack cut both conversations, the turns each kept (None: no cut)."""

    _omit_if_none: ClassVar[tuple[str, ...]] = ("history_turns",)

    move: Move
    depth: int
    width: int
    history_turns: int | None = None


def choose_move(judgment: Judgment) -> Move:
    if judgment.verdict == Verdict.TIE:
        if judgment.tie_quality == TieQuality.HIGH:
            return Move.DEEPEN_WIDEN
        return Move.BACKTRACK_NARROW
    if judgment.loser_failure_type == FailureType.DEPTH:
        return Move.DEEPEN
    if judgment.loser_failure_type == FailureType.WIDTH:
        return Move.WIDEN
    return Move.DEEPEN_WIDEN


def transition(judgment: Judgment, depth: int, width: int) -> Transition:
    """Apply the table to the current depth D (>= 1) and width W (>= 2)."""
    move = choose_move(judgment)
    if move == Move.BACKTRACK_NARROW:
        return Transition(move, max(depth - 1, 1), max(width - 1, MIN_WIDTH))
    if move == Move.DEEPEN:
        return Transition(move, depth + 1, width)
    if move == Move.WIDEN:
        return Transition(move, depth, width + 1)
    return Transition(move, depth + 1, width + 1)


def round_points(verdict: Verdict) -> tuple[int, int]:
    """Points to (A, B): MUCH_BETTER earns 2, BETTER 1, a tie nothing."""
    signed = verdict.signed
    return (signed, 0) if signed > 0 else (0, -signed)


def word_limit(width: int, depth: int, *, root_counted: bool = True) -> tuple[int, int]:
    """The reference's answer length window: min(100+30W+20D, 300) to that plus 100.

    `depth` is the node's depth (the root is 0). The reference's D is the length of the node
    path with the root counted (`len(node_path_stack)` in core/evolvement_loop.py), one more
    than the depth: a depth-1 node has D = 2. `root_counted=False` is drarena's rule before
    issue 16 (D = depth), kept so that runs recorded then replay."""
    d = depth + 1 if root_counted else depth
    low = min(100 + 30 * width + 20 * d, 300)
    return low, low + 100


@dataclasses.dataclass(frozen=True, slots=True)
class MatchScore(Record):
    points_a: int
    points_b: int
    rounds_scored: int
    rounds_void: int

    @property
    def gap(self) -> int:
        return abs(self.points_a - self.points_b)


def add_round(score: MatchScore, verdict: Verdict | None) -> MatchScore:
    """Fold one round in; None is a void round, which never scores as a tie or a win."""
    if verdict is None:
        return dataclasses.replace(score, rounds_void=score.rounds_void + 1)
    pa, pb = round_points(verdict)
    return MatchScore(
        score.points_a + pa, score.points_b + pb, score.rounds_scored + 1, score.rounds_void
    )


class Outcome(StrEnum):
    A_WINS = "A_WINS"
    B_WINS = "B_WINS"
    TIE = "TIE"
    VOID = "VOID"


def too_many_void(score: MatchScore, max_void_rounds: int | None) -> bool:
    """More void rounds than the limit (None: no limit, the reference's way)."""
    return max_void_rounds is not None and score.rounds_void > max_void_rounds


def match_void(score: MatchScore, max_void_rounds: int | None) -> bool:
    """The match says nothing about its agents: too many void rounds, or none scored (the
    reference would count a match without a scored round as a tie; drarena does not rank
    on it)."""
    return too_many_void(score, max_void_rounds) or score.rounds_scored == 0


def should_stop(
    score: MatchScore, *, max_rounds: int, gap_to_stop: int = 2, max_void_rounds: int | None = 2
) -> bool:
    """Stop on a decisive gap (after at least one scored round), at the round limit, or when
    too many rounds were void to trust the match."""
    if too_many_void(score, max_void_rounds):
        return True
    if score.rounds_scored >= 1 and score.gap >= gap_to_stop:
        return True
    return score.rounds_scored + score.rounds_void >= max_rounds


def outcome(score: MatchScore, *, max_void_rounds: int | None = 2) -> Outcome:
    if match_void(score, max_void_rounds):
        return Outcome.VOID
    if score.points_a > score.points_b:
        return Outcome.A_WINS
    if score.points_b > score.points_a:
        return Outcome.B_WINS
    return Outcome.TIE
