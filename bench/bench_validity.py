"""The known-order ladder: does a tournament recover an order known by construction?

Agents whose order is known before any match: oracle (given the round's target pages) >
react with hybrid search > closed_book (no web) > null (always "I don't know", no model call).
A tournament on the committed snapshot (the demo's settings, these agents, enough Swiss rounds
that every pair meets once with 4 agents), then: the recovered order (by rating), Spearman and
Kendall (tau-b, ties counted) against the known order, per pair the known-better agent's score
rate over scored rounds (win 1, tie 0.5, loss 0) with a seeded 95% bootstrap interval, the
examiner-check figures the run recorded (when the tournament runs one), and the wall time.

An Examiner that judges by position (SmolLM2-135M) ties everything: all ratings equal, the
correlations undefined (printed as nan), every score rate 0.5. That is the expected failure.

Usage: .venv/bin/python bench/bench_validity.py [--model qwen1.5b-cpu] [--ladder reduced]
  [--max-rounds 2] [--judge evidence|hybrid|pairwise|pointwise|both]
  [--snapshot snapshots/debian-handbook]                        (`make bench-validity`)
--ladder reduced drops react (oracle > closed_book > null: the cheapest ladder). The run
folder is runs/bench-validity-<model>-<snapshot>-<ladder>-<judge>; a rerun resumes it, and a
finished one replays from its cache.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from scipy import stats

from drarena.ledger.records import MatchRecord

REPO = Path(__file__).resolve().parents[1]
REACT = {
    "name": "react",
    "kind": "react",
    "args": {
        "retriever": {"kind": "bm25"},
        "max_steps": 2,
        "max_open_pages": 1,
        "search_k": 3,
        "page_chars": 1500,
    },
}
LADDERS: dict[str, list[dict[str, Any]]] = {
    # react kept to a search, one page read and the answer (two model calls): the 1.5B model
    # on 2 cores takes about 3.5 minutes for that (docs/validity.md)
    "full": [
        {"name": "oracle", "kind": "oracle", "args": {"context_chars": 4000}},
        REACT,
        {"name": "closed_book", "kind": "closed_book"},
        {"name": "null", "kind": "null"},
    ],
    "reduced": [
        {"name": "oracle", "kind": "oracle", "args": {"context_chars": 4000}},
        {"name": "closed_book", "kind": "closed_book"},
        {"name": "null", "kind": "null"},
    ],
}


def ladder_agents(
    ladder: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The ladder's agents, each taking the args of the base config's agent of the same kind
    where it has one: the 1.5B demo's oracle and closed_book answer by parts (one call a part
    of the question), without which the oracle pastes its first page and is cut before the
    last part (docs/models.md, runs B-D) and the ladder would measure that, not the judge."""
    by_kind = {str(agent.get("kind")): agent for agent in base}
    agents: list[dict[str, Any]] = []
    for agent in ladder:
        chosen = dict(agent)
        peer = by_kind.get(str(agent["kind"]))
        if peer is not None and peer.get("args"):
            chosen["args"] = json.loads(json.dumps(peer["args"]))
        agents.append(chosen)
    return agents


def ladder_config(
    base: Mapping[str, Any],
    ladder: str,
    name: str,
    max_rounds: int,
    judge: Mapping[str, Any] | None,
    snapshot: Path | None = None,
) -> dict[str, Any]:
    """The base config with the ladder's agents; Swiss rounds: n - 1 for an even n, n for an
    odd one (each round has a bye then), so that every pair can meet once. `judge`: the
    {kind, args} judging it (None: the base config's)."""
    config: dict[str, Any] = json.loads(json.dumps(base))  # a deep copy of plain YAML data
    agents = ladder_agents(LADDERS[ladder], config.get("agents") or [])
    config["name"] = name
    config["agents"] = agents
    config["swiss_rounds"] = len(agents) - 1 + len(agents) % 2
    if snapshot is not None:
        config["snapshot"] = str(snapshot)
    match = dict(config.get("match") or {})
    match["max_rounds"] = max_rounds
    if judge is not None:
        for key in ("judge_mode", "judge_prompt", "judge_orders", "judge_sees_checklist"):
            match.pop(key, None)
        match["judge"] = dict(judge)
    config["match"] = match
    return config


def round_scores(log: Sequence[MatchRecord]) -> dict[tuple[str, str], list[float]]:
    """Per ordered pair (x, y): x's score in each scored round against y (1, 0.5, 0)."""
    scores: dict[tuple[str, str], list[float]] = {}
    for match in log:
        for rnd in match.rounds:
            if rnd.void_reason or rnd.judgment is None:
                continue
            signed = rnd.judgment.reconciled.verdict.signed
            a = 1.0 if signed > 0 else 0.0 if signed < 0 else 0.5
            scores.setdefault((match.a, match.b), []).append(a)
            scores.setdefault((match.b, match.a), []).append(1.0 - a)
    return scores


def bootstrap_mean(
    values: Sequence[float], seed: int, resamples: int = 2000
) -> tuple[float, float]:
    """Seeded percentile bootstrap 95% interval of the mean."""
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def order_agreement(known: Sequence[str], rating: Mapping[str, float]) -> tuple[float, float]:
    """(Spearman rho, Kendall tau-b) of the ratings against the known order (first best);
    nan when the ratings are all equal (no order recovered at all)."""
    truth = [len(known) - i for i in range(len(known))]
    got = [rating[a] for a in known]
    if len(set(got)) < 2:
        return math.nan, math.nan
    rho = float(stats.spearmanr(truth, got).statistic)
    tau = float(stats.kendalltau(truth, got).statistic)
    return rho, tau


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None, help="MODEL (default: the CPU SmolLM2 server)")
    parser.add_argument("--ladder", choices=sorted(LADDERS), default="full")
    parser.add_argument("--max-rounds", type=int, default=2, help="rounds per match")
    parser.add_argument(
        "--judge",
        default=None,
        help="the judge kind: evidence, hybrid, pairwise, pointwise, both (default: the base "
        "config's judge)",
    )
    parser.add_argument("--judge-mode", dest="judge", help="the older name of --judge")
    parser.add_argument(
        "--snapshot", type=Path, default=None, help="the frozen web (default: the base config's)"
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="config whose settings the ladder keeps (default configs/demo.yaml; "
        "configs/demo-qwen.yaml with --model qwen1.5b-cpu: its 1800 s call timeout)",
    )
    args = parser.parse_args()

    import drarena

    label = (args.model or "smollm2").replace("/", "_")
    base_path = args.base or REPO / (
        "configs/demo-qwen.yaml" if args.model == "qwen1.5b-cpu" else "configs/demo.yaml"
    )
    base = yaml.safe_load(base_path.read_text(encoding="utf-8"))
    judge = None if args.judge is None else {"kind": args.judge}
    judge_name = args.judge or str(((base.get("match") or {}).get("judge") or {}).get("kind"))
    where = (args.snapshot or Path(base["snapshot"])).name
    name = f"bench-validity-{label}-{where}-{args.ladder}-{judge_name}"[:64]
    config_data = ladder_config(base, args.ladder, name, args.max_rounds, judge, args.snapshot)
    config_path = REPO / "runs" / f"{name}.yaml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(yaml.safe_dump(config_data, sort_keys=False), encoding="utf-8")
    config = drarena.load_config(config_path)
    # `drarena tournament`'s options without its examiner-check (the ladder is the measure)
    options = dataclasses.replace(
        drarena.tournament_options(config), model=args.model, examiner_check_pairs=0
    )
    started = time.perf_counter()
    run = drarena.run_tournament(config, options)  # played, ranked, report.html written
    wall = time.perf_counter() - started

    known = [a["name"] for a in LADDERS[args.ladder]]
    rating = {row.agent: row.rating for row in run.leaderboard}
    recovered = sorted(known, key=lambda a: (-rating[a], known.index(a)))
    rho, tau = order_agreement(known, rating)
    print(
        f"model: {args.model or 'smollm2-135m (vLLM CPU)'}; ladder {args.ladder}; "
        f"snapshot {where}; judge {config.match.judge_spec().kind}; {len(run.matches)} matches, "
        f"{run.header.model_calls} model calls, wall {wall:.0f} s"
    )
    print("known order:     " + " > ".join(known))
    print("recovered order: " + " > ".join(f"{a} ({rating[a]:.0f})" for a in recovered))
    note = " (nan: all ratings equal)" if math.isnan(rho) else ""
    print(f"Spearman rho {rho:.3f}, Kendall tau-b {tau:.3f}{note}")
    scores = round_scores(run.matches)
    print("pair (known better first): score rate over scored rounds [95% bootstrap], W/T/L")
    for i, x in enumerate(known):
        for y in known[i + 1 :]:
            values = scores.get((x, y), [])
            if not values:
                print(f"  {x} vs {y}: no scored round")
                continue
            low, high = bootstrap_mean(values, seed=len(values))
            wins, ties = values.count(1.0), values.count(0.5)
            print(
                f"  {x} vs {y}: {sum(values) / len(values):.2f} [{low:.2f}, {high:.2f}], "
                f"{wins}/{ties}/{len(values) - wins - ties} of {len(values)}"
            )
    header = json.loads((run.path / "run.json").read_text(encoding="utf-8"))
    checks = {k: v for k, v in header.items() if "examiner" in k.lower() and "check" in k.lower()}
    print("examiner-check: " + (json.dumps(checks)[:1500] if checks else "none recorded"))
    print(f"run folder: {run.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
