"""CLI: `drarena run compare RUN --against FILE.csv` (agreement with an outside leaderboard),
`drarena run audit RUN` (people label rounds; docs/audit.md)."""

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

    a = subparsers.add_parser(
        "audit",
        help="a local page where people label a run's rounds blind (a human audit of the "
        "Examiner); --import/--export their labels as CSV",
        description="Serve a local annotation page (127.0.0.1 only, a token in its URL) that "
        "shows a stratified, seeded sample of the run's rounds blind: question, checklist, "
        "both answers in a per-person random order, their cited pages from the snapshot. "
        "Labels append to RUN/audit/labels.jsonl; `drarena run rank RUN` then shows the "
        "agreement between people and the Examiner. See docs/audit.md.",
    )
    a.add_argument("run", type=Path, help="finished run folder, e.g. runs/demo")
    a.add_argument("--n", type=int, default=30, help="rounds in the sample (default 30)")
    a.add_argument("--seed", type=int, default=0, help="sample and answer-order seed")
    a.add_argument("--port", type=int, default=8767, help="port on 127.0.0.1 (0 = any)")
    a.add_argument(
        "--snapshot",
        type=Path,
        default=None,
        help="snapshot folder the cited pages are read from (default: the run config's)",
    )
    io_ = a.add_mutually_exclusive_group()
    io_.add_argument(
        "--import",
        dest="import_csv",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="append the labels of FILE.csv (made by --export, or a spreadsheet with at "
        "least annotator, match_id, round, verdict) to the run's labels, then exit",
    )
    io_.add_argument(
        "--export",
        dest="export_csv",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="write the run's labels as CSV to a new FILE.csv (- for stdout), then exit",
    )
    a.set_defaults(func=cmd_audit)


def cmd_compare(args: argparse.Namespace) -> int:
    from drarena.config.tournament import config_of
    from drarena.errors import DrarenaError
    from drarena.files import write_atomic
    from drarena.ledger.compare import compare, read_scores, to_text
    from drarena.ledger.folder import RunDir
    from drarena.ledger.leaderboard import build_leaderboard, check_agents
    from drarena.ledger.style import style_ratings
    from drarena.report.finish import finish_run
    from drarena.report.sections.comparison import COMPARISON_FILE

    if args.resamples < 0:
        raise DrarenaError(f"--resamples: must be 0 or more, got {args.resamples}")
    if args.seed < 0:  # numpy's generator takes none
        raise DrarenaError(f"--seed: must be 0 or more, got {args.seed}")
    run = RunDir(args.run)
    header = run.require_header()
    theirs = read_scores(args.against)  # a bad file fails before anything is computed
    config = config_of(header, f"{run.header_path}: config")
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
        finish_run(run, config, log, show=("report",), leaderboard=False)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    import sys

    from drarena.errors import DrarenaError
    from drarena.files import read_bounded, write_atomic
    from drarena.ledger.audit import (
        append_labels,
        labelled_rounds,
        labels_from_csv,
        labels_path,
        labels_to_csv,
        new_labels,
        read_labels,
    )
    from drarena.ledger.folder import RunDir

    if args.n < 1:
        raise DrarenaError(f"--n: 1 or more rounds, got {args.n}")
    run = RunDir(args.run)
    run.require_header()
    path = labels_path(args.run)
    rounds = labelled_rounds(run.read_log())
    known = read_labels(path, rounds)
    if args.export_csv is not None:
        text = labels_to_csv(known)
        if str(args.export_csv) == "-":
            sys.stdout.write(text)
            return 0
        if args.export_csv.exists() or args.export_csv.is_symlink():
            raise DrarenaError(f"--export {args.export_csv}: exists; choose a new file")
        write_atomic(args.export_csv, text)
        print(f"{len(known)} labels written to {args.export_csv}")
        return 0
    if args.import_csv is not None:
        data = read_bounded(args.import_csv, 64 << 20)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DrarenaError(f"--import {args.import_csv}: not UTF-8 text") from None
        incoming = labels_from_csv(text, str(args.import_csv), rounds)
        fresh = new_labels(known, incoming)
        append_labels(path, fresh)
        print(f"{len(fresh)} labels added to {path} ({len(incoming) - len(fresh)} already there)")
        return 0
    from drarena.report.auditserver import make_server, open_session

    session = open_session(args.run, n=args.n, seed=args.seed, snapshot=args.snapshot)
    server = make_server(session, args.port, say=print)
    print(
        f"audit of {args.run}: {len(session.chosen)} rounds sampled (seed {args.seed}), "
        f"{len(known)} labels so far; labels go to {path}"
    )
    print(f"open {server.url()}  (Ctrl-C to stop; then `drarena run rank {args.run}`)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
