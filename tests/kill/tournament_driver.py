"""`python tests/kill/tournament_driver.py SNAPSHOT RUNS_ROOT`: run (or resume) a small frozen
tournament on SNAPSHOT with the scripted model backend (control flow only: no real model),
through drarena.runs.execute.execute, the function `drarena tournament` calls once it has a
model endpoint. Errors end as `drarena tournament` ends them: one line, exit 2.

Each model call waits 30 ms, so a kill lands in the middle of a run of a few seconds.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "arena"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripted_tasks

STRENGTH = {"fact number 3": 3}  # the oracle reads the pages; closed_book does not


def config_data(snapshot: Path, runs_root: Path) -> dict[str, Any]:
    role = {"model": "openai/scripted-for-tests"}
    return {
        "name": "killed",
        "snapshot": str(snapshot),
        "runs_root": str(runs_root),
        "seed": 3,
        "swiss_rounds": 2,
        "concurrency": 2,
        "trees": {"count": 2},
        "match": {"max_rounds": 2},
        "rating": {"resamples": 20},
        "models": {"retry": {"max_attempts": 1}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "oracle", "kind": "oracle"},
            {"name": "oracle-2", "kind": "oracle"},
            {"name": "closed_book", "kind": "closed_book"},
            {"name": "closed_book-2", "kind": "closed_book"},
        ],
    }


def main(argv: Sequence[str]) -> int:
    from arena_live_site import scripted_models

    from drarena.config.tournament import parse_config
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir
    from drarena.models.config import CacheMode
    from drarena.runs.execute import RunOptions, execute

    snapshot, runs_root = Path(argv[0]), Path(argv[1])
    backend = scripted_models(STRENGTH)
    scripted = backend.complete

    async def slowly(request: Mapping[str, Any]) -> Any:
        await asyncio.sleep(0.03)
        return await scripted(request)

    backend.complete = slowly
    try:
        config = parse_config(config_data(snapshot, runs_root), "kill-test config")
        result = execute(
            config,
            RunDir(runs_root / config.name),
            RunOptions(
                serve=False, cache_mode=CacheMode.READ_WRITE, prepare=False, backend=backend
            ),
        )
    except DrarenaError as exc:
        print(f"drarena: error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(result.log)} matches, {result.model_calls} model calls")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
