"""How many judge calls does Swiss + adaptive stopping need, against a full round-robin?

Simulated agents have known latent skills; a noisy judge decides each round. For each design
we raise its budget (trees per pairing for Swiss, fixed rounds per pair for round-robin) until
the fitted Bradley-Terry order matches the true one with Spearman >= 0.9 in 90% of seeds,
and print the judge calls each needed and their ratio. Judge calls count both orders (2 per
round). Usage: python bench/bench_tournament_sim.py [--seeds 30] [--sizes 6 16 64]
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import time

from scipy.stats import spearmanr

from drarena.arena.swiss import default_rounds, pair_round
from drarena.examiner.evolve import MatchScore, Outcome, add_round, outcome, should_stop
from drarena.examiner.verdicts import Verdict
from drarena.ledger.rating import Game, fit_strengths

JUDGE_NOISE = 0.6  # sd of the judge's error on the skill difference (logit units)


def simulated_verdict(diff: float, rng: random.Random) -> Verdict:
    seen = diff + rng.gauss(0.0, JUDGE_NOISE)
    p = 1.0 / (1.0 + math.exp(-seen))
    u = rng.random()
    if abs(u - p) < 0.1:
        return Verdict.TIE
    strong = abs(seen) > 1.0
    if u < p:
        return Verdict.A_MUCH_BETTER if strong else Verdict.A_BETTER
    return Verdict.B_MUCH_BETTER if strong else Verdict.B_BETTER


def play_match(
    diff: float, rng: random.Random, *, adaptive: bool, max_rounds: int
) -> tuple[float | None, int]:
    """Score for A (1, 0.5, 0) and the rounds played."""
    score = MatchScore(0, 0, 0, 0)
    while True:
        score = add_round(score, simulated_verdict(diff, rng))
        done = (
            should_stop(score, max_rounds=max_rounds)
            if adaptive
            else (score.rounds_scored >= max_rounds)
        )
        if done:
            break
    result = outcome(score)
    value = {Outcome.A_WINS: 1.0, Outcome.B_WINS: 0.0, Outcome.TIE: 0.5}.get(result)
    return value, score.rounds_scored


def swiss(skills: dict[str, float], trees: int, rng: random.Random) -> tuple[list[Game], int]:
    agents = sorted(skills)
    games: list[Game] = []
    played: set[frozenset[str]] = set()
    byes: set[str] = set()
    ratings = None
    rounds = 0
    for _ in range(default_rounds(len(agents))):
        pairing = pair_round(agents, ratings, played, byes, rng)
        if pairing.bye:
            byes.add(pairing.bye)
        for a, b in pairing.pairs:
            played.add(frozenset((a, b)))
            for _t in range(trees):
                value, n = play_match(skills[a] - skills[b], rng, adaptive=True, max_rounds=5)
                rounds += n
                if value is not None:
                    games.append(Game(a, b, value))
        theta = fit_strengths(agents, games)
        ratings = {a: float(t) for a, t in zip(agents, theta, strict=True)}
    return games, 2 * rounds


def round_robin(
    skills: dict[str, float], rounds_per_pair: int, rng: random.Random
) -> tuple[list[Game], int]:
    games = []
    for a, b in itertools.combinations(sorted(skills), 2):
        value, _ = play_match(
            skills[a] - skills[b], rng, adaptive=False, max_rounds=rounds_per_pair
        )
        if value is not None:
            games.append(Game(a, b, value))
    pairs = len(skills) * (len(skills) - 1) // 2
    return games, 2 * rounds_per_pair * pairs


def success(design: str, n: int, budget: int, seeds: int) -> tuple[float, float]:
    """Share of seeds with Spearman >= 0.9, and mean judge calls."""
    hits, calls = 0, 0
    for seed in range(seeds):
        rng = random.Random(seed * 1_000 + n)
        skills = {f"agent{i:02d}": rng.gauss(0.0, 1.0) for i in range(n)}
        if design == "swiss":
            games, c = swiss(skills, budget, rng)
        else:
            games, c = round_robin(skills, budget, rng)
        agents = sorted(skills)
        theta = fit_strengths(agents, games)
        rho = spearmanr([skills[a] for a in agents], list(theta)).statistic
        hits += rho >= 0.9
        calls += c
    return hits / seeds, calls / seeds


def needed(design: str, n: int, seeds: int, max_budget: int = 12) -> tuple[int, float, float, bool]:
    """The smallest budget meeting the target, or the largest tried (reached=False)."""
    rate, calls = 0.0, 0.0
    for budget in range(1, max_budget + 1):
        rate, calls = success(design, n, budget, seeds)
        if rate >= 0.9:
            return budget, rate, calls, True
    return max_budget, rate, calls, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[6, 16, 64])
    args = parser.parse_args()
    print(
        f"judge noise sd {JUDGE_NOISE}, skills ~ N(0, 1), {args.seeds} seeds, "
        "target: Spearman >= 0.9 in 90% of seeds"
    )
    print(
        f"{'n':>4} {'design':>12} {'budget':>7} {'success':>8} {'judge calls':>12} "
        f"{'pairings':>9} {'secs':>6}"
    )
    for n in args.sizes:
        row = {}
        for design in ("swiss", "round-robin"):
            t0 = time.perf_counter()
            budget, rate, calls, reached = needed(design, n, args.seeds)
            pairings = (n // 2) * default_rounds(n) if design == "swiss" else n * (n - 1) // 2
            row[design] = (calls, reached)
            note = "" if reached else "  (target not reached at the largest budget)"
            print(
                f"{n:>4} {design:>12} {budget:>7} {rate:>8.2f} {calls:>12.0f} {pairings:>9} "
                f"{time.perf_counter() - t0:>6.1f}{note}"
            )
        (rr, rr_ok), (sw, sw_ok) = row["round-robin"], row["swiss"]
        bound = "" if rr_ok and sw_ok else (">= " if sw_ok else "?? ")
        print(f"{n:>4} {'ratio':>12} round-robin / swiss judge calls = {bound}{rr / sw:.2f}")


if __name__ == "__main__":
    main()
