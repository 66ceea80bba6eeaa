"""report.html of a run folder: the run read once (`read_run`), every registered section
(drarena.report.section) computed from it and rendered, the drift section that `drarena drift
snapshot --run` adds kept (a re-render must not drop it). drarena.report.finish writes it with
the leaderboard for every command.

Why here and not in the runs room: the report reads what a run wrote (the ledger and the
leaderboard); the commands call it after a tournament, a replay, a placement or `rank`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from drarena.errors import DrarenaError
from drarena.files import write_atomic
from drarena.ledger.analysis import Analyses
from drarena.ledger.compare import Comparison
from drarena.ledger.folder import RunDir
from drarena.ledger.humanaudit import HumanAudit
from drarena.ledger.leaderboard import LeaderboardRow, build_leaderboard
from drarena.ledger.panel import PanelAgreement
from drarena.ledger.records import MatchRecord
from drarena.ledger.second import SecondOpinion
from drarena.ledger.style import StyleRatings
from drarena.report.html import page
from drarena.report.section import ReportRun, compute, figures_by_kind, page_order, render
from drarena.report.sections.style import StyleFigures

REPORT_FILE = "report.html"


class RatingLike(Protocol):
    @property
    def resamples(self) -> int: ...

    @property
    def seed(self) -> int: ...


class RunConfig(Protocol):
    """What the report needs of a tournament config (drarena.runs.config.TournamentConfig):
    the report room reads run folders and never imports the runs room."""

    @property
    def name(self) -> str: ...

    @property
    def rating(self) -> RatingLike: ...

    def agent_names(self) -> list[str]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class StoredRating:
    resamples: int
    seed: int


@dataclasses.dataclass(frozen=True, slots=True)
class StoredRunConfig:
    """The part of a run's stored config (run.json `config`) the report reads: a RunConfig
    built without the runs room's config model, so the report room's commands need nothing
    of it (the runs room's commands write reports; the two packages must not import each
    other)."""

    name: str
    agents: tuple[str, ...]
    rating: StoredRating

    def agent_names(self) -> list[str]:
        return sorted(self.agents)


def stored_config(data: Any, where: str) -> StoredRunConfig:
    """`data` (run.json's `config`) as a StoredRunConfig; a missing or mistyped field is one
    DrarenaError naming it."""
    if not isinstance(data, dict):
        raise DrarenaError(f"{where}: not a config object")
    name, agents, rating = data.get("name"), data.get("agents"), data.get("rating") or {}
    if not isinstance(name, str):
        raise DrarenaError(f"{where}: name: missing or not a string")
    if not isinstance(agents, list) or not all(
        isinstance(a, dict) and isinstance(a.get("name"), str) for a in agents
    ):
        raise DrarenaError(f"{where}: agents: a list of objects with a name is required")
    names = [a["name"] for a in agents]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DrarenaError(
            f"{where}: agents: names must be unique, repeated: {', '.join(repeated)}"
        )
    if not isinstance(rating, dict):
        raise DrarenaError(f"{where}: rating: not an object")
    resamples, seed = rating.get("resamples", 1000), rating.get("seed", 0)
    if not isinstance(resamples, int) or not isinstance(seed, int) or resamples < 0 or seed < 0:
        raise DrarenaError(f"{where}: rating: resamples and seed must be integers, 0 or more")
    return StoredRunConfig(name, tuple(a["name"] for a in agents), StoredRating(resamples, seed))


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


def read_run(run: RunDir, config: RunConfig, log: Sequence[MatchRecord]) -> ReportRun:
    """The run as every section reads it: its header, log, timings and leaderboard (the
    bootstrap run once here)."""
    rating = config.rating
    rows = build_leaderboard(
        config.agent_names(), log, resamples=rating.resamples, seed=rating.seed
    )
    return ReportRun(
        f"drarena: {config.name}",
        run.header() or {},
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


def render_run(run: RunDir, config: RunConfig, log: Sequence[MatchRecord]) -> RenderedRun:
    """Every registered section computed from the run, in page order, and rendered; every
    input (timings, labels, comparison.json, drift.json) is read before anything is written,
    so a damaged one stops the caller with nothing overwritten."""
    report = read_run(run, config, log)
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


def run_analyses(run: RunDir, config: RunConfig, log: list[MatchRecord]) -> RunAnalyses:
    """The leaderboard rows, the paper's analyses, the style-controlled ratings and the saved
    comparison of a run folder, from its files alone."""
    return render_run(run, config, log).analyses


def write_report(run: RunDir, config: RunConfig, log: list[MatchRecord]) -> Path:
    """Render and write <run>/report.html; every input is read before it is written."""
    rendered = render_run(run, config, log)
    path = run.path / REPORT_FILE
    write_atomic(path, rendered.page)
    return path
