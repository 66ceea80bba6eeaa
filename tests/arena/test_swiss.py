from __future__ import annotations

import random

from drarena.arena.swiss import default_rounds, pair_round


def test_default_rounds() -> None:
    assert [default_rounds(n) for n in (1, 2, 5, 6, 8, 9, 64)] == [0, 2, 4, 4, 4, 5, 7]


def test_first_round_is_a_seeded_shuffle() -> None:
    agents = [f"agent{i}" for i in range(8)]
    one = pair_round(agents, None, set(), set(), random.Random(7))
    two = pair_round(list(reversed(agents)), None, set(), set(), random.Random(7))
    assert one == two  # input order does not matter, the seed does
    other = [pair_round(agents, None, set(), set(), random.Random(s)) for s in range(5)]
    assert len({p.pairs for p in other}) > 1
    assert sorted(a for p in one.pairs for a in p) == sorted(agents)


def test_pairs_by_rating_without_repeats() -> None:
    ratings = {"a": 1100.0, "b": 1090.0, "c": 1000.0, "d": 990.0}
    p = pair_round(list(ratings), ratings, set(), set(), random.Random(0))
    assert p.pairs == (("a", "b"), ("c", "d"))
    p = pair_round(list(ratings), ratings, {frozenset(("a", "b"))}, set(), random.Random(0))
    assert p.pairs == (("a", "c"), ("b", "d"))


def test_backtracks_rather_than_strand_an_agent() -> None:
    ratings = {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}
    played = {frozenset(p) for p in [("a", "b"), ("c", "d"), ("a", "c")]}
    p = pair_round(list(ratings), ratings, played, set(), random.Random(0))
    assert p.pairs == (("a", "d"), ("b", "c"))


def test_bye_goes_to_lowest_without_one() -> None:
    ratings = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert pair_round(list(ratings), ratings, set(), set(), random.Random(0)).bye == "c"
    assert pair_round(list(ratings), ratings, set(), {"c"}, random.Random(0)).bye == "b"


def test_full_swiss_has_no_repeats_when_possible() -> None:
    agents = [f"x{i:02d}" for i in range(16)]
    rng = random.Random(3)
    played: set[frozenset[str]] = set()
    ratings = None
    for _ in range(default_rounds(len(agents))):
        p = pair_round(agents, ratings, played, set(), rng)
        for pair in p.pairs:
            assert frozenset(pair) not in played
            played.add(frozenset(pair))
        ratings = {a: float(rng.random()) for a in agents}
    assert len(played) == 8 * default_rounds(16)


def test_ratings_equal_but_for_rounding_noise_pair_by_name() -> None:
    """Two agents with the same record fit to the same rating up to the BLAS's last bits,
    which differ between CPUs: the pairing must not depend on them."""
    for noise in (1e-10, -1e-10, 3e-8):
        ratings = {"a": 1000.0, "b": 900.0, "c": 950.0, "d": 1000.0 + noise}
        p = pair_round(list(ratings), ratings, {frozenset(("a", "b"))}, set(), random.Random(0))
        assert p.pairs == (("a", "d"), ("c", "b")), noise
    # a real gap, however small in Elo terms, still orders them
    ratings = {"a": 1000.0, "b": 900.0, "c": 950.0, "d": 1000.01}
    p = pair_round(list(ratings), ratings, {frozenset(("a", "b"))}, set(), random.Random(0))
    assert p.pairs == (("d", "a"), ("c", "b"))
