"""CLI: `drarena run compare RUN --against FILE.csv` (agreement with an outside leaderboard)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    c = subparsers.add_parser(
        "compare",
        help="agreement of a run's ratings with an outside leaderboard (CSV: agent,score)",
        description="Spearman, Kendall and Pearson between the run's ratings and the scores "
        "in FILE.csv, with seeded bootstrap intervals over the shared agents. The result is "
        "saved as <run>/comparison.json and report.html is rendered again with a scatter "
        "(every later re-render keeps it). See docs/analyses.md.",
    )
    c.add_argument("run", type=Path, help="run folder, e.g. runs/demo")
    c.add_argument(
        "--against",
        type=Path,
        required=True,
        metavar="FILE.csv",
        help="one `agent,score` row per agent (optional header row, # comments)",
    )
    c.add_argument(
        "--ratings",
        choices=("raw", "style"),
        default="raw",
        help="compare the raw ratings (default) or the style-controlled ones",
    )
    c.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    c.add_argument(
        "--no-report",
        action="store_true",
        help="only print: write neither comparison.json nor report.html",
    )
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from drarena.errors import DrarenaError
    from drarena.files import write_atomic
    from drarena.ledger.compare import compare, read_scores, to_text
    from drarena.ledger.folder import RunDir
    from drarena.ledger.leaderboard import build_leaderboard, check_agents
    from drarena.ledger.style import style_ratings
    from drarena.report.run import COMPARISON_FILE, stored_config, write_report

    if args.resamples < 0:
        raise DrarenaError(f"--resamples: must be 0 or more, got {args.resamples}")
    if args.seed < 0:  # numpy's generator takes none
        raise DrarenaError(f"--seed: must be 0 or more, got {args.seed}")
    run = RunDir(args.run)
    header = run.header()
    if header is None:
        raise DrarenaError(f"{args.run}: no run.json (not a run folder)")
    theirs = read_scores(args.against)  # a bad file fails before anything is computed
    config = stored_config(header.get("config"), f"{run.header_path}: config")
    log = run.read_log()
    if not log:
        raise DrarenaError(f"{run.log_path}: no matches in the log; nothing to compare")
    check_agents(config.agent_names(), log, str(run.log_path))
    if args.ratings == "style":
        ratings = style_ratings(
            config.agent_names(),
            log,
            resamples=config.rating.resamples,
            seed=config.rating.seed,
        ).ratings
        ours = {r.agent: r.rating for r in ratings}
    else:
        # the leaderboard's ratings alone: the analyses would read the comparison.json this
        # command is about to write anew, and a damaged one would block its own repair
        rows = build_leaderboard(
            config.agent_names(), log, resamples=config.rating.resamples, seed=config.rating.seed
        )
        ours = {r.agent: r.rating for r in rows}
    result = compare(
        ours,
        theirs,
        against=f"{args.against.name} ({args.ratings} ratings)",
        resamples=args.resamples,
        seed=args.seed,
    )
    print(to_text(result), end="")
    if not args.no_report:
        write_atomic(run.path / COMPARISON_FILE, result.to_json() + "\n")
        print(f"report: {write_report(run, config, log)}")
    return 0
