"""The rating fit's shortcuts give the bytes scipy's plain L-BFGS-B gives.

Why: a replay compares leaderboard.{md,csv,json} byte for byte with a run recorded by an
earlier drarena, so the shortcuts that keep a replay fast (no fit when the start is already
the optimum, one OpenBLAS thread, a fit reused for the same bootstrap draw, one bootstrap per
log) must change no bit of the ratings. Each is checked against the straightforward
computation, written out here as the code did it before.
"""

from __future__ import annotations

import random

import numpy as np
from scipy.optimize import minimize

from drarena.ledger.rating import (
    GTOL,
    Game,
    _neg_log_likelihood,
    fit_strengths,
    interval_ranks,
    rate,
    to_elo,
)
from drarena.ledger.style import _nll, fit_style


def random_log(rng: random.Random, *, ties_only: bool = False) -> tuple[list[str], list[Game]]:
    agents = [f"agent{i}" for i in range(rng.randint(2, 9))]
    games = []
    for _ in range(rng.randint(1, 30)):
        a, b = rng.sample(agents, 2)
        games.append(Game(a, b, 0.5 if ties_only else rng.choice((0.0, 0.5, 1.0, 1.0))))
    return agents, games


def plain_fit(agents: list[str], games: list[Game], prior_games: float = 1.0) -> np.ndarray:
    """fit_strengths as it was: scipy on every call, OpenBLAS's default threads."""
    index = {name: i for i, name in enumerate(agents)}
    theta0 = np.zeros(len(agents))
    if not games:
        return theta0
    ia = np.array([index[g.a] for g in games])
    ib = np.array([index[g.b] for g in games])
    s = np.array([g.score_a for g in games], dtype=float)
    result = minimize(
        _neg_log_likelihood,
        theta0,
        args=(ia, ib, s, prior_games),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 1000, "gtol": GTOL},
    )
    theta = np.asarray(result.x, dtype=float)
    centred: np.ndarray = theta - theta.mean()
    return centred


def plain_rate(
    agents: list[str], games: list[Game], resamples: int, seed: int
) -> list[tuple[str, float, float, float, int]]:
    """rate as it was: every resample fitted again."""
    agents = sorted(agents)
    point = to_elo(plain_fit(agents, games))
    rng = np.random.default_rng(seed)
    samples = np.empty((resamples, len(agents)))
    for r in range(resamples):
        picks = rng.integers(0, len(games), size=len(games))
        samples[r] = to_elo(plain_fit(agents, [games[i] for i in picks]))
    lower = np.percentile(samples, 2.5, axis=0)
    upper = np.percentile(samples, 97.5, axis=0)
    ranks = interval_ranks(list(lower), list(upper))
    rows = [
        (
            a,
            round(float(point[i]), 6),
            round(float(lower[i]), 6),
            round(float(upper[i]), 6),
            ranks[i],
        )
        for i, a in enumerate(agents)
    ]
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def test_fits_are_the_bytes_of_plain_scipy() -> None:
    rng = random.Random(7)
    for n in range(150):
        agents, games = random_log(rng, ties_only=n % 3 == 0)
        assert fit_strengths(agents, games).tobytes() == plain_fit(agents, games).tobytes()


def test_a_log_of_ties_is_fitted_without_scipy_and_gives_its_bytes() -> None:
    """All ties: the gradient at the start is zero and L-BFGS-B returns the start itself."""
    agents, games = ["a", "b", "c"], [Game("a", "b", 0.5), Game("b", "c", 0.5)]
    ours = fit_strengths(agents, games)
    assert ours.tobytes() == plain_fit(agents, games).tobytes() == np.zeros(3).tobytes()


def test_style_fit_is_the_bytes_of_plain_scipy() -> None:
    rng = random.Random(11)
    for n in range(60):
        agents, games = random_log(rng, ties_only=n % 3 == 0)
        pairs = [(g.a, g.b, g.score_a) for g in games]
        x = np.array([[rng.uniform(-1, 1) for _ in range(3)] for _ in games])
        index = {name: i for i, name in enumerate(agents)}
        args = (
            len(agents),
            np.array([index[a] for a, _, _ in pairs]),
            np.array([index[b] for _, b, _ in pairs]),
            x,
            np.array([v for _, _, v in pairs], dtype=float),
            1.0,
        )
        result = minimize(
            _nll,
            np.zeros(len(agents) + 3),
            args=args,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 1000, "gtol": GTOL},
        )
        theta, beta = fit_style(agents, pairs, x)
        params = np.asarray(result.x, dtype=float)
        plain = params[: len(agents)]
        assert theta.tobytes() == (plain - plain.mean()).tobytes()
        assert beta.tobytes() == params[len(agents) :].tobytes()


def test_bootstrap_with_reused_fits_is_the_bytes_of_refitting_each_draw() -> None:
    rng = random.Random(3)
    for _ in range(4):
        agents, games = random_log(rng)
        games = games[:6]  # few games: draws repeat, so fits are reused
        ours = [
            (r.agent, r.rating, r.lower, r.upper, r.rank)
            for r in rate(agents, games, resamples=200, seed=5)
        ]
        assert ours == plain_rate(agents, games, 200, 5)


def test_rate_asked_twice_gives_equal_rows_that_the_caller_may_keep() -> None:
    games = [Game("a", "b", 1.0), Game("b", "c", 0.5)]
    first = rate(["c", "b", "a"], games, resamples=50, seed=1)
    first.pop()  # a caller's list is its own: the kept result is not changed
    second = rate(["a", "b", "c"], games, resamples=50, seed=1)
    assert len(second) == 3 and second[:2] == first
