"""report.html of a run folder: rendered from its header, log and timings, keeping the drift
section that `drarena drift snapshot --run` adds (a re-render must not drop it).

Why here and not in the runs room: the report reads what a run wrote (the ledger and the
leaderboard); the commands call it after a tournament, a replay, a placement or `rank`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Protocol

from drarena.errors import DrarenaError, one_line
from drarena.files import write_atomic
from drarena.ledger.analysis import Analyses, agent_models, analyse, litellm_prices
from drarena.ledger.audit import labelled_rounds, labels_path, read_labels
from drarena.ledger.compare import Comparison
from drarena.ledger.folder import RunDir, read_text
from drarena.ledger.humanaudit import HumanAudit, human_audit
from drarena.ledger.leaderboard import LeaderboardRow, build_leaderboard
from drarena.ledger.panel import PanelAgreement, panel_agreement
from drarena.ledger.records import MatchRecord
from drarena.ledger.second import SecondOpinion, second_opinion
from drarena.ledger.style import StyleRatings, style_ratings
from drarena.report.analyses import analyses_section, comparison_section, style_section
from drarena.report.auditsection import human_audit_section
from drarena.report.html import render_report
from drarena.report.panel import panel_section
from drarena.report.second import second_opinion_section

COMPARISON_FILE = "comparison.json"  # written by `drarena run compare`; kept on re-render


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


def read_comparison(run: RunDir) -> Comparison | None:
    path = run.path / COMPARISON_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(read_text(path))
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        found = Comparison.from_dict(value)
        if not len(found.agents) == len(found.ours) == len(found.theirs):
            raise ValueError("agents, ours and theirs differ in length")
        return found
    except (ValueError, TypeError) as exc:
        raise DrarenaError(
            f"{path}: damaged comparison ({one_line(exc)}); delete it, or run "
            "`drarena run compare` again, which writes it anew"
        ) from None


def run_analyses(run: RunDir, config: RunConfig, log: list[MatchRecord]) -> RunAnalyses:
    """The leaderboard rows, the paper's analyses, the style-controlled ratings and the saved
    comparison of a run folder, from its files alone."""
    rows = build_leaderboard(
        config.agent_names(), log, resamples=config.rating.resamples, seed=config.rating.seed
    )
    header = run.header() or {}
    models = agent_models(header)
    analyses = analyse(
        log,
        {r.agent: r.rating for r in rows},
        models=models,
        prices=litellm_prices(models),
        timings=run.read_timings(),
    )
    style = style_ratings(
        config.agent_names(), log, resamples=config.rating.resamples, seed=config.rating.seed
    )
    r = config.rating
    panel = panel_agreement(log, resamples=r.resamples, seed=r.seed)
    second = second_opinion(log, resamples=r.resamples, seed=r.seed)
    labels = read_labels(labels_path(run.path), labelled_rounds(log))
    audit = human_audit(log, labels, resamples=r.resamples, seed=r.seed) if labels else None
    return RunAnalyses(rows, analyses, style, read_comparison(run), panel, second, audit)


def write_report(
    run: RunDir, config: RunConfig, log: list[MatchRecord], done: RunAnalyses | None = None
) -> Path:
    """Render and write <run>/report.html; every input is read before it is written.
    `done`: the run's analyses when the caller has them already (`rank --json`)."""
    done = done or run_analyses(run, config, log)
    rows = done.rows
    header = run.header() or {}
    sections = analyses_section(done.analyses) + style_section(rows, done.style)
    if done.panel is not None:
        sections += panel_section(done.panel)
    if done.second is not None:
        sections += second_opinion_section(done.second)
    if done.audit is not None:
        sections += human_audit_section(done.audit)
    if done.comparison is not None:
        sections += comparison_section(done.comparison)
    page = render_report(
        f"drarena: {config.name}", header, rows, log, run.answer_seconds(), sections
    )
    drift_json = run.path / "drift.json"
    if (
        drift_json.is_file()
    ):  # written by `drarena drift snapshot --run`: keep its section on re-render
        from drarena.drift.report import drift_section, read_json, splice_section

        page = splice_section(page, drift_section(read_json(drift_json)))
    path = run.path / "report.html"
    write_atomic(path, page)
    return path
