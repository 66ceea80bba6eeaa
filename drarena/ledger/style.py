"""Style-controlled ratings: Bradley-Terry with style covariates, as Arena-Hard and Search Arena
fit them (pure: matches in, ratings out).

Why: DR-Arena's judge is told to reward length, citations and markdown (paper, appendix A.2),
so a rank may come from how an answer looks rather than what it finds. Fitting the agents'
strengths together with style coefficients on the same matches shows how much of each rating
the style explains: a rating that drops under style control was partly bought with style.

Features of one answer (its report text, which every MatchRecord stores): words, citations
(the answer's parsed citation list), markdown headers (`#` lines or whole-line bold), list
items (`-`, `*`, `+` or `1.` lines) and tables (markdown separator rows). A match's feature
for one side is the mean over its judged rounds where both sides answered; the covariate is
the normalised difference (a - b) / (a + b) (0 when both are 0), scaled to unit standard
deviation over the matches (not centred, so a match with no style difference stays 0). A
feature that does not vary in the run is left out of the fit and reported as such; with no
feature left the fit is exactly the raw one.

The fit: P(A wins) = sigmoid(theta_A - theta_B + x . beta), ties half a win each way, the same
weak prior on theta as the raw fit (drarena.ledger.rating) and the same on each beta (small
runs separate perfectly). Intervals: the same seeded bootstrap over matches as the raw ratings.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from drarena.agents.base import Answer
from drarena.ledger.rating import (
    Game,
    Rating,
    fit_strengths,
    interval_ranks,
    minimize_lbfgs,
    settled,
    to_elo,
)
from drarena.ledger.records import MatchRecord
from drarena.records import Record

FEATURES = ("words", "citations", "headers", "list_items", "tables")
_HEADER = re.compile(r"^ {0,3}(#{1,6}\s+\S|\*\*[^*\n]+\*\*:?\s*$)")
_LIST = re.compile(r"^\s*([-*+]|\d{1,3}[.)])\s+\S")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$")


@dataclasses.dataclass(frozen=True, slots=True)
class StyleFeatures(Record):
    words: int
    citations: int
    headers: int
    list_items: int
    tables: int

    def vector(self) -> list[float]:
        return [float(getattr(self, f)) for f in FEATURES]


@dataclasses.dataclass(frozen=True, slots=True)
class Coefficient(Record):
    """A style feature's coefficient (log-odds per standard deviation of the normalised
    difference); None when the feature did not vary in the run (left out of the fit)."""

    feature: str
    beta: float | None
    lower: float | None
    upper: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class StyleRatings(Record):
    ratings: tuple[Rating, ...]
    coefficients: tuple[Coefficient, ...]
    matches: int
    matches_without_style: int
    agent_features: dict[str, dict[str, float]]


def answer_features(answer: Answer) -> StyleFeatures:
    lines = answer.report.splitlines()
    return StyleFeatures(
        words=len(answer.report.split()),
        citations=len(answer.citations),
        headers=sum(1 for line in lines if _HEADER.match(line)),
        list_items=sum(1 for line in lines if _LIST.match(line)),
        tables=sum(1 for line in lines if _TABLE_RULE.match(line)),
    )


def match_features(m: MatchRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """Mean features of each side over the judged rounds both answered; None if none."""
    fa, fb = [], []
    for rnd in m.rounds:
        if rnd.judgment is None or rnd.void_reason:
            continue
        if rnd.answer_a is None or rnd.answer_b is None:
            continue
        fa.append(answer_features(rnd.answer_a).vector())
        fb.append(answer_features(rnd.answer_b).vector())
    if not fa:
        return None
    return np.mean(np.array(fa), axis=0), np.mean(np.array(fb), axis=0)


def covariates(matches: Sequence[MatchRecord]) -> tuple[np.ndarray, int]:
    """Raw normalised differences, one row per match (zeros where no round had both
    answers), and the number of such matches."""
    rows = []
    missing = 0
    for m in matches:
        pair = match_features(m)
        if pair is None:
            missing += 1
            rows.append(np.zeros(len(FEATURES)))
            continue
        a, b = pair
        total = a + b
        rows.append(np.divide(a - b, total, out=np.zeros_like(total), where=total > 0))
    return (np.array(rows) if rows else np.zeros((0, len(FEATURES)))), missing


def _nll(
    params: np.ndarray,
    n: int,
    ia: np.ndarray,
    ib: np.ndarray,
    x: np.ndarray,
    s: np.ndarray,
    prior: float,
) -> tuple[float, np.ndarray]:
    theta, beta = params[:n], params[n:]
    z = theta[ia] - theta[ib] + x @ beta
    nll = float(np.sum(s * np.logaddexp(0.0, -z) + (1.0 - s) * np.logaddexp(0.0, z)))
    g = 1.0 / (1.0 + np.exp(-z)) - s
    grad = np.zeros_like(params)
    np.add.at(grad, ia, g)
    np.add.at(grad, ib, -g)
    grad[n:] = x.T @ g
    if prior > 0:
        nll += prior * float(np.sum(np.logaddexp(0.0, -params) + np.logaddexp(0.0, params)) / 2)
        grad += prior * (1.0 / (1.0 + np.exp(-params)) - 0.5)
    return nll, grad


def fit_style(
    agents: Sequence[str],
    pairs: Sequence[tuple[str, str, float]],
    x: np.ndarray,
    *,
    prior_games: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(theta centred, beta) for games (a, b, score_a) with covariate rows `x` (already scaled;
    zero columns allowed). With no column, exactly drarena.ledger.rating.fit_strengths."""
    n = len(agents)
    if x.shape[1] == 0 or not pairs:
        games = [Game(a, b, s) for a, b, s in pairs]
        return fit_strengths(agents, games, prior_games=prior_games), np.zeros(x.shape[1])
    index = {name: i for i, name in enumerate(agents)}
    ia = np.array([index[a] for a, _, _ in pairs])
    ib = np.array([index[b] for _, b, _ in pairs])
    s = np.array([v for _, _, v in pairs], dtype=float)
    params = minimize_lbfgs(_nll, np.zeros(n + x.shape[1]), (n, ia, ib, x, s, prior_games))
    theta = params[:n]
    return theta - theta.mean(), params[n:]


def style_ratings(
    agents: Sequence[str],
    matches: Sequence[MatchRecord],
    *,
    resamples: int = 1000,
    seed: int = 0,
    prior_games: float = 1.0,
    level: float = 0.95,
) -> StyleRatings:
    """Style-controlled ratings of the decided matches, sorted like drarena.ledger.rating.rate."""
    agents = sorted(agents)
    decided = [m for m in matches if m.score_a() is not None]
    pairs = [(m.a, m.b, float(m.score_a() or 0.0)) for m in decided]
    raw, missing = covariates(decided)
    std = raw.std(axis=0) if len(raw) else np.zeros(len(FEATURES))
    used = [i for i in range(len(FEATURES)) if std[i] > 1e-12]
    x = raw[:, used] / std[used] if used else np.zeros((len(decided), 0))
    theta, beta = fit_style(agents, pairs, x, prior_games=prior_games)
    point = to_elo(theta)
    if pairs and resamples > 0:
        rng = np.random.default_rng(seed)
        samples = np.empty((resamples, len(agents)))
        betas = np.empty((resamples, len(used)))
        fits: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}  # same draw, same fit
        for r in range(resamples):
            picks = rng.integers(0, len(pairs), size=len(pairs))
            key = picks.tobytes()
            if key not in fits:
                t, b = fit_style(
                    agents, [pairs[i] for i in picks], x[picks], prior_games=prior_games
                )
                fits[key] = (to_elo(t), b)
            samples[r], betas[r] = fits[key]
        tail = (1.0 - level) / 2 * 100
        lower, upper = (np.percentile(samples, q, axis=0) for q in (tail, 100 - tail))
        b_low, b_up = (np.percentile(betas, q, axis=0) for q in (tail, 100 - tail))
    else:
        lower, upper = point.copy(), point.copy()
        b_low, b_up = beta.copy(), beta.copy()
    low, high = [settled(v) for v in lower], [settled(v) for v in upper]  # as rate() does
    ranks = interval_ranks(low, high)
    rows = sorted(
        (Rating(a, settled(point[i]), low[i], high[i], ranks[i]) for i, a in enumerate(agents)),
        key=lambda r: (-r.rating, r.agent),
    )
    coefs = []
    for i, name in enumerate(FEATURES):
        if i in used:
            j = used.index(i)
            coefs.append(
                Coefficient(
                    name,
                    round(float(beta[j]), 6),
                    round(float(b_low[j]), 6),
                    round(float(b_up[j]), 6),
                )
            )
        else:
            coefs.append(Coefficient(name, None, None, None))
    return StyleRatings(
        ratings=tuple(rows),
        coefficients=tuple(coefs),
        matches=len(decided),
        matches_without_style=missing,
        agent_features=agent_feature_means(agents, matches),
    )


def agent_feature_means(
    agents: Sequence[str], matches: Sequence[MatchRecord]
) -> dict[str, dict[str, float]]:
    """Mean features per answer of each agent over every answer it gave (for the report)."""
    sums = {a: np.zeros(len(FEATURES)) for a in agents}
    counts = dict.fromkeys(agents, 0)
    for m in matches:
        for rnd in m.rounds:
            for agent, answer in ((m.a, rnd.answer_a), (m.b, rnd.answer_b)):
                if answer is not None and agent in sums:
                    sums[agent] += answer_features(answer).vector()
                    counts[agent] += 1
    return {
        a: {
            f: round(float(sums[a][i] / counts[a]), 2) if counts[a] else 0.0
            for i, f in enumerate(FEATURES)
        }
        for a in agents
    }
