"""CLI for agents: `drarena agent ask SNAPSHOT "question"` runs one agent once and shows its work.

Imports stay light; the model client, Lucene and the snapshot load inside the command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError

ROLE = "agent"


def register(subparsers: Any) -> None:
    ask = subparsers.add_parser(
        "ask",
        help="run one agent once on a snapshot and print its report and trajectory",
        description="Runs one agent on one question over the frozen web of SNAPSHOT and prints "
        "the report, its citations (checked against the snapshot) and a compact trajectory. "
        "Without --api-base it reuses DRARENA_MODEL_API_BASE or starts the local CPU model "
        "server.",
    )
    ask.add_argument("snapshot", help="snapshot folder or name under snapshots/")
    ask.add_argument("question", help="the question")
    ask.add_argument(
        "--agent", default="react", help="agent kind (default react; see `drarena kinds`)"
    )
    ask.add_argument(
        "--retriever",
        default="bm25",
        help="retriever kind for react and rag (default bm25; see `drarena kinds`)",
    )
    ask.add_argument(
        "--search-url",
        default="http://127.0.0.1:8888",
        metavar="URL",
        help="--retriever live: the SearXNG instance (default %(default)s)",
    )
    ask.add_argument(
        "--allow-private",
        action="store_true",
        help="--retriever live: let pages on private/loopback addresses be opened",
    )
    ask.add_argument("--api-base", default=None, help="OpenAI-compatible endpoint (…/v1)")
    ask.add_argument(
        "--model", default=None, help="model name at --api-base (default: the first one it serves)"
    )
    ask.add_argument(
        "--words",
        default="100-200",
        metavar="LOW-HIGH",
        help="word limit of the report (default 100-200)",
    )
    ask.add_argument("--max-steps", type=int, default=6, help="react steps (default 6)")
    ask.add_argument(
        "--max-tokens", type=int, default=512, help="completion tokens per model call (default 512)"
    )
    ask.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="URL",
        help="oracle: a target page (URL or docid); repeat for several",
    )
    ask.add_argument(
        "--index-root",
        type=Path,
        default=Path("index"),
        help="folder holding index/<name>/ (default ./index)",
    )
    ask.add_argument(
        "--answer-parts",
        action="store_true",
        help="oracle, rag: a question numbered (1) ... (2) ... answered one part a call",
    )
    ask.add_argument("--json", action="store_true", help="print the Answer record as JSON")
    ask.set_defaults(func=cmd_ask)


def parse_words(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", text)
    if not match or not 0 < int(match.group(1)) <= int(match.group(2)):
        raise DrarenaError(
            f"--words {text!r}: expected LOW-HIGH with 0 < LOW <= HIGH, e.g. 100-200"
        )
    return int(match.group(1)), int(match.group(2))


def agent_spec(
    kind: str, retriever: str, max_steps: int, search_url: str = "", allow_private: bool = False
) -> dict[str, Any]:
    args: dict[str, Any] = {"role": ROLE}
    if kind in ("react", "rag"):
        args["retriever"] = {"kind": retriever}
        if retriever == "live":
            args["retriever"]["args"] = {
                "provider": {"kind": "searxng", "args": {"url": search_url}},
                "settings": {"allow_private_addresses": allow_private},
            }
    if kind == "react":
        if max_steps < 1:
            raise DrarenaError(f"--max-steps {max_steps}: must be at least 1")
        args["max_steps"] = max_steps
    return {"kind": kind, "args": args}


@contextlib.contextmanager
def model_endpoint(api_base: str | None, model: str | None) -> Iterator[tuple[str, str]]:
    """(litellm model, api_base): the given endpoint, else a reused or started server."""
    from drarena.models import serve

    if api_base:
        api_base = api_base.rstrip("/")
        if model is None:
            try:
                served = serve.served_models(api_base, timeout_s=10.0)
            except (OSError, ValueError) as exc:
                raise DrarenaError(
                    f"--api-base {api_base}: no model server answers ({exc})"
                ) from None
            if not served:
                raise DrarenaError(f"--api-base {api_base}: the server serves no model")
            model = served[0]
        yield f"openai/{model}", api_base
        return
    if not os.environ.get("DRARENA_MODEL_API_BASE"):
        print(
            "starting the local CPU model server (first start takes a minute)...",
            file=sys.stderr,
            flush=True,
        )
    with serve.model_server() as handle:
        yield handle.litellm_model, handle.api_base


def target_pages(snapshot: Path, targets: list[str]) -> tuple[Any, ...]:
    from drarena.agents.base import SourcePage
    from drarena.search.docstore import DocStore

    docs = DocStore.from_snapshot(snapshot)
    pages = []
    for target in targets:
        doc = docs.get(target)
        pages.append(SourcePage(doc.url, doc.title, doc.contents))
    return tuple(pages)


def cmd_ask(args: argparse.Namespace) -> int:
    from drarena.agents.base import Conversation
    from drarena.agents.citations import SnapshotUrlChecker
    from drarena.agents.registry import AgentContext, build_agent
    from drarena.agents.show import format_answer
    from drarena.models.client import ModelClient
    from drarena.models.config import ModelRole, ModelsConfig
    from drarena.search.docstore import resolve_snapshot

    snapshot = resolve_snapshot(args.snapshot)
    words = parse_words(args.words)
    if args.max_tokens < 1:
        raise DrarenaError(f"--max-tokens {args.max_tokens}: must be at least 1")
    if args.agent == "oracle" and not args.target:
        raise DrarenaError(
            "--agent oracle needs the round's target pages: give --target URL (repeatable)"
        )
    if args.target and args.agent != "oracle":
        raise DrarenaError("--target is for --agent oracle only")
    if args.answer_parts and args.agent not in ("oracle", "rag"):
        raise DrarenaError("--answer-parts is for --agent oracle or rag only")
    targets = target_pages(snapshot, args.target) if args.target else ()
    spec = agent_spec(
        args.agent, args.retriever, args.max_steps, args.search_url, args.allow_private
    )
    if args.answer_parts:
        spec["args"]["answer_parts"] = True
    # Live answers cite today's web: checking them against the frozen snapshot would call
    # every new page fabricated, so they stay unchecked.
    checker = None if args.retriever == "live" else SnapshotUrlChecker(snapshot)
    try:
        with model_endpoint(args.api_base, args.model) as (model, api_base):
            role = ModelRole.model_validate(
                {
                    "model": model,
                    "api_base": api_base,
                    "sampling": {"temperature": 0.0, "max_tokens": args.max_tokens},
                }
            )
            client = ModelClient(ModelsConfig.model_validate({"roles": {ROLE: role}}))
            context = AgentContext(
                client=client,
                snapshot_dir=snapshot,
                index_root=args.index_root,
                url_checker=checker,
            )
            agent = build_agent(spec, context)
            answer = asyncio.run(agent.answer(Conversation(args.question, targets=targets), words))
    finally:
        if checker is not None:
            checker.close()
    print(answer.to_json() if args.json else format_answer(answer))
    return 0
