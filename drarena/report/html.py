"""report.html: one self-contained page (no scripts, no external assets), its sections the
registered components of drarena.report.section in their fixed order.

Everything that came from a crawled page, an agent or the Examiner passes through `esc`
(drarena.htmlpage.html_text: html.escape with quotes) before it reaches the page, so an
answer containing <script> or an attribute-breaking quote stays inert text; it is cut there
(TEXT_CAP, LONG_CAP for answers and judges' reasoning: the run folder keeps it whole) and
characters a page cannot carry (lone surrogates, controls, bidi overrides) show as U+FFFD.
Charts are inline SVG built from numbers only. Every section follows these rules (a plugin's
too: docs/extending.md, "A report section").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from drarena.htmlpage import CSS
from drarena.htmlpage import html_text as esc
from drarena.ledger.header import RunHeader
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.ledger.records import MatchRecord
from drarena.report.section import HEAD, TAIL, ReportRun, compute, render


def page(run: ReportRun, sections: Iterable[str]) -> str:
    """The page around the sections' HTML: title, the run's snapshot, seed and revision."""
    header = run.header
    meta = esc(
        ", ".join(
            f"{k}: {getattr(header, k)}"
            for k in ("snapshot_fingerprint", "seed", "git_revision")
            if header is not None and header.has(k)
        )
    )
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(run.title)}"
        f"</title><style>{CSS}</style></head><body><h1>{esc(run.title)}</h1>"
        f"<p class=muted>{meta}</p>{''.join(sections)}</body></html>\n"
    )


def render_report(
    title: str,
    header: RunHeader | None,
    rows: Sequence[LeaderboardRow],
    matches: Sequence[MatchRecord],
    seconds: Mapping[str, Sequence[float]] | None = None,
    sections: str = "",
) -> str:
    """A page of the sections that need the records alone (HEAD and TAIL of
    drarena.report.section), from records with no run folder; `sections`: finished HTML
    placed where the analyses go, after the failure profiles. A run folder's page is
    drarena.report.run.render_run's."""
    run = ReportRun(title, header, rows, matches, seconds or {})
    return page(run, [*render(compute(run, HEAD)), sections, *render(compute(run, TAIL))])
