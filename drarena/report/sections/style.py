"""report.html's style-controlled ratings (drarena.ledger.style): Bradley-Terry with the
answers' style as covariates, beside the raw ratings, with the coefficients and each agent's
mean style."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.ledger.style import FEATURES, StyleRatings, style_ratings
from drarena.report.charts import opt
from drarena.report.section import ReportRun


@dataclasses.dataclass(frozen=True, slots=True)
class StyleFigures:
    """The style-controlled ratings and the raw rows they are shown against."""

    rows: Sequence[LeaderboardRow]
    style: StyleRatings


def style_section(rows: Sequence[LeaderboardRow], style: StyleRatings) -> str:
    raw = {r.agent: r for r in rows}
    body = "".join(
        f"<tr><td class=num>{s.rank}</td><td>{esc(s.agent)}</td>"
        f"<td class=num>{raw[s.agent].rating:.0f}</td>"
        f"<td>{raw[s.agent].lower:.0f} to {raw[s.agent].upper:.0f}</td>"
        f"<td class=num>{s.rating:.0f}</td><td>{s.lower:.0f} to {s.upper:.0f}</td>"
        f"<td class=num>{s.rating - raw[s.agent].rating:+.0f}</td></tr>"
        for s in style.ratings
        if s.agent in raw
    )
    coefs = "".join(
        f"<tr><td>{esc(c.feature)}</td><td class=num>{opt(c.beta)}</td><td>"
        + (
            f"{c.lower:.3f} to {c.upper:.3f}"
            if c.lower is not None and c.upper is not None
            else "did not vary in this run: left out of the fit"
        )
        + "</td></tr>"
        for c in style.coefficients
    )
    feats = "".join(
        f"<tr><td>{esc(agent)}</td>"
        + "".join(f"<td class=num>{values[f]:g}</td>" for f in FEATURES)
        + "</tr>"
        for agent, values in sorted(style.agent_features.items())
    )
    missing = (
        f"<p class=void>{style.matches_without_style} of {style.matches} decided matches had "
        "no judged round where both agents answered: they enter the fit with no style "
        "difference.</p>"
        if style.matches_without_style
        else ""
    )
    return (
        "<h2>Style-controlled ratings (Bradley-Terry with style covariates)</h2>"
        "<p class=muted>Fitted on the same decided matches as the raw ratings, with the "
        "normalised differences of answer length, citations, headers, list items and tables "
        "as covariates; a rating that falls under style control was partly won by style. "
        "Same bootstrap (resamples, seed) as the raw intervals.</p>"
        f"{missing}<table><tr><th>style rank</th><th>agent</th><th>raw</th>"
        "<th>raw 95%</th><th>style-controlled</th><th>95%</th><th>change</th></tr>"
        f"{body}</table><h3>Style coefficients (log-odds per standard deviation)</h3>"
        f"<table><tr><th>feature</th><th>beta</th><th>95% interval</th></tr>{coefs}</table>"
        "<h3>Mean style per answer</h3><table><tr><th>agent</th>"
        + "".join(f"<th>{f}</th>" for f in FEATURES)
        + f"</tr>{feats}</table>"
    )


class StyleSection:
    name = "style"

    def compute(self, run: ReportRun) -> StyleFigures:
        """Fitted on the run's matches with the leaderboard's bootstrap (resamples, seed)."""
        fitted = style_ratings(run.agents, run.matches, resamples=run.resamples, seed=run.seed)
        return StyleFigures(run.rows, fitted)

    def render(self, figures: StyleFigures) -> str:
        return style_section(figures.rows, figures.style)
