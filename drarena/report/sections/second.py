"""report.html's second-opinion section: the LLM judge against the evidence judge.

Why in the report: the LLM judge decided every round of a hybrid run; a reader sees next to
the ratings how often the pages' own evidence agreed, how much of that chance explains
(Cohen's kappa), and which rounds to open where they did not. Same rules as
drarena.report.html: every name passes through `esc`.
"""

from __future__ import annotations

from drarena.htmlpage import html_text as esc
from drarena.ledger.agreement import fmt
from drarena.ledger.second import SecondOpinion, second_opinion
from drarena.report.section import ReportRun


def second_opinion_section(s: SecondOpinion) -> str:
    rows = "".join(
        f"<tr><td>{esc(a.what)}</td><td class=num>{a.n}</td>"
        f"<td>{esc(fmt(a.agreement, a.agreement_ci))}</td>"
        f"<td>{esc(fmt(a.kappa, a.kappa_ci))}</td></tr>"
        for a in (s.verdict, s.direction)
    )
    listed = "".join(
        f"<li>{esc(d.match_id)} round {d.round} ({esc(d.a)} vs {esc(d.b)}): LLM "
        f"{esc(d.llm)}, evidence {esc(d.evidence)}</li>"
        for d in s.listed
    )
    more = s.disagreeing - len(s.listed)
    if more > 0:
        listed += f"<li>and {more} more</li>"
    return (
        f"<h2>Second opinion: the LLM judge against the evidence ({s.rounds} rounds)</h2>"
        "<p class=muted>each round was decided by the LLM judge; the evidence judge graded "
        "the same answers against the checklist's page evidence by code. Agreement and "
        "Cohen's kappa with 95% bootstrap intervals over rounds</p>"
        "<table><tr><th>labels</th><th>rounds</th><th>agreement [95% CI]</th>"
        f"<th>Cohen's kappa [95% CI]</th></tr>{rows}</table>"
        f"<h3>Rounds whose direction differs ({s.disagreeing})</h3>"
        f"<ul>{listed or '<li>none</li>'}</ul>"
    )


class SecondOpinionSection:
    name = "second_opinion"

    def compute(self, run: ReportRun) -> SecondOpinion | None:
        """None for a run without both an LLM and an evidence judge's verdicts."""
        return second_opinion(run.matches, resamples=run.resamples, seed=run.seed)

    def render(self, figures: SecondOpinion) -> str:
        return second_opinion_section(figures)
