"""report.html's failure profiles: per agent, the share of its lost rounds by the loser's
failure type."""

from __future__ import annotations

from collections.abc import Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.leaderboard import FAILURES, LeaderboardRow
from drarena.report.section import ReportRun


def failure_table(rows: Sequence[LeaderboardRow]) -> str:
    head = (
        "<tr><th>agent</th><th>lost rounds</th>"
        + "".join(f"<th>{f}</th>" for f in FAILURES)
        + "</tr>"
    )
    body = "".join(
        f"<tr><td>{esc(r.agent)}</td><td class=num>{r.lost_rounds}</td>"
        + "".join(f"<td class=num>{r.failure_share[f]:.0%}</td>" for f in FAILURES)
        + "</tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


class FailuresSection:
    name = "failures"

    def compute(self, run: ReportRun) -> Sequence[LeaderboardRow]:
        return run.rows

    def render(self, figures: Sequence[LeaderboardRow]) -> str:
        return f"<h2>Failure profiles (share of lost rounds)</h2>{failure_table(figures)}"
