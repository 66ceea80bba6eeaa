"""`drarena match`: one match between two agent kinds on one tree, printed as it happens.

The folder it writes (match.json, roles.json, llm-cache.sqlite) can be replayed with
`--replay`: zero model calls, and the record must come out byte-identical.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from drarena.arena.config import TournamentConfig, parse_config
from drarena.arena.match import MatchRunner, match_rng, match_seed
from drarena.arena.records import RoundRecord
from drarena.arena.runs import write_atomic
from drarena.arena.session import bind_roles, load_pages, load_trees, model_endpoint
from drarena.arena.session import prepare_inputs as prepare
from drarena.errors import DrarenaError
from drarena.models.config import CacheMode

RETRIEVING = ("react", "rag")


def match_config(args: argparse.Namespace) -> TournamentConfig:
    names = (args.a, args.b) if args.a != args.b else (f"{args.a}-1", f"{args.b}-2")
    agents = []
    for name, kind in zip(names, (args.a, args.b), strict=True):
        agent_args: dict[str, Any] = {}
        if kind in RETRIEVING:
            agent_args["retriever"] = {"kind": args.retriever}
        agents.append({"name": name, "kind": kind, "args": agent_args})
    return parse_config({
        "name": f"match-{names[0]}-vs-{names[1]}-{args.tree}", "snapshot": str(args.snapshot),
        "index_root": str(args.index_root), "seed": args.seed,
        "trees": {"count": 1, "ids": [args.tree]},
        "match": {"max_rounds": args.max_rounds, "page_budget_chars": 4000},
        "models": {"retry": {"max_attempts": 2},
                   "roles": {role: {"model": "served", "timeout_s": 600,
                                    "sampling": {"max_tokens": 512}}
                             for role in ("examiner", "agent")}},
        "agents": agents}, "drarena match")


def print_round(r: RoundRecord) -> None:
    task = r.task.task
    print(f"--- round {r.index + 1}: depth {r.depth}, width {r.width}")
    if task is not None:
        print(f"Q: {task.question}")
    if r.judgment is not None:
        j = r.judgment
        print(f"verdicts: A/B {j.ab.raw.judgment.verdict.value}, B/A "
              f"{j.ba.raw.judgment.verdict.value} -> {j.reconciled.verdict.value}"
              f" (loser failure {j.reconciled.loser_failure_type.value})")
    if r.void_reason:
        print(f"void: {r.void_reason}")
    print(f"score {r.score.points_a}-{r.score.points_b}"
          + (f"; next: {r.transition.move.value} to depth {r.transition.depth}, width "
             f"{r.transition.width}" if r.transition else "; match over"), flush=True)


def run_single_match(args: argparse.Namespace) -> int:
    from drarena.agents.citations import SnapshotUrlChecker
    from drarena.agents.registry import AgentContext, build_agent
    from drarena.arena.execute import _expander, _guard
    from drarena.corpus.treewalk import TreeWalker
    from drarena.models.client import ModelClient

    config = match_config(args)
    out: Path = args.out or Path("runs") / config.name
    out.mkdir(parents=True, exist_ok=True)
    roles_path, record_path = out / "roles.json", out / "match.json"
    if args.replay:
        if not roles_path.is_file() or not record_path.is_file():
            raise DrarenaError(f"{out}: nothing to replay (no roles.json or match.json)")
        fixed = json.loads(roles_path.read_text(encoding="utf-8"))
    else:
        prepare(config)
    trees = load_trees(config)
    pages = load_pages(config)
    tree = trees[args.tree]
    a, b = (agent.name for agent in config.agents)
    mode = CacheMode.REPLAY if args.replay else CacheMode.READ_WRITE
    endpoint = model_endpoint(config, serve=not args.replay)
    with endpoint as (api_base, served):
        if args.replay:
            api_base, served = fixed["api_base"], fixed["model"]
        bound = bind_roles(config.models, api_base, served, out / "llm-cache.sqlite", mode)
        client = ModelClient(bound)
        checker = SnapshotUrlChecker(config.snapshot)
        context = AgentContext(client=client, snapshot_dir=config.snapshot,
                               index_root=config.index_root, url_checker=checker)
        agents = {e.name: build_agent(e.spec(), context, name=e.name) for e in config.agents}
        walker = TreeWalker(tree=tree, pages=pages, rng=match_rng(config.seed, a, b, tree.id),
                            expander=_expander(config))
        runner = MatchRunner(config.name, 0, a, b, agents[a], agents[b], walker, client,
                             config.match, match_seed(config.seed, a, b, tree.id),
                             on_round=print_round)
        print(f"{a} (A) vs {b} (B) on {tree.id} ({tree.nodes[0].url})", flush=True)
        with _guard(config, bound):
            record = asyncio.run(runner.run())
        checker.close()
    text = record.to_json() + "\n"
    print(f"result: {record.outcome.value} {record.score.points_a}-{record.score.points_b}, "
          f"{len(record.rounds)} round(s), {client.model_calls} model calls"
          + (f"; void: {record.void_reason}" if record.void_reason else ""))
    if args.replay:
        same = record_path.read_text(encoding="utf-8") == text
        print("replay: " + ("identical match record" if same else "DIFFERENT match record"))
        return 0 if same else 1
    write_atomic(record_path, text)
    write_atomic(roles_path, json.dumps({"api_base": api_base, "model": served}) + "\n")
    print(f"record: {record_path}")
    return 0
