"""The small tournament config the run tests share: two agents on a test snapshot, one Swiss
round, one tree, scripted models (control flow only: tests/arena/arena_live_site.py).

Why one builder: six test modules spelled the same dozen keys out, and a config field that
changes (a renamed key, a new required one) had to be found in each; a test now says only
how its run differs (`fields` replace top-level keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drarena.models.config import CacheMode
from drarena.runs.execute import RunOptions

SCRIPTED_ROLE = {"model": "openai/scripted-for-tests"}


def scripted_config(
    tmp: Path,
    snapshot: Path,
    name: str,
    role: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The config dict: runs and indexes under `tmp`, both model roles `role` (default the
    scripted model), oracle against closed_book, matches of one round; `fields` override."""
    role = role or SCRIPTED_ROLE
    data: dict[str, Any] = {
        "name": name,
        "snapshot": str(snapshot),
        "runs_root": str(tmp / "runs"),
        "index_root": str(tmp / "index"),
        "seed": 1,
        "swiss_rounds": 1,
        "trees": {"count": 1},
        "match": {"max_rounds": 1},
        "rating": {"resamples": 20},
        "models": {"retry": {"max_attempts": 1}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "oracle", "kind": "oracle"},
            {"name": "closed_book", "kind": "closed_book"},
        ],
    }
    data.update(fields)
    return data


def scripted_options(backend: Any, **fields: Any) -> RunOptions:
    """The options a scripted test run plays under: no model server, the response cache read
    and written, the snapshot's derived files read as they are (the fixture built them);
    `fields` add the rest (now=..., cache_path=...). Why one builder: ten tests spelled out
    the same four options."""
    return RunOptions(
        serve=False, cache_mode=CacheMode.READ_WRITE, prepare=False, backend=backend, **fields
    )
