"""report.html's pairwise results: points of each agent (row) against each other (column),
win 1 and tie 0.5, over their decided matches."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drarena.htmlpage import html_text as esc
from drarena.ledger.records import MatchRecord
from drarena.report.section import ReportRun


@dataclasses.dataclass(frozen=True, slots=True)
class Pairwise:
    """`agents` in leaderboard order; `scores[(a, b)]`: a's points in each decided match
    against b."""

    agents: tuple[str, ...]
    scores: dict[tuple[str, str], list[float]]


def pairwise(agents: Sequence[str], matches: Sequence[MatchRecord]) -> Pairwise:
    score: dict[tuple[str, str], list[float]] = {}
    for m in matches:
        s = m.score_a()
        if s is None:
            continue
        score.setdefault((m.a, m.b), []).append(s)
        score.setdefault((m.b, m.a), []).append(1.0 - s)
    return Pairwise(tuple(agents), score)


class PairwiseSection:
    name = "pairwise"

    def compute(self, run: ReportRun) -> Pairwise:
        return pairwise([r.agent for r in run.rows], run.matches)

    def render(self, figures: Pairwise) -> str:
        agents = figures.agents
        head = (
            "<tr><th>row vs column</th>" + "".join(f"<th>{esc(a)}</th>" for a in agents) + "</tr>"
        )
        body = ""
        for a in agents:
            cells = []
            for b in agents:
                vals = figures.scores.get((a, b))
                cells.append(
                    "<td class=muted>-</td>"
                    if not vals
                    else f"<td class=num>{sum(vals):g}/{len(vals)}</td>"
                )
            body += f"<tr><th>{esc(a)}</th>{''.join(cells)}</tr>"
        return (
            f"<h2>Pairwise results</h2><table>{head}{body}</table>"
            "<p class=muted>points (win 1, tie 0.5) / matches</p>"
        )
