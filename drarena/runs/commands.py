"""CLI: `drarena tournament`, `drarena run rank|replay|add-agent|rejudge|match`, `drarena drift
run`."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

# the commands import their modules lazily: `drarena --help` stays fast. What a command shares
# with its function in the Python API (drarena.api) lives in the rooms below, and both call it.


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
    t.add_argument(
        "--examiner-check-pairs",
        type=int,
        default=None,
        metavar="N",
        help="tasks of the examiner-check run (or reused) before the first match: its "
        "figures go into run.json and above the leaderboard (default: the config's "
        "examiner_check.tasks, 1 unless set; each task gives 5 decisive pairs)",
    )
    t.add_argument("--no-examiner-check", action="store_true", help="skip the examiner-check")
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

    ab = subparsers.add_parser(
        "ablate",
        help="rank a run as if each match had stopped after its first K rounds",
        description="The paper's round ablation (section 4.3): each match of the run keeps "
        "its first K recorded rounds, is scored again and the agents rated again, with no "
        "model call; the same pairings, tasks and answers as the full run. Prints the "
        "leaderboard and its rank correlation with the full run's; writes nothing.",
    )
    ab.add_argument("run", type=Path, help="run folder, e.g. runs/demo")
    ab.add_argument(
        "--first-rounds", type=int, required=True, metavar="K", help="rounds each match keeps"
    )
    ab.add_argument("--json", action="store_true", help="print the rows as JSON")
    ab.set_defaults(func=cmd_ablate)

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

    j = subparsers.add_parser(
        "rejudge",
        help="judge a finished run's stored rounds again with another Examiner; "
        "agreement and Cohen's kappa with the run's own verdicts",
        description="Judge every stored round of a finished run again (same tasks, same "
        "answers, both orders, the same judging code) with another judge, and report per-round "
        "agreement and Cohen's kappa with the run's verdicts (5-way, A/TIE/B, failure type), "
        "with bootstrap 95% intervals. The run is only read; the rejudge's model cache, "
        "rejudge.json and rejudge.md go to --out (a second rejudge makes no model calls).",
    )
    j.add_argument("run", type=Path, help="finished run folder, e.g. runs/demo")
    j.add_argument(
        "--model",
        default=None,
        help="the new judge's model: a litellm model string (e.g. openai/qwen2.5-coder-1.5b "
        "with --api-base), or 'served' for the local model server; the run's judge "
        "sampling is kept",
    )
    j.add_argument("--api-base", default=None, help="OpenAI-compatible endpoint of --model")
    j.add_argument(
        "--role", default=None, help="judge with this model role (of --config, else of the run)"
    )
    j.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a tournament config whose models.roles holds the judge "
        "(--role, default its judging role)",
    )
    j.add_argument(
        "--judge",
        default=None,
        metavar="KIND|JSON",
        help="judge with a judge component that calls no model instead: 'evidence', or "
        'JSON such as \'{"kind": "evidence", "args": {"recall_min": 0.4}}\' (the grounded '
        "checklists of an LLM-judged run graded by code: the second opinion of a run played "
        "without one)",
    )
    j.add_argument("--temperature", type=float, default=None, help="judge sampling temperature")
    j.add_argument("--seed", type=int, default=None, help="judge sampling seed")
    where = j.add_mutually_exclusive_group()
    where.add_argument(
        "--out", type=Path, default=None, help="report and cache folder (default <run>-rejudge)"
    )
    where.add_argument(
        "--write",
        type=Path,
        default=None,
        metavar="OUT",
        help="as --out, and make OUT a run folder ranked by the new judgments (run.json naming "
        "the source run and the judge, matches.jsonl rescored, leaderboard, report.html)",
    )
    j.add_argument("--no-serve", action="store_true", help="as for `drarena tournament`")
    j.set_defaults(func=cmd_rejudge)

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
    from drarena.config.tournament import load_config
    from drarena.report.finish import finish_run
    from drarena.runs.execute import play, tournament_options

    config = load_config(args.config)
    options = tournament_options(
        config,
        serve=not args.no_serve,
        model=args.model,
        check_pairs=0 if args.no_examiner_check else args.examiner_check_pairs,
    )
    started = time.perf_counter()
    result = play(config, options, live=args.live)
    finish_run(
        result.run,
        result.config,
        result.log,
        show=("check", "table", "timing", "report", "live"),
        notes=lambda: [
            f"{len(result.log)} matches, {result.model_calls} model calls, "
            f"{time.perf_counter() - started:.0f} s"
        ],
    )
    return 0


def cmd_rank(args: argparse.Namespace) -> int:
    from drarena.report.finish import rank_run

    rank_run(args.run, show=("json",) if args.json else ("table",))
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from drarena.config.stored import read_finished
    from drarena.ledger.leaderboard import build_leaderboard, to_markdown
    from drarena.runs.ablate import cut_log
    from drarena.runs.driftcompare import rank_correlation

    run, config, log = read_finished(args.run, "nothing to ablate")
    cut = cut_log(log, args.first_rounds, config.match.max_void_rounds)
    names, rating = config.agent_names(), config.rating
    rows = build_leaderboard(names, cut, resamples=rating.resamples, seed=rating.seed)
    full = build_leaderboard(names, log, resamples=rating.resamples, seed=rating.seed)
    rho, tau = rank_correlation(
        {r.agent: r.rating for r in full}, {r.agent: r.rating for r in rows}
    )
    if args.json:
        out = {
            "first_rounds": args.first_rounds,
            "rows": [r.to_dict() for r in rows],
            "spearman_vs_all_rounds": rho,
            "kendall_vs_all_rounds": tau,
        }
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    print(f"first {args.first_rounds} round(s) of each match of {run.path}")
    print(to_markdown(rows))
    print(f"Spearman vs. all rounds: {rho}; Kendall: {tau}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from drarena.ledger.folder import RunDir
    from drarena.report.finish import finish_run, live_lines
    from drarena.runs.execute import replay, replay_folder

    if not (args.run / "run.json").is_file() and (args.run / "manifest.json").is_file():
        from drarena.web.commands import cmd_replay as serve_snapshot

        args.snapshot = args.run
        return serve_snapshot(args)

    out = RunDir(replay_folder(args.run, args.out))
    started = time.perf_counter()
    result, differ = replay(RunDir(args.run), out)
    finish_run(out, result.config, result.log, show=())
    print(
        f"replayed {len(result.log)} matches into {out.path} in "
        f"{time.perf_counter() - started:.1f} s with {result.model_calls} model calls"
    )
    for line in live_lines(out.header()):
        print(line)
    if differ:
        print("DIFFERENT: " + ", ".join(differ))
        return 1
    print("identical: matches.jsonl and leaderboard.{md,csv,json}")
    return 0


def cmd_add_agent(args: argparse.Namespace) -> int:
    from drarena.config.tournament import config_of, parse_config
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir
    from drarena.models.config import CacheMode
    from drarena.report.finish import finish_run
    from drarena.runs.execute import RunOptions, execute

    run = RunDir(args.run)
    header = run.require_header()
    try:
        agent_args = json.loads(args.args)
    except ValueError as exc:
        raise DrarenaError(f"--args: not valid JSON ({exc})") from None
    # the run's own config first: parsed only with the newcomer merged in, a damaged run.json
    # would be reported as the newcomer's problem, under `add-agent`
    config = config_of(header, f"{run.header_path}: config")
    data = dict(header.config)
    agents = data.get("agents")
    if not isinstance(agents, list):
        raise DrarenaError(f"{run.header_path}: config.agents is not a list")
    # run.json lists the newcomer before its first placement match: a name already there is
    # an interrupted add-agent when kind and args are the same, and the same command resumes
    # it (Tournament.place refuses an agent of the tournament itself)
    resumed = any(isinstance(a, dict) and a.get("name") == args.name for a in agents)
    if not resumed:
        data["agents"] = [*agents, {"name": args.name, "kind": args.kind, "args": agent_args}]
        config = parse_config(data, "add-agent")
    entry = next(a for a in config.agents if a.name == args.name)
    if (entry.kind, entry.args) != (args.kind, agent_args):
        raise DrarenaError(
            f"--name {args.name}: already an agent of {run.header_path} (kind {entry.kind}, "
            f"args {json.dumps(entry.args, sort_keys=True)}); choose another name, or give "
            "the same kind and args to resume its placement"
        )
    result = execute(
        config,
        run,
        RunOptions(serve=not args.no_serve, cache_mode=CacheMode.READ_WRITE, newcomer=args.name),
    )
    finish_run(run, result.config, result.log)
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
    from drarena.ledger.folder import beside
    from drarena.runs.driftrun import REPORT_JSON, DriftOptions, drift_run

    out: Path = args.out or beside(args.run, "-drift")
    started = time.perf_counter()
    result = drift_run(
        args.run,
        out,
        DriftOptions(
            provider=_json_arg(args.provider, "--provider"),
            web=_json_arg(args.web, "--web"),
            serve=not args.no_serve,
            replay=args.replay,
            model=args.model,
        ),
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


def _judge_arg(text: str | None) -> dict[str, Any] | None:
    """--judge: a bare kind ('evidence') or a JSON {kind, args}."""
    if text is None:
        return None
    if text.lstrip().startswith("{"):
        value: dict[str, Any] = _json_arg(text, "--judge")
        return value
    return {"kind": text.strip()}


def cmd_rejudge(args: argparse.Namespace) -> int:
    from drarena.runs.rejudge import JudgeSpec, RejudgeOptions, rejudge, rejudge_folder

    out = rejudge_folder(args.run, args.write or args.out)
    spec = JudgeSpec(
        model=args.model,
        api_base=args.api_base,
        role=args.role,
        config=args.config,
        temperature=args.temperature,
        seed=args.seed,
        judge=_judge_arg(args.judge),
    )
    started = time.perf_counter()
    result = rejudge(
        args.run, out, spec, RejudgeOptions(write=args.write is not None, serve=not args.no_serve)
    )
    print(result.markdown)
    if result.leaderboard_md is not None:
        from drarena.ledger.folder import RunDir
        from drarena.report.finish import finish_run

        finish_run(RunDir(out), result.config, result.log)
    print(f"{time.perf_counter() - started:.0f} s; {out / 'rejudge.json'}")
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from drarena.runs.single import run_single_match

    return run_single_match(args)
