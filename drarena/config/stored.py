"""A finished run folder read back as the config its run.json keeps and its match log, checked
against each other: what `drarena run rank` (drarena.report.finish.rank_run, which
`drarena.rank` calls too) and `drarena run ablate` start from.

Why in the config room: reading the stored config is `config_of` (tournament.py), and this is
the lowest room that holds it, below both the runs room's commands and the report room, which
must not import each other.
"""

from __future__ import annotations

from pathlib import Path

from drarena.config.tournament import TournamentConfig, config_of
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.leaderboard import check_agents
from drarena.ledger.records import MatchRecord


def read_finished(path: Path, empty: str) -> tuple[RunDir, TournamentConfig, list[MatchRecord]]:
    """A finished run folder's RunDir, config and match log, checked: a folder without
    run.json, an empty log (`empty` says what is then not done) and a log naming agents its
    config lacks are one-line errors naming the file (either may be the damaged one, so a
    disagreement names both)."""
    run = RunDir(path)
    config = config_of(run.require_header(), f"{run.header_path}: config")
    log = run.read_log()
    if not log:
        raise DrarenaError(f"{run.log_path}: no matches in the log; {empty}")
    check_agents(config.agent_names(), log, f"{run.log_path} (config: {run.header_path})")
    return run, config, log
