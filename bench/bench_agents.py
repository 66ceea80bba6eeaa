"""Per agent kind on the committed snapshot with the CPU model: wall time, model calls, tool
calls and tokens per answer, and the share of wall time spent outside model calls (target
under 10%). Wall time is also given as a ratio to closed_book, measured in the same run.

Usage:  .venv/bin/python bench/bench_agents.py [--questions N] [--max-tokens N]
Reuses DRARENA_MODEL_API_BASE if set, else starts the local CPU model server. The snapshot is
copied to a work folder and indexed there (`drarena index`, up-to-date stages skipped), so
the repository stays clean.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drarena.agents.base import Answer, Conversation, SourcePage  # noqa: E402
from drarena.agents.citations import SnapshotUrlChecker  # noqa: E402
from drarena.agents.registry import AgentContext, build_agent  # noqa: E402
from drarena.cli import main as drarena  # noqa: E402
from drarena.models.client import ModelClient  # noqa: E402
from drarena.models.config import ModelsConfig  # noqa: E402
from drarena.models.serve import model_server  # noqa: E402
from drarena.search.docstore import DocStore  # noqa: E402

BASE = "http://127.0.0.1:8765"
QUESTIONS = [  # question, the pages an oracle is given
    ("How do I sort a list of dictionaries by one of their keys?", [f"{BASE}/howto/sorting.html"]),
    (
        "How do I match a pattern in a string and pull out the matching parts?",
        [f"{BASE}/howto/regex.html"],
    ),
    ("What is a descriptor and how do properties use it?", [f"{BASE}/howto/descriptor.html"]),
]
AGENTS: dict[str, dict[str, Any]] = {
    "closed_book": {"kind": "closed_book"},
    "rag-bm25": {"kind": "rag", "args": {"retriever": {"kind": "bm25"}, "k": 3}},
    "oracle": {"kind": "oracle"},
    "react-bm25": {"kind": "react", "args": {"retriever": {"kind": "bm25"}, "max_steps": 2}},
    "react-hybrid": {"kind": "react", "args": {"retriever": {"kind": "hybrid"}, "max_steps": 2}},
}


def prepare(workdir: Path) -> tuple[Path, Path]:
    source = REPO / "snapshots" / "pydocs"
    snapshot = workdir / "pydocs"
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.name in ("manifest.json", "index.cdxj") or path.name.endswith(".warc.gz"):
            target = snapshot / path.name
            if not target.exists() or target.stat().st_size != path.stat().st_size:
                shutil.copy2(path, target)
    root = workdir / "index"
    if drarena(["index", str(snapshot), "--index-root", str(root), "--dense-per-doc", "1"]):
        raise SystemExit("drarena index failed")
    return snapshot, root


async def run(
    args: argparse.Namespace, snapshot: Path, root: Path, model: str, api_base: str
) -> dict[str, list[Answer]]:
    config = ModelsConfig.model_validate(
        {
            "roles": {
                "agent": {
                    "model": model,
                    "api_base": api_base,
                    "timeout_s": 600,
                    "sampling": {"temperature": 0.0, "max_tokens": args.max_tokens},
                }
            }
        }
    )
    checker = SnapshotUrlChecker(snapshot)
    context = AgentContext(
        client=ModelClient(config), snapshot_dir=snapshot, index_root=root, url_checker=checker
    )
    docs = DocStore.from_snapshot(snapshot)
    results: dict[str, list[Answer]] = {}
    for name, spec in AGENTS.items():
        agent = build_agent(spec, context, name=name)  # retrievers load here, not timed
        answers = []
        for question, targets in QUESTIONS[: args.questions]:
            pages = tuple(
                SourcePage(docs.get(u).url, docs.get(u).title, docs.get(u).contents)
                for u in targets
            )
            answer = await agent.answer(Conversation(question, targets=pages), (60, 120))
            answers.append(answer)
            print(
                f"  {name}: {answer.wall_s:6.1f} s, {len(answer.trajectory.steps)} steps, "
                f"error={answer.error}",
                file=sys.stderr,
                flush=True,
            )
        results[name] = answers
    checker.close()
    return results


def table(results: dict[str, list[Answer]]) -> str:
    peer = statistics.mean(a.wall_s for a in results["closed_book"])
    rows = [
        "| agent | wall s/answer | x closed_book | model calls | tool calls | tokens "
        "| outside model | cited (valid/fabricated) |",
        "|---" * 8 + "|",
    ]
    for name, answers in results.items():
        wall = statistics.mean(a.wall_s for a in answers)
        calls = statistics.mean(len(a.trajectory.model_calls()) for a in answers)
        tools = statistics.mean(len(a.trajectory.tool_events()) for a in answers)
        tokens = statistics.mean(a.tokens for a in answers)
        outside = sum(a.wall_s - a.model_s for a in answers) / sum(a.wall_s for a in answers)
        cited = sum(a.check.cited for a in answers)
        valid = sum(a.check.valid for a in answers)
        fab = sum(a.check.fabricated for a in answers)
        rows.append(
            f"| {name} | {wall:.1f} | {wall / peer:.2f} | {calls:.1f} | {tools:.1f} "
            f"| {tokens:.0f} | {outside:.1%} | {cited} ({valid}/{fab}) |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1, choices=(1, 2, 3))
    parser.add_argument(
        "--max-tokens", type=int, default=128, help="completion tokens per model call (default 128)"
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/drarena-bench-agents"))
    args = parser.parse_args()
    snapshot, root = prepare(args.workdir)
    started = time.perf_counter()
    with model_server() as server:
        print(
            f"model server ready in {time.perf_counter() - started:.0f} s "
            f"({server.litellm_model} at {server.api_base})",
            file=sys.stderr,
        )
        results = asyncio.run(run(args, snapshot, root, server.litellm_model, server.api_base))
    print(
        f"\nagents on snapshots/pydocs, {args.questions} question(s) each, "
        f"max {args.max_tokens} completion tokens per call"
    )
    print(table(results))


if __name__ == "__main__":
    main()
