"""report.html of a run folder: the run read once (`report_run`), every registered section
(drarena.report.section) computed from it and rendered, the drift section that `drarena drift
snapshot --run` adds kept (a re-render must not drop it). drarena.report.finish writes it with
the leaderboard for every command.

Why here and not in the runs room: the report reads what a run wrote (the ledger and the
leaderboard); the commands call it after a tournament, a replay, a placement or `rank`.

`read_run` (exported as `drarena.read_run`) reads a run folder back: header, config,
matches, rounds, leaderboard and analyses, each typed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drarena.config.tournament import TournamentConfig, config_of
from drarena.errors import DrarenaError
from drarena.files import write_atomic
from drarena.ledger.analysis import Analyses
from drarena.ledger.compare import Comparison
from drarena.ledger.folder import RunDir
from drarena.ledger.header import RunHeader
from drarena.ledger.humanaudit import HumanAudit
from drarena.ledger.leaderboard import LeaderboardRow, build_leaderboard, check_agents
from drarena.ledger.panel import PanelAgreement
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.ledger.second import SecondOpinion
from drarena.ledger.style import StyleRatings
from drarena.report.html import page
from drarena.report.section import ReportRun, compute, figures_by_kind, page_order, render
from drarena.report.sections.style import StyleFigures

REPORT_FILE = "report.html"


@dataclasses.dataclass(frozen=True, slots=True)
class RunAnalyses:
    """Everything the report shows beyond the leaderboard (also `drarena run rank --json`).
    `panel`: the judge panel's agreement, for a run judged by one (`match.judges`);
    `audit`: people's labels against the Examiner, for a run with RUN/audit/labels.jsonl."""

    rows: list[LeaderboardRow]
    analyses: Analyses
    style: StyleRatings
    comparison: Comparison | None
    panel: PanelAgreement | None = None
    second: SecondOpinion | None = None
    audit: HumanAudit | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "leaderboard": [r.to_dict() for r in self.rows],
            "style_ratings": self.style.to_dict(),
            "analyses": self.analyses.to_dict(),
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
        }
        if self.panel is not None:  # a single judge's run keeps its keys
            out["judge_panel"] = self.panel.to_dict()
        if self.second is not None:  # likewise a run without a second opinion
            out["second_opinion"] = self.second.to_dict()
        if self.audit is not None:  # and a run no one audited
            out["human_audit"] = self.audit.to_dict()
        return out


def report_run(run: RunDir, config: TournamentConfig, log: Sequence[MatchRecord]) -> ReportRun:
    """The run as every section reads it: its header, log, timings and leaderboard (the
    bootstrap run once here)."""
    rating = config.rating
    rows = build_leaderboard(
        config.agent_names(), log, resamples=rating.resamples, seed=rating.seed
    )
    return ReportRun(
        f"drarena: {config.name}",
        run.header(),
        rows,
        log,
        run.answer_seconds(),
        rating.resamples,
        rating.seed,
        run,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RenderedRun:
    """A run's report.html and its figures, computed once, nothing written yet."""

    run: ReportRun
    analyses: RunAnalyses
    page: str


def render_run(run: RunDir, config: TournamentConfig, log: Sequence[MatchRecord]) -> RenderedRun:
    """Every registered section computed from the run, in page order, and rendered; every
    input (timings, labels, comparison.json, drift.json) is read before anything is written,
    so a damaged one stops the caller with nothing overwritten."""
    report = report_run(run, config, log)
    kinds = page_order()
    computed = compute(report, kinds)
    figures = figures_by_kind(kinds, computed)
    return RenderedRun(report, analyses_of(report, figures), page(report, render(computed)))


def analyses_of(run: ReportRun, figures: Mapping[str, Any]) -> RunAnalyses:
    """The figures `drarena run rank --json` prints, from the built-in sections'."""
    style: StyleFigures = figures["style"]
    return RunAnalyses(
        list(run.rows),
        figures["analyses"],
        style.style,
        figures["comparison"],
        figures["panel"],
        figures["second_opinion"],
        figures["human_audit"],
    )


def run_analyses(run: RunDir, config: TournamentConfig, log: list[MatchRecord]) -> RunAnalyses:
    """The leaderboard rows, the paper's analyses, the style-controlled ratings and the saved
    comparison of a run folder, from its files alone."""
    return render_run(run, config, log).analyses


def write_report(run: RunDir, config: TournamentConfig, log: list[MatchRecord]) -> Path:
    """Render and write <run>/report.html; every input is read before it is written."""
    rendered = render_run(run, config, log)
    path = run.path / REPORT_FILE
    write_atomic(path, rendered.page)
    return path


@dataclasses.dataclass(frozen=True, slots=True)
class StoredRun:
    """A run folder read back, every part typed (`drarena.read_run`): `header` (run.json),
    `config` (the tournament config it keeps), `matches` (matches.jsonl, in plan order),
    `rounds` (every match's rounds, in the same order), `leaderboard` (one row per agent)
    and `analyses` (the figures report.html shows; `analyses.to_dict()` is `run rank --json`)."""

    path: Path
    header: RunHeader
    config: TournamentConfig
    matches: tuple[MatchRecord, ...]
    analyses: RunAnalyses

    @property
    def rounds(self) -> tuple[RoundRecord, ...]:
        return tuple(r for m in self.matches for r in m.rounds)

    @property
    def leaderboard(self) -> tuple[LeaderboardRow, ...]:
        return tuple(self.analyses.rows)


def read_run(path: Path) -> StoredRun:
    """The run folder at `path`, read and computed (nothing is written); a folder with no
    run.json, or a header, config or log this drarena cannot read, is one DrarenaError."""
    run = RunDir(Path(path))
    header = run.header()
    if header is None:
        raise DrarenaError(f"{path}: no run.json (not a run folder)")
    config = config_of(header, f"{run.header_path}: config")
    log = run.read_log()
    check_agents(config.agent_names(), log, f"{run.log_path} (config: {run.header_path})")
    analyses = render_run(run, config, log).analyses
    return StoredRun(run.path, header, config, tuple(log), analyses)
