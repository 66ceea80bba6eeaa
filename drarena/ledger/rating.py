"""Bradley-Terry ratings on the Elo scale, bootstrap intervals and interval-respecting ranks.

Pure: games in, ratings out. The fit is the maximum of the BT likelihood with a weak prior
(each agent plays `prior_games` virtual ties against an anchor of average strength), because
small Swiss tournaments often separate perfectly and the plain MLE then runs to infinity. Ties
count as half a win each way. Ratings are 1000 + 400*log10(e)*theta, centred on 1000.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from drarena.records import Record

ELO_SCALE = 400.0 / math.log(10.0)
ELO_ANCHOR = 1000.0
GTOL = 1e-10  # L-BFGS-B's tolerance on the largest gradient component


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


def minimize_lbfgs(
    fun: Callable[..., tuple[float, np.ndarray]], x0: np.ndarray, args: tuple[Any, ...]
) -> np.ndarray:
    """scipy's L-BFGS-B from `x0` (`fun` returns the value and the gradient); when the
    gradient at `x0` is already within GTOL, `x0` itself, without importing scipy.

    Why: L-BFGS-B checks the gradient before its first step and returns `x0` unchanged when
    it is within the tolerance, so the shortcut gives the same bytes; and it is what a fit
    of only tied games (the usual outcome with a small CPU judge, and many bootstrap
    resamples of any small tournament) meets, so a replay of such a run never pays for
    scipy's import (about 0.35 s, a third of the demo's replay)."""
    _, grad = fun(x0, *args)
    if float(np.max(np.abs(grad))) <= GTOL:  # NaN compares False: scipy decides
        return np.array(x0, dtype=float)
    from scipy.optimize import minimize

    with _one_blas_thread():
        result = minimize(
            fun, x0, args=args, jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": GTOL}
        )
    return np.asarray(result.x, dtype=float)


def warm_up_fits() -> None:
    """Import what a fit that moves from its start needs (scipy's L-BFGS-B, threadpoolctl's
    view of BLAS) ahead of the first such fit.

    Why: that import is 0.3-0.35 s; the first rating fit of a tournament paid it at the end of
    round 1, in the early-start planner, while every model server waited (128 agents on 16
    simulated replicas: 0.33 s of the first round boundary with nothing in flight). The
    tournament calls this in a thread while round 1's matches wait on their models. Replays
    do not (they keep skipping scipy where every fit is a tie: see minimize_lbfgs)."""
    import scipy.optimize  # noqa: F401

    _blas_controller()


@functools.cache
def _blas_controller() -> Any:
    """threadpoolctl's view of the BLAS libraries loaded now (scipy's OpenBLAS included:
    made after its import)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """BLAS on one thread while L-BFGS-B runs. Why: a fit here has 2 to a few dozen
    parameters, and OpenBLAS's threads cost more to wake than the work: on 2 cores a fit
    took 29 ms with its default threads and 0.5 ms with one, so a bootstrap of 1,000
    resamples took most of a replay's time (16 s for the 1.5B demo). OpenBLAS splits no
    operation this small, so the result is the same bytes (tests/ledger check it)."""
    limit: contextlib.AbstractContextManager[Any] = _blas_controller().limit(
        limits=1, user_api="blas"
    )
    return limit


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
    theta = minimize_lbfgs(_neg_log_likelihood, theta0, (ia, ib, s, prior_games))
    centred: np.ndarray = theta - theta.mean()
    return centred


def to_elo(theta: np.ndarray) -> np.ndarray:
    elo: np.ndarray = ELO_ANCHOR + ELO_SCALE * (theta - theta.mean())
    return elo


# Decimals a rating keeps wherever it is written or compared: agents with the same record
# have the same rating in exact arithmetic, but the fit's last bits differ between CPUs
# (BLAS kernels for AVX2, AVX-512 and AMX sum in different orders), and no pairing, rank or
# file may depend on them.
RATING_DECIMALS = 6


def settled(value: float) -> float:
    """A rating (or a bound, or a gap between two) at RATING_DECIMALS."""
    return round(float(value), RATING_DECIMALS)


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
    key = (tuple(sorted(agents)), tuple(games), resamples, seed, prior_games, level)
    return list(_rate(*key))


@functools.lru_cache(maxsize=8)
def _rate(
    agents: tuple[str, ...],
    games: tuple[Game, ...],
    resamples: int,
    seed: int,
    prior_games: float,
    level: float,
) -> tuple[Rating, ...]:
    """`rate`, kept for the same inputs. Why: a command writes the leaderboard and then the
    report from the same log, and each asked for the same bootstrap (1,000 fits) again."""
    point = to_elo(fit_strengths(agents, games, prior_games=prior_games))
    if games and resamples > 0:
        rng = np.random.default_rng(seed)
        samples = np.empty((resamples, len(agents)))
        fits: dict[bytes, np.ndarray] = {}  # the same draw, in the same order: the same fit
        for r in range(resamples):
            picks = rng.integers(0, len(games), size=len(games))
            key = picks.tobytes()
            if key not in fits:
                sample = [games[i] for i in picks]
                fits[key] = to_elo(fit_strengths(agents, sample, prior_games=prior_games))
            samples[r] = fits[key]
        tail = (1.0 - level) / 2 * 100
        lower = np.percentile(samples, tail, axis=0)
        upper = np.percentile(samples, 100 - tail, axis=0)
    else:
        lower, upper = point.copy(), point.copy()
    # ranks compare the bounds as written (settled), not the fit's CPU-dependent last bits
    low, high = [settled(x) for x in lower], [settled(x) for x in upper]
    ranks = interval_ranks(low, high)
    rows = [Rating(a, settled(point[i]), low[i], high[i], ranks[i]) for i, a in enumerate(agents)]
    return tuple(sorted(rows, key=lambda r: (-r.rating, r.agent)))
