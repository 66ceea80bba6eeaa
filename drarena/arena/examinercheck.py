"""The examiner-check a tournament runs before its first match (drarena.validity), wired to
the run context: the tournament's own task and judge roles, judge prompt and mode.

Why before every tournament: a leaderboard means nothing if its Examiner cannot tell a good
answer from a degraded one; the figures go into run.json and above the leaderboard. Reused
across runs with the same Examiner model, sampling, prompts, trees and settings.
"""

from __future__ import annotations

import asyncio
from typing import Any

from drarena.arena.context import RunContext
from drarena.ledger.header import RunHeader
from drarena.validity.check import CheckSettings, examiner_check
from drarena.validity.reuse import STORE_DIR, check_key, header_block, reuse_or_run


def tournament_check(ctx: RunContext, header: RunHeader, pairs: int) -> dict[str, Any]:
    """Run (or reuse) a `pairs`-task examiner-check of the run's Examiner; the run.json block."""
    config = ctx.config
    m = config.match
    roles = ctx.client.config.roles
    taskgen = m.taskgen_role if m.taskgen_role in roles else m.examiner_role
    judge = m.judge_role if m.judge_role in roles else m.examiner_role
    options = m.judge_options(0, 0)
    settings = CheckSettings(
        pairs=pairs, seed=config.seed, modes=(options.mode.value,), task_attempts=m.task_attempts
    )
    bound = {
        r: ctx.bound.roles[r].model_dump(mode="json", exclude={"api_base", "api_bases"})
        for r in sorted({taskgen, judge})
        if r in ctx.bound.roles
    }
    key = check_key(
        {
            "roles": bound,
            "prompt_hashes": header.prompt_hashes,
            "snapshot": header.snapshot_fingerprint,
            "trees": header.trees,
            "settings": settings.to_dict(),
            "options": options.to_dict(),
        }
    )

    def run() -> dict[str, Any]:
        with ctx.guard():
            return asyncio.run(
                examiner_check(
                    ctx.client,
                    taskgen,
                    ctx.trees,
                    ctx.pages,
                    settings,
                    ctx.expander,
                    judge_role=judge,
                    options=options,
                )
            )

    report, reused = reuse_or_run(config.runs_root / STORE_DIR, key, run)
    return header_block(report, key, reused)
