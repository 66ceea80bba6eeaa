"""The examiner-check a tournament runs before its first match (drarena.validity), wired to
the run context: the tournament's own task generator and rules, task and judge roles, and
judge.

Why before every tournament: a leaderboard means nothing if its Examiner cannot tell a good
answer from a degraded one; the figures go into run.json and above the leaderboard. Reused
across runs with the same Examiner model, sampling, prompts, judge, trees and settings.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from drarena.ledger.header import ExaminerCheckBlock, RunHeader
from drarena.runs.context import RunContext
from drarena.validity.check import CheckRun, CheckSettings, examiner_check
from drarena.validity.reuse import STORE_DIR, check_key, header_block, reuse_or_run


def check_run(ctx: RunContext) -> CheckRun:
    """The check of the run's own Examiner: its task generator and rules, roles and judge."""
    m = ctx.config.match
    roles = ctx.client.config.roles
    return CheckRun(
        ctx.client,
        m.taskgen_role if m.taskgen_role in roles else m.examiner_role,
        m.judge_role if m.judge_role in roles else m.examiner_role,
        ctx.trees,
        ctx.pages,
        ctx.expander,
        m.task_generator(),
        m.task_rules(),
        m.judge_spec(),
        lambda: ctx.terms,
        ctx.snapshot_text,
    )


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def tournament_check(
    ctx: RunContext, header: RunHeader, pairs: int, *, paraphrase: bool = True
) -> ExaminerCheckBlock:
    """Run (or reuse) a `pairs`-task examiner-check of the run's Examiner; the run.json block.
    `paraphrase`: also ask the task model to rewrite each reference (one call a task)."""
    config = ctx.config
    run = check_run(ctx)
    settings = CheckSettings(
        pairs=pairs,
        seed=config.seed,
        judges=(run.judge.kind,),
        task_attempts=config.match.task_attempts,
        paraphrase=paraphrase,
    )
    bound = {
        r: ctx.bound.roles[r].model_dump(mode="json", exclude={"api_base", "api_bases"})
        for r in sorted({run.taskgen_role, run.judge_role})
        if r in ctx.bound.roles
    }
    key = check_key(
        {
            "roles": bound,
            "prompt_hashes": header.prompt_hashes,
            "snapshot": header.snapshot_fingerprint,
            "trees": header.trees,
            "settings": settings.to_dict(),
            "judge": run.judge.model_dump(mode="json"),
            "taskgen": run.taskgen.spec.model_dump(mode="json"),
        }
    )

    def go() -> dict[str, Any]:
        progress(f"examiner-check: {pairs} task(s), judge {run.judge.kind} (reused next time)")
        with ctx.guard():
            return asyncio.run(examiner_check(run, settings, progress))

    report, reused = reuse_or_run(config.runs_root / STORE_DIR, key, go)
    return ExaminerCheckBlock.model_validate(header_block(report, key, reused))
