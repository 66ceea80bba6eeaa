"""`drarena run match`: one match between two agent kinds on one tree, printed as it happens.

The folder it writes (match.json, roles.json, llm-cache.sqlite) can be replayed with
`--replay`: zero model calls, and the record must come out byte-identical.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from drarena.arena.match import MatchRunner, match_rng, match_seed
from drarena.config.tournament import TournamentConfig, parse_config
from drarena.errors import DrarenaError
from drarena.files import read_bounded, write_atomic
from drarena.ledger.records import RoundRecord
from drarena.models.config import CacheMode

RETRIEVING = ("react", "rag")
# A replay reads roles.json from --out, a folder that may be shared or damaged: bounded. Why
# 64 MiB: it holds one model name and one endpoint (under 1 KB whatever the match), and 64 MiB
# is the project's bound for small files.
MAX_ROLES_BYTES = 64 << 20


def tree_id(arg: str) -> str:
    """`--tree` takes a tree id (t03) or the path of its file (snapshots/x/trees/t03.json)."""
    path = Path(arg)
    if path.suffix == ".json" or len(path.parts) > 1:
        if not path.is_file():
            raise DrarenaError(f"--tree: no tree file {arg}")
        return path.stem
    return arg


def match_config(args: argparse.Namespace) -> TournamentConfig:
    args.tree = tree_id(args.tree)
    names = (args.a, args.b) if args.a != args.b else (f"{args.a}-1", f"{args.b}-2")
    agents = []
    for name, kind in zip(names, (args.a, args.b), strict=True):
        agent_args: dict[str, Any] = {}
        if kind in RETRIEVING:
            agent_args["retriever"] = {"kind": args.retriever}
        agents.append({"name": name, "kind": kind, "args": agent_args})
    return parse_config(
        {
            "name": f"match-{names[0]}-vs-{names[1]}-{args.tree}",
            "snapshot": str(args.snapshot),
            "index_root": str(args.index_root),
            "seed": args.seed,
            "trees": {"count": 1, "ids": [args.tree]},
            "match": {"max_rounds": args.max_rounds, "page_budget_chars": 4000},
            "models": {
                "retry": {"max_attempts": 2},
                "roles": {
                    role: {"model": "served", "timeout_s": 600, "sampling": {"max_tokens": 512}}
                    for role in ("examiner", "agent")
                },
            },
            "agents": agents,
        },
        "drarena run match",
    )


def print_round(r: RoundRecord) -> None:
    task = r.task.task
    print(f"--- round {r.index + 1}: depth {r.depth}, width {r.width}")
    if task is not None:
        print(f"Q: {task.question}")
    if r.judgment is not None:
        j = r.judgment
        orders = ", ".join(f"{o.order} {o.raw.judgment.verdict.value}" for o in j.orders())
        print(
            f"verdicts: {orders or 'pointwise'} -> {j.reconciled.verdict.value}"
            f" (loser failure {j.reconciled.loser_failure_type.value})"
        )
    if r.void_reason:
        print(f"void: {r.void_reason}")
    print(
        f"score {r.score.points_a}-{r.score.points_b}"
        + (
            f"; next: {r.transition.move.value} to depth {r.transition.depth}, width "
            f"{r.transition.width}"
            if r.transition
            else "; match over"
        ),
        flush=True,
    )


def run_single_match(args: argparse.Namespace) -> int:
    from drarena.runs.context import OpenOptions, check_config, open_run
    from drarena.runs.prepare import prepare
    from drarena.runs.webmode import web_mode

    config = match_config(args)
    out: Path = args.out or Path("runs") / config.name
    out.mkdir(parents=True, exist_ok=True)
    roles_path, record_path = out / "roles.json", out / "match.json"
    cache = out / "llm-cache.sqlite"
    fixed_roles = None
    replay_tools = None
    if args.replay:
        if not roles_path.is_file() or not record_path.is_file():
            raise DrarenaError(f"{out}: nothing to replay (no roles.json or match.json)")
        fixed_roles = _recorded_roles(config, roles_path)
        replay_tools = _has_tool_record(cache)
    mode = CacheMode.REPLAY if args.replay else CacheMode.READ_WRITE
    server: dict[str, str | None] = {}
    web = web_mode(config)  # chosen once: frozen, or live capturing nothing
    config = check_config(config, web=web)
    if not args.replay:  # a replay reads what the match read
        prepare(config, web)
    with open_run(
        config,
        OpenOptions(
            cache_path=cache,
            cache_mode=mode,
            serve=not args.replay,
            fixed_roles=fixed_roles,
            web=web,
            replay_tools=replay_tools,
            on_endpoint=lambda base, model: server.update(api_base=base, model=model),
            private=(out,),
        ),
    ) as ctx:
        if args.tree not in ctx.trees:
            raise DrarenaError(f"--tree: no tree {args.tree!r}")
        tree = ctx.trees[args.tree]
        a, b = (agent.name for agent in config.agents)
        walker = ctx.walker(tree, match_rng(config.seed, a, b, tree.id))
        runner = MatchRunner(
            config.name,
            0,
            a,
            b,
            ctx.agents[a],
            ctx.agents[b],
            walker,
            ctx.client,
            config.match,
            match_seed(config.seed, a, b, tree.id),
            on_round=print_round,
            terms=lambda: ctx.terms,
            page_text=ctx.snapshot_text,
        )
        print(f"{a} (A) vs {b} (B) on {tree.id} ({tree.nodes[0].url})", flush=True)
        with ctx.guard():
            record = asyncio.run(runner.run())
        client = ctx.client
    text = record.to_json() + "\n"
    print(
        f"result: {record.outcome.value} {record.score.points_a}-{record.score.points_b}, "
        f"{len(record.rounds)} round(s), {client.model_calls} model calls"
        + (f"; void: {record.void_reason}" if record.void_reason else "")
    )
    if args.replay:
        same = record_path.read_text(encoding="utf-8") == text
        print("replay: " + ("identical match record" if same else "DIFFERENT match record"))
        return 0 if same else 1
    write_atomic(record_path, text)
    write_atomic(
        roles_path,
        json.dumps({"api_base": server.get("api_base"), "model": server.get("model")}) + "\n",
    )
    print(f"record: {record_path}")
    return 0


def _recorded_roles(config: TournamentConfig, roles_path: Path) -> dict[str, dict[str, Any]]:
    """Every role bound to the model and endpoint the recorded match used (roles.json), so
    the replay asks its cache the same questions; a damaged file is one line."""
    redo = "run the match again without --replay"
    try:
        raw = read_bounded(roles_path, MAX_ROLES_BYTES, f"damaged; {redo}")
        fixed = json.loads(raw.decode("utf-8"))
        return {
            role: {"model": f"openai/{fixed['model']}", "api_base": fixed["api_base"]}
            for role in config.models.roles
        }
    except (ValueError, RecursionError, KeyError, TypeError):  # not UTF-8, JSON, the shape
        raise DrarenaError(
            f"{roles_path}: damaged (an object with the model and api_base is what the "
            f"match wrote); {redo}"
        ) from None


def _has_tool_record(cache: Path) -> bool | None:
    """None (replay tool calls from the record) when the folder's cache holds one; False for
    a folder recorded before tool records, which re-runs retrieval."""
    import sqlite3

    if not cache.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT COUNT(*) FROM tools").fetchone()
    except sqlite3.DatabaseError:
        return False
    return None if row and row[0] else False
