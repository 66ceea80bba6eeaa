"""CLI: `drarena tournament`, `drarena run rank|replay|add-agent|rejudge|match`, `drarena drift
run`."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    t = subparsers.add_parser("tournament", help="run (or resume) a Swiss tournament")
    t.add_argument("config", type=Path, help="tournament config (YAML), e.g. configs/demo.yaml")
    t.add_argument(
        "--no-serve",
        action="store_true",
        help="do not start the local CPU model server for roles with model 'served' "
        "(use DRARENA_MODEL_API_BASE)",
    )
    t.add_argument(
        "--model",
        default=None,
        help="serve this model with vLLM for 'served' roles (GPU when present; on "
        "the CPU a local Hugging Face folder)",
    )
    t.add_argument(
        "--live",
        action="store_true",
        help="live mode (overrides `offline: true`): agents search the live web "
        "through the config's `live.provider`, the Examiner reads today's "
        "pages, everything read is captured into a new snapshot under "
        "`live.capture_root` that `drarena run replay RUN` replays offline",
    )
    t.set_defaults(func=cmd_tournament)

    r = subparsers.add_parser("rank", help="recompute a run's leaderboard from matches.jsonl")
    r.add_argument("run", type=Path, help="run folder, e.g. runs/demo")
    r.add_argument(
        "--json",
        action="store_true",
        help="print the leaderboard, style-controlled ratings, the paper's analyses and any "
        "saved comparison as one JSON object (docs/analyses.md) instead of the Markdown table",
    )
    r.set_defaults(func=cmd_rank)

    p = subparsers.add_parser(
        "replay",
        help="re-execute a run from its model cache only; check it is byte-identical",
        description="Re-execute a run folder from its model cache only and check the result is "
        "byte-identical. (Given a snapshot folder it serves it, as `drarena snapshot serve` "
        "does.)",
    )
    p.add_argument("run", type=Path, metavar="RUN_OR_SNAPSHOT")
    p.add_argument(
        "--out", type=Path, default=None, help="run replay folder (default <run>-replay)"
    )
    p.add_argument("--port", type=int, default=8765, help="snapshot server port (0 = any)")
    p.add_argument(
        "--origin",
        default=None,
        help="snapshot: captured origin request paths map to (default: first seed's)",
    )
    p.set_defaults(func=cmd_replay)

    a = subparsers.add_parser("add-agent", help="enter a new agent into a finished tournament")
    a.add_argument("run", type=Path)
    a.add_argument("--name", required=True)
    a.add_argument("--kind", required=True, help="agent kind (react, rag, closed_book, ...)")
    a.add_argument("--args", default="{}", help="agent args as JSON")
    a.add_argument("--no-serve", action="store_true")
    a.set_defaults(func=cmd_add_agent)

    d = subparsers.add_parser(
        "drift-run",
        help="ask a finished frozen tournament's questions again live, to the same "
        "agents, and compare verdicts and ratings frozen against live",
    )
    d.add_argument("run", type=Path, help="finished frozen run folder, e.g. runs/demo")
    d.add_argument(
        "--provider",
        default=None,
        help='live search provider as JSON {kind, args}, e.g. \'{"kind": "searxng", '
        '"args": {"url": "http://127.0.0.1:8888"}}\' (default: the run '
        "config's live.provider, else a SearXNG on 127.0.0.1:8888)",
    )
    d.add_argument(
        "--web",
        default=None,
        help="LiveWebSettings as JSON (e.g. connect_to, allow_private_addresses)",
    )
    d.add_argument("--out", type=Path, default=None, help="folder (default <run>-drift)")
    d.add_argument(
        "--replay",
        action="store_true",
        help="re-execute the drift-run in --out from its model cache and capture: "
        "zero model calls, no network, drift-run.json and live-matches.jsonl "
        "must come out identical",
    )
    d.add_argument("--no-serve", action="store_true")
    d.add_argument("--model", default=None, help="as for `drarena tournament`")
    d.set_defaults(func=cmd_drift_run)

    m = subparsers.add_parser("match", help="one match between two agents on one tree")
    m.add_argument("snapshot", type=Path)
    m.add_argument("--a", required=True, help="agent kind for side A")
    m.add_argument("--b", required=True, help="agent kind for side B")
    m.add_argument(
        "--tree", required=True, help="tree id (t03) or its file (snapshots/<name>/trees/t03.json)"
    )
    m.add_argument("--retriever", default="bm25", help="retriever of react and rag agents")
    m.add_argument("--max-rounds", type=int, default=3)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--out", type=Path, default=None, help="folder (default runs/match-...)")
    m.add_argument(
        "--replay",
        action="store_true",
        help="replay from the folder's model cache; zero model calls",
    )
    m.add_argument("--index-root", type=Path, default=Path("index"))
    m.set_defaults(func=cmd_match)


def cmd_tournament(args: argparse.Namespace) -> int:
    from drarena.arena.config import load_config
    from drarena.arena.execute import execute
    from drarena.ledger.folder import RunDir
    from drarena.models.config import CacheMode
    from drarena.report.run import write_report

    config = load_config(args.config)
    if args.live or not config.offline:
        config = config.as_live()
    run = RunDir(config.runs_root / config.name)
    started = time.perf_counter()
    result = execute(
        config, run, serve=not args.no_serve, cache_mode=CacheMode.READ_WRITE, model=args.model
    )
    write_report(run, result.config or config, result.log)
    print(result.leaderboard_md)
    seconds = run.answer_seconds()
    if seconds:
        print(
            "time per answer: "
            + ", ".join(f"{a} {sum(v) / len(v):.1f} s" for a, v in sorted(seconds.items()))
        )
    print(
        f"{len(result.log)} matches, {result.model_calls} model calls, "
        f"{time.perf_counter() - started:.0f} s"
    )
    print(f"report: {run.path / 'report.html'}")
    print_live(run)
    return 0


def print_live(run: Any) -> None:
    """The live run's provider and capture snapshots, as the header records them."""
    header = run.header() or {}
    live = header.get("live")
    if not live:
        return
    print(
        f"mode: live{' (replayed offline)' if live.get('replayed') else ''}, provider "
        f"{live['provider']['kind']} {live['provider']['args']}"
    )
    for c in live["captures"]:
        print(f"capture: {c['path']} ({c.get('fingerprint') or 'unfinished'})")


def cmd_rank(args: argparse.Namespace) -> int:
    from drarena.arena.config import parse_config
    from drarena.arena.execute import finish
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir
    from drarena.ledger.leaderboard import check_agents
    from drarena.report.run import write_report

    run = RunDir(args.run)
    header = run.header()
    if header is None:
        raise DrarenaError(f"{args.run}: no run.json (not a run folder)")
    config = parse_config(header["config"], f"{run.header_path}: config")
    log = run.read_log()
    if not log:  # an empty table would overwrite the real one
        raise DrarenaError(
            f"{run.log_path}: no matches in the log; nothing ranked, the "
            "leaderboard and report are left as they are"
        )
    check_agents(config.agent_names(), log, str(run.log_path))
    from drarena.report.run import run_analyses

    done = run_analyses(run, config, log)  # every input read before anything is written: a
    write_report(run, config, log, done)  # damaged one (a timings.jsonl that is not UTF-8)
    table = finish(run, config, log)  # overwrites nothing
    print(json.dumps(done.to_dict(), indent=2, sort_keys=True) if args.json else table)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from drarena.arena.execute import replay
    from drarena.ledger.folder import RunDir
    from drarena.report.run import write_report

    if not (args.run / "run.json").is_file() and (args.run / "manifest.json").is_file():
        from drarena.web.commands import cmd_replay as serve_snapshot

        args.snapshot = args.run
        return serve_snapshot(args)

    out = RunDir(args.out or args.run.with_name(args.run.name + "-replay"))
    started = time.perf_counter()
    result, differ = replay(RunDir(args.run), out)
    if result.config is not None:
        write_report(out, result.config, result.log)
    print(
        f"replayed {len(result.log)} matches into {out.path} in "
        f"{time.perf_counter() - started:.1f} s with {result.model_calls} model calls"
    )
    print_live(out)
    if differ:
        print("DIFFERENT: " + ", ".join(differ))
        return 1
    print("identical: matches.jsonl and leaderboard.{md,csv,json}")
    return 0


def cmd_add_agent(args: argparse.Namespace) -> int:
    from drarena.arena.config import parse_config
    from drarena.arena.execute import execute
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir
    from drarena.models.config import CacheMode
    from drarena.report.run import write_report

    run = RunDir(args.run)
    header = run.header()
    if header is None:
        raise DrarenaError(f"{args.run}: no run.json (not a run folder)")
    try:
        agent_args = json.loads(args.args)
    except ValueError as exc:
        raise DrarenaError(f"--args: not valid JSON ({exc})") from None
    data = dict(header["config"])
    if not isinstance(data.get("agents"), list):
        raise DrarenaError(f"{run.header_path}: config.agents is not a list")
    data["agents"] = [*data["agents"], {"name": args.name, "kind": args.kind, "args": agent_args}]
    config = parse_config(data, "add-agent")
    result = execute(
        config, run, serve=not args.no_serve, cache_mode=CacheMode.READ_WRITE, newcomer=args.name
    )
    write_report(run, result.config or config, result.log)
    print(result.leaderboard_md)
    print(f"report: {run.path / 'report.html'}")
    return 0


def _json_arg(text: str | None, flag: str) -> Any:
    from drarena.errors import DrarenaError

    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise DrarenaError(f"{flag}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise DrarenaError(f"{flag}: a JSON object is needed")
    return value


def cmd_drift_run(args: argparse.Namespace) -> int:
    from drarena.arena.driftrun import REPORT_JSON, drift_run

    out: Path = args.out or args.run.with_name(args.run.name + "-drift")
    started = time.perf_counter()
    result = drift_run(
        args.run,
        out,
        provider=_json_arg(args.provider, "--provider"),
        web=_json_arg(args.web, "--web"),
        serve=not args.no_serve,
        replay=args.replay,
        model=args.model,
    )
    print(result.markdown)
    print(
        f"{result.model_calls} model calls, {time.perf_counter() - started:.0f} s; "
        f"{out / REPORT_JSON}"
    )
    if result.identical is not None:
        print(
            "replay: "
            + ("identical" if result.identical else "DIFFERENT")
            + ": drift-run.json and live-matches.jsonl"
        )
        return 0 if result.identical else 1
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from drarena.arena.single import run_single_match

    return run_single_match(args)
