"""report.html's sections as components: one object per section computes its figures from a
typed run (`ReportRun`) and renders its HTML; `SECTIONS` registers them and `page_order` is
the order the page shows them in.

Why: a section used to be spread over the ledger (figures), report/analyses.py (HTML),
report/run.py (which ran it) and report/html.py (where it sat in one f-string); now a new
section is one file (drarena/report/sections/, or a plugin's module) and one line here.

The order is fixed and documented (docs/extending.md, "A report section"): the page's head
(`HEAD`: the examiner-check, then the leaderboard and what reads it), the paper's analyses
and the other figures of the run (`ANALYSES`), any plugin sections (entry points of the
`drarena.report_sections` group, by name), then the records (`TAIL`: void matches, failed
answers, time per answer, the match viewer and the drift section `drarena drift --run` adds).
A section whose `compute` returns None is left out of the page (a run with one judge has no
judge panel section).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from drarena.ledger.folder import RunDir
from drarena.ledger.header import RunHeader
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.ledger.records import MatchRecord
from drarena.registry import Registry

F = TypeVar("F")


@dataclasses.dataclass(frozen=True, slots=True)
class ReportRun:
    """What every section computes from: a run read once. `rows`: the leaderboard, one row
    per agent of the run (its bootstrap run once for every section); `seconds`: wall
    seconds per answer by agent (timings.jsonl); `resamples`, `seed`: the run's rating
    bootstrap, which every other interval of the report uses too; `folder`: where the run's
    side files are read (comparison.json, audit labels, drift.json), None for a page built
    from records alone; `header`: run.json, None where there is none."""

    title: str
    header: RunHeader | None
    rows: Sequence[LeaderboardRow]
    matches: Sequence[MatchRecord]
    seconds: Mapping[str, Sequence[float]]
    resamples: int = 0
    seed: int = 0
    folder: RunDir | None = None

    @property
    def agents(self) -> list[str]:
        """The run's agents by name (the config's, sorted)."""
        return sorted(r.agent for r in self.rows)


class Section(Protocol[F]):
    """One section of report.html. `compute` reads the run (and may read its folder's side
    files: every input is read before anything is written) and returns the section's figures,
    or None for a section this run has nothing to show in; `render` makes the figures HTML
    (every untrusted string through drarena.htmlpage.html_text, charts as inline SVG)."""

    @property
    def name(self) -> str: ...

    def compute(self, run: ReportRun) -> F | None: ...

    def render(self, figures: F) -> str: ...


SECTIONS: Registry[Section[Any]] = Registry("report section", group="drarena.report_sections")

HEAD = ("examiner_check", "leaderboard", "ratings", "pairwise", "failures")
ANALYSES = ("analyses", "style", "panel", "second_opinion", "human_audit", "comparison")
TAIL = ("void", "failed", "research", "timing", "matches", "drift")

_MODULES = {
    "examiner_check": "examinercheck:ExaminerCheckSection",
    "leaderboard": "leaderboard:LeaderboardSection",
    "ratings": "ratings:RatingsSection",
    "pairwise": "pairwise:PairwiseSection",
    "failures": "failures:FailuresSection",
    "analyses": "paper:PaperSection",
    "style": "style:StyleSection",
    "panel": "panel:PanelSection",
    "second_opinion": "second:SecondOpinionSection",
    "human_audit": "humanaudit:HumanAuditSection",
    "comparison": "comparison:ComparisonSection",
    "void": "voids:VoidSection",
    "failed": "failed:FailedSection",
    "research": "research:ResearchSection",
    "timing": "timing:TimingSection",
    "matches": "matches:MatchesSection",
    "drift": "drift:DriftSection",
}
for _kind, _target in _MODULES.items():
    SECTIONS.register(_kind, f"drarena.report.sections.{_target}")


def page_order() -> list[str]:
    """Every registered section's kind in page order: HEAD, ANALYSES, plugins by name, TAIL."""
    plugins = [k for k in SECTIONS.kinds() if k not in _MODULES]
    return [*HEAD, *ANALYSES, *plugins, *TAIL]


def section(kind: str) -> Section[Any]:
    """The section registered as `kind`, built (its factory takes no arguments)."""
    return SECTIONS.factory(kind)()


def compute(run: ReportRun, kinds: Sequence[str]) -> list[tuple[Section[Any], Any]]:
    """Each section of `kinds` with its figures (None: left out), computed in that order."""
    built = [section(k) for k in kinds]
    return [(s, s.compute(run)) for s in built]


def render(computed: Sequence[tuple[Section[Any], Any]]) -> list[str]:
    """The HTML of each computed section that has figures."""
    return [s.render(figures) for s, figures in computed if figures is not None]


def figures_by_kind(
    kinds: Sequence[str], computed: Sequence[tuple[Section[Any], Any]]
) -> Mapping[str, Any]:
    return dict(zip(kinds, (figures for _, figures in computed), strict=True))
