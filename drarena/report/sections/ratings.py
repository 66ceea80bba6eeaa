"""report.html's ratings chart: each agent's Bradley-Terry rating with its 95% bootstrap
interval, as inline SVG."""

from __future__ import annotations

from collections.abc import Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.report.section import ReportRun


def ratings_svg(rows: Sequence[LeaderboardRow]) -> str:
    if not rows:
        return ""
    lo = min(r.lower for r in rows) - 20
    hi = max(r.upper for r in rows) + 20
    width, left, row_h = 640, 160, 22
    scale = (width - left - 20) / max(hi - lo, 1.0)

    def x(v: float) -> float:
        return left + (v - lo) * scale

    parts = []
    for i, r in enumerate(rows):
        y = 15 + i * row_h
        parts.append(
            f'<text x="4" y="{y + 4}">{esc(r.agent)}</text>'
            f'<line x1="{x(r.lower):.1f}" x2="{x(r.upper):.1f}" y1="{y}" y2="{y}" '
            f'stroke="#4a7" stroke-width="3"/>'
            f'<circle cx="{x(r.rating):.1f}" cy="{y}" r="4" fill="#264"/>'
            f'<text x="{x(r.upper) + 6:.1f}" y="{y + 4}">{r.rating:.0f}</text>'
        )
    height = 25 + len(rows) * row_h
    return (
        f'<svg width="{width}" height="{height}" role="img" '
        f'aria-label="ratings with 95% intervals">{"".join(parts)}</svg>'
    )


class RatingsSection:
    name = "ratings"

    def compute(self, run: ReportRun) -> Sequence[LeaderboardRow]:
        return run.rows

    def render(self, figures: Sequence[LeaderboardRow]) -> str:
        return f"<h2>Ratings (Bradley-Terry, 95% bootstrap intervals)</h2>{ratings_svg(figures)}"
