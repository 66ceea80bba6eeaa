"""report.html's leaderboard table: rank, rating and interval, record, void matches, rounds,
citations and tokens per agent (drarena.ledger.leaderboard's rows)."""

from __future__ import annotations

from collections.abc import Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.report.section import ReportRun


def leaderboard_table(rows: Sequence[LeaderboardRow]) -> str:
    head = (
        "<tr><th>rank</th><th>agent</th><th>rating</th><th>95% interval</th><th>W-L-T</th>"
        "<th>void</th><th>rounds/match</th><th>citations valid/fabricated</th>"
        "<th>tokens/answer</th></tr>"
    )
    body = "".join(
        f"<tr><td class=num>{r.rank}</td><td>{esc(r.agent)}</td><td class=num>{r.rating:.0f}"
        f"</td><td>{r.lower:.0f} to {r.upper:.0f}</td><td>{r.wins}-{r.losses}-{r.ties}</td>"
        f"<td class=num>{r.void}</td><td class=num>{r.avg_rounds:.2f}</td>"
        f"<td>{r.valid_citations}/{r.fabricated_citations}</td>"
        f"<td class=num>{r.tokens_per_answer:.0f}</td></tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


class LeaderboardSection:
    name = "leaderboard"

    def compute(self, run: ReportRun) -> Sequence[LeaderboardRow]:
        return run.rows

    def render(self, figures: Sequence[LeaderboardRow]) -> str:
        return f"<h2>Leaderboard</h2>{leaderboard_table(figures)}"
