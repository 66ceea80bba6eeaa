"""Swiss pairing and the plan of a round (pure, seeded).

DR-Arena (paper 4.1): a random first round, then agents of similar rating meet without
repeats, so n agents are ranked with O(n log n) pairings instead of O(n^2). An odd count gives
the lowest-rated agent that has not yet had one a bye.

A round's plan (plan_round) is a pure function of the seed and the results of the rounds before
it: the tournament plays it, and the early-start planner (drarena.arena.earlystart) asks for it
under outcomes that have not happened yet.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import random
from collections.abc import Collection, Mapping, Sequence

from drarena.ledger.leaderboard import games_of
from drarena.ledger.rating import Game, fit_strengths, settled, to_elo
from drarena.ledger.records import MatchRecord
from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class Pairing(Record):
    pairs: tuple[tuple[str, str], ...]
    bye: str | None

    _tuple_fields = ("pairs",)


def default_rounds(n_agents: int) -> int:
    """ceil(log2 n) + 1: the paper's slight oversampling over the Swiss minimum."""
    if n_agents < 2:
        return 0
    return math.ceil(math.log2(n_agents)) + 1


def _pair_without_repeats(
    order: list[str], played: Collection[frozenset[str]]
) -> list[tuple[str, str]] | None:
    if not order:
        return []
    first, rest = order[0], order[1:]
    for cand in rest:
        if frozenset((first, cand)) in played:
            continue
        tail = _pair_without_repeats([x for x in rest if x != cand], played)
        if tail is not None:
            return [(first, cand), *tail]
    return None


def pair_round(
    agents: Sequence[str],
    ratings: Mapping[str, float] | None,
    played: Collection[frozenset[str]],
    byes: Collection[str],
    rng: random.Random,
) -> Pairing:
    """Pairs for the next round. ratings=None means the first round: a seeded shuffle.

    Later rounds order agents by rating (then name) and pair each with the nearest-rated
    opponent it has not met, backtracking when that strands someone. If no repeat-free
    pairing exists (a tournament longer than the field allows), adjacent agents meet again.
    Ratings are compared settled (ledger.rating.settled): an unrounded sort let the CPU's
    last bits choose who plays whom and as which side (seen: a-vs-d on one machine, d-vs-a
    on another).
    """
    if ratings is None:
        order = sorted(agents)
        rng.shuffle(order)
    else:
        order = sorted(agents, key=lambda a: (-settled(ratings.get(a, 0.0)), a))
    bye = None
    if len(order) % 2 == 1:
        candidates = [a for a in reversed(order) if a not in byes] or [order[-1]]
        bye = candidates[0]
        order = [a for a in order if a != bye]
    pairs = _pair_without_repeats(order, set(played))
    if pairs is None:
        pairs = [(order[i], order[i + 1]) for i in range(0, len(order), 2)]
    return Pairing(tuple(pairs), bye)


@dataclasses.dataclass(frozen=True, slots=True)
class PlannedMatch(Record):
    match_id: str
    swiss_round: int
    a: str
    b: str
    tree: str


def round_rng(seed: int, swiss_round: int, salt: str = "swiss") -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1f{salt}\x1f{swiss_round}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def ratings_of(agents: Sequence[str], games: Sequence[Game]) -> dict[str, float]:
    """Elo-scale Bradley-Terry ratings the pairing orders agents by."""
    elo = to_elo(fit_strengths(list(agents), games))
    return {a: float(r) for a, r in zip(agents, elo, strict=True)}


def current_ratings(agents: Sequence[str], records: Sequence[MatchRecord]) -> dict[str, float]:
    return ratings_of(agents, games_of(records))


@dataclasses.dataclass(frozen=True, slots=True)
class Result(Record):
    """What the pairing reads of a finished match: who met, and A's score (1, 0.5 or 0;
    None for a void match, which counts as a meeting but not as a game)."""

    a: str
    b: str
    score_a: float | None

    @classmethod
    def of(cls, m: MatchRecord) -> Result:
        return cls(m.a, m.b, m.score_a())


@functools.lru_cache(maxsize=2048)
def _pairing(
    agents: tuple[str, ...],
    swiss_round: int,
    seed: int,
    results: tuple[Result, ...],
    byes: frozenset[str],
) -> Pairing:
    """Memoised (pure): the early-start planner asks for the same history many times, and the
    real plan of a round is one of the hypothetical ones it has already fitted."""
    if swiss_round == 0:
        ratings = None
    else:
        fitted = [Game(r.a, r.b, r.score_a) for r in results if r.score_a is not None]
        ratings = ratings_of(agents, fitted)
    played = {frozenset((r.a, r.b)) for r in results}
    return pair_round(list(agents), ratings, played, set(byes), round_rng(seed, swiss_round))


def _planned(pairing: Pairing, swiss_round: int, tree_ids: Sequence[str]) -> list[PlannedMatch]:
    return [
        PlannedMatch(f"r{swiss_round}-{a}-vs-{b}-{tree}", swiss_round, a, b, tree)
        for a, b in pairing.pairs
        for tree in tree_ids
    ]


def plan_round(
    agents: Sequence[str],
    tree_ids: Sequence[str],
    swiss_round: int,
    seed: int,
    earlier: Sequence[MatchRecord | Result],
    byes: Sequence[str],
) -> tuple[Pairing, list[PlannedMatch]]:
    """Round `swiss_round` (0-based): pure function of the seed and earlier matches."""
    results = tuple(m if isinstance(m, Result) else Result.of(m) for m in earlier)
    pairing = _pairing(tuple(sorted(agents)), swiss_round, seed, results, frozenset(byes))
    return pairing, _planned(pairing, swiss_round, sorted(tree_ids))
