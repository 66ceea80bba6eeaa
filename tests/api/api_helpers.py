"""A small tournament config on a test snapshot, and the options that play it with the
scripted backend (tests/arena/arena_live_site.py: control flow only)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from arena_live_site import scripted_models
from runconfig import scripted_config

import drarena

STRENGTH = {"fact number": 3}


def config_data(tmp: Path, snapshot: Path, name: str = "api") -> dict[str, Any]:
    """Two agents, one Swiss round, matches of at most 2 rounds, the default (hybrid) judge."""
    return scripted_config(
        tmp, snapshot, name, match={"max_rounds": 2, "gap_to_stop": 9}, rating={"resamples": 50}
    )


def scripted(config: drarena.TournamentConfig, check: int = 0) -> drarena.RunOptions:
    """The command's options with the scripted models instead of a served one, the
    snapshot's derived files as the fixture made them, and `check` examiner-check tasks."""
    return dataclasses.replace(
        drarena.tournament_options(config),
        serve=False,
        prepare=False,
        backend=scripted_models(STRENGTH),
        examiner_check_pairs=check,
    )
