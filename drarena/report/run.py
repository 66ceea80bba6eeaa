"""report.html of a run folder: rendered from its header, log and timings, keeping the drift
section that `drarena drift --run` adds (a re-render must not drop it).

Why here and not in the arena: the report reads what the arena wrote (the ledger and the
leaderboard); the commands call it after a tournament, a replay, a placement or `rank`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from drarena.ledger.folder import RunDir, write_atomic
from drarena.ledger.leaderboard import build_leaderboard
from drarena.ledger.records import MatchRecord
from drarena.report.html import render_report


class RatingLike(Protocol):
    @property
    def resamples(self) -> int: ...

    @property
    def seed(self) -> int: ...


class RunConfig(Protocol):
    """What the report needs of a tournament config (drarena.arena.config.TournamentConfig):
    the report room reads run folders and never imports the arena."""

    @property
    def name(self) -> str: ...

    @property
    def rating(self) -> RatingLike: ...

    def agent_names(self) -> list[str]: ...


def write_report(run: RunDir, config: RunConfig, log: list[MatchRecord]) -> Path:
    """Render and write <run>/report.html; every input is read before it is written."""
    rows = build_leaderboard(
        config.agent_names(), log, resamples=config.rating.resamples, seed=config.rating.seed
    )
    header = run.header() or {}
    page = render_report(f"drarena: {config.name}", header, rows, log, run.answer_seconds())
    drift_json = run.path / "drift.json"
    if drift_json.is_file():  # written by `drarena drift --run`: keep its section on re-render
        from drarena.drift.report import drift_section, read_json, splice_section

        page = splice_section(page, drift_section(read_json(drift_json)))
    path = run.path / "report.html"
    write_atomic(path, page)
    return path
