"""report.html's failed answers: per agent, the rounds its own failures voided (drarena's
default) or lost it (its error text judged, `failed_answers: judged`)."""

from __future__ import annotations

from collections.abc import Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.leaderboard import FailedRounds, failed_rounds
from drarena.ledger.records import MatchRecord
from drarena.report.section import ReportRun


def failed_table(agents: Sequence[str], matches: Sequence[MatchRecord]) -> str:
    """The table of `agents` (sorted) over `matches`, without its heading."""
    return _table(failed_rounds(sorted(agents), matches))


def _table(figures: Sequence[FailedRounds]) -> str:
    body = "".join(
        f"<tr><td>{esc(f.agent)}</td><td class=num>{f.voided}</td><td class=num>{f.judged}</td>"
        "</tr>"
        for f in figures
    )
    return (
        "<table><tr><th>agent</th><th>rounds voided by its failure</th>"
        f"<th>rounds its error text was judged</th></tr>{body}</table>"
    )


class FailedSection:
    name = "failed"

    def compute(self, run: ReportRun) -> list[FailedRounds]:
        return failed_rounds(run.agents, run.matches)

    def render(self, figures: list[FailedRounds]) -> str:
        return f"<h2>Failed answers</h2>{_table(figures)}"
