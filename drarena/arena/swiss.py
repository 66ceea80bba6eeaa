"""Swiss pairing (pure, seeded).

DR-Arena (paper 4.1): a random first round, then agents of similar rating meet without
repeats, so n agents are ranked with O(n log n) pairings instead of O(n^2). An odd count gives
the lowest-rated agent that has not yet had one a bye.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Collection, Mapping, Sequence

from drarena.ledger.rating import settled
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
