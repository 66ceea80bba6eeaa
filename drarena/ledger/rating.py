"""Bradley-Terry ratings on the Elo scale, bootstrap intervals and interval-respecting ranks.

Pure: games in, ratings out. The fit is the maximum of the BT likelihood with a weak prior
(each agent plays `prior_games` virtual ties against an anchor of average strength), because
small Swiss tournaments often separate perfectly and the plain MLE then runs to infinity. Ties
count as half a win each way. Ratings are 1000 + 400*log10(e)*theta, centred on 1000.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize

from drarena.records import Record

ELO_SCALE = 400.0 / math.log(10.0)
ELO_ANCHOR = 1000.0


@dataclasses.dataclass(frozen=True, slots=True)
class Game(Record):
    """One decided match: score_a is 1 (A won), 0.5 (tie) or 0 (B won)."""

    a: str
    b: str
    score_a: float


@dataclasses.dataclass(frozen=True, slots=True)
class Rating(Record):
    agent: str
    rating: float
    lower: float
    upper: float
    rank: int


def _neg_log_likelihood(
    theta: np.ndarray, ia: np.ndarray, ib: np.ndarray, s: np.ndarray, prior_games: float
) -> tuple[float, np.ndarray]:
    diff = theta[ia] - theta[ib]
    # log sigma(x) computed stably as -logaddexp(0, -x)
    nll = float(np.sum(s * np.logaddexp(0.0, -diff) + (1.0 - s) * np.logaddexp(0.0, diff)))
    p = 1.0 / (1.0 + np.exp(-diff))
    g_diff = p - s
    grad = np.zeros_like(theta)
    np.add.at(grad, ia, g_diff)
    np.add.at(grad, ib, -g_diff)
    if prior_games > 0:
        nll += prior_games * float(np.sum(np.logaddexp(0.0, -theta) + np.logaddexp(0.0, theta)) / 2)
        grad += prior_games * (1.0 / (1.0 + np.exp(-theta)) - 0.5)
    return nll, grad


def fit_strengths(
    agents: Sequence[str], games: Sequence[Game], *, prior_games: float = 1.0
) -> np.ndarray:
    """Natural-log strengths theta (mean zero), in the order of `agents`."""
    index = {name: i for i, name in enumerate(agents)}
    if len(index) != len(agents):
        raise ValueError("agent names must be unique")
    theta0 = np.zeros(len(agents))
    if not games or len(agents) < 2:
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
        options={"maxiter": 1000, "gtol": 1e-10},
    )
    theta: np.ndarray = np.asarray(result.x, dtype=float)
    centred: np.ndarray = theta - theta.mean()
    return centred


def to_elo(theta: np.ndarray) -> np.ndarray:
    elo: np.ndarray = ELO_ANCHOR + ELO_SCALE * (theta - theta.mean())
    return elo


def interval_ranks(lower: Sequence[float], upper: Sequence[float]) -> list[int]:
    """rank = 1 + the number of agents whose lower bound is above this one's upper bound."""
    return [1 + sum(1 for lo in lower if lo > up) for up in upper]


def rate(
    agents: Sequence[str],
    games: Sequence[Game],
    *,
    resamples: int = 1000,
    seed: int = 0,
    prior_games: float = 1.0,
    level: float = 0.95,
) -> list[Rating]:
    """Fit, bootstrap over games (seeded), and rank; sorted by rating, then name."""
    agents = sorted(agents)
    point = to_elo(fit_strengths(agents, games, prior_games=prior_games))
    if games and resamples > 0:
        rng = np.random.default_rng(seed)
        samples = np.empty((resamples, len(agents)))
        for r in range(resamples):
            picks = rng.integers(0, len(games), size=len(games))
            sample = [games[i] for i in picks]
            samples[r] = to_elo(fit_strengths(agents, sample, prior_games=prior_games))
        tail = (1.0 - level) / 2 * 100
        lower = np.percentile(samples, tail, axis=0)
        upper = np.percentile(samples, 100 - tail, axis=0)
    else:
        lower, upper = point.copy(), point.copy()
    ranks = interval_ranks(list(lower), list(upper))
    rows = [
        Rating(
            a,
            round(float(point[i]), 6),
            round(float(lower[i]), 6),
            round(float(upper[i]), 6),
            ranks[i],
        )
        for i, a in enumerate(agents)
    ]
    return sorted(rows, key=lambda r: (-r.rating, r.agent))
