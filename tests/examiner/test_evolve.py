from __future__ import annotations

import pytest

from drarena.examiner.evolve import (
    MatchScore,
    Move,
    Outcome,
    add_round,
    outcome,
    round_points,
    should_stop,
    transition,
    word_limit,
)
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict

V, F, Q = Verdict, FailureType, TieQuality


@pytest.mark.parametrize(
    ("judgment", "move", "depth", "width"),
    [
        (Judgment(V.TIE, Q.LOW, F.NONE), Move.BACKTRACK_NARROW, 1, 2),
        (Judgment(V.TIE, Q.HIGH, F.NONE), Move.DEEPEN_WIDEN, 3, 4),
        (Judgment(V.A_BETTER, None, F.DEPTH), Move.DEEPEN, 3, 3),
        (Judgment(V.B_MUCH_BETTER, None, F.WIDTH), Move.WIDEN, 2, 4),
        (Judgment(V.A_MUCH_BETTER, None, F.BOTH), Move.DEEPEN_WIDEN, 3, 4),
        (Judgment(V.B_BETTER, None, F.NONE), Move.DEEPEN_WIDEN, 3, 4),
    ],
)
def test_transition_table(judgment: Judgment, move: Move, depth: int, width: int) -> None:
    t = transition(judgment, depth=2, width=3)
    assert (t.move, t.depth, t.width) == (move, depth, width)


def test_backtrack_floors() -> None:
    t = transition(Judgment(V.TIE, Q.LOW, F.NONE), depth=1, width=2)
    assert (t.depth, t.width) == (1, 2)


def test_points() -> None:
    assert round_points(V.A_MUCH_BETTER) == (2, 0)
    assert round_points(V.B_BETTER) == (0, 1)
    assert round_points(V.TIE) == (0, 0)


def test_word_limit_matches_reference() -> None:
    """The reference's D is the node path's length with the root counted (len(path)), one
    more than the node's depth: a depth-1 node at W=2 is 100 + 60 + 40 = 200 words."""
    assert word_limit(2, 1) == (200, 300)
    assert word_limit(10, 5) == (300, 400)


def test_word_limit_window_at_a_known_depth() -> None:
    # a node at depth 2 (path root -> c -> g, three nodes): D = 3
    assert word_limit(2, 2) == (100 + 30 * 2 + 20 * 3, 100 + 30 * 2 + 20 * 3 + 100)
    assert word_limit(3, 2) == (250, 350)
    assert word_limit(2, 0) == (180, 280)  # the root alone: D = 1


def test_stops_on_gap_of_two_after_one_round() -> None:
    s = add_round(MatchScore(0, 0, 0, 0), V.A_MUCH_BETTER)
    assert should_stop(s, max_rounds=5)
    assert outcome(s) == Outcome.A_WINS


def test_continues_on_small_gap_and_stops_at_round_limit() -> None:
    s = add_round(MatchScore(0, 0, 0, 0), V.B_BETTER)
    assert not should_stop(s, max_rounds=3)
    s = add_round(s, V.TIE)
    assert not should_stop(s, max_rounds=3)
    s = add_round(s, V.TIE)
    assert should_stop(s, max_rounds=3)
    assert outcome(s) == Outcome.B_WINS


def test_void_rounds_never_score_and_too_many_void_the_match() -> None:
    s = add_round(MatchScore(0, 0, 0, 0), None)
    assert (s.points_a, s.points_b, s.rounds_scored, s.rounds_void) == (0, 0, 0, 1)
    assert outcome(s) == Outcome.VOID  # nothing scored: not a tie
    s = add_round(add_round(s, None), None)
    assert should_stop(s, max_rounds=10, max_void_rounds=2)
    assert outcome(s, max_void_rounds=2) == Outcome.VOID


def test_level_scores_are_a_tie() -> None:
    s = add_round(add_round(MatchScore(0, 0, 0, 0), V.A_BETTER), V.B_BETTER)
    assert outcome(s) == Outcome.TIE
