"""report.html's judge panel section: how far the judges of `match.judges` agreed.

Why in the report: a panel's majority verdict is only as good as its members' consistency;
a reader sees, next to the ratings, how often each pair of judges gave the same 5-way verdict
and how much of that chance alone explains (Cohen's kappa). Same rules as
drarena.report.html: every judge name passes through `esc`.
"""

from __future__ import annotations

from drarena.htmlpage import html_text as esc
from drarena.ledger.agreement import fmt
from drarena.ledger.panel import PanelAgreement, panel_agreement
from drarena.report.section import ReportRun


def panel_section(p: PanelAgreement) -> str:
    """A table of every judge pair (rounds, percent agreement and kappa with 95% intervals)
    and each judge's share of rounds in which it gave the panel's verdict."""
    pairs = "".join(
        f"<tr><td>{esc(jp.first)}</td><td>{esc(jp.second)}</td>"
        f"<td class=num>{jp.verdict.n}</td>"
        f"<td>{esc(_percent(jp.verdict.agreement, jp.verdict.agreement_ci))}</td>"
        f"<td>{esc(fmt(jp.verdict.kappa, jp.verdict.kappa_ci))}</td></tr>"
        for jp in p.pairs
    )
    majority = "".join(
        f"<li>{esc(j.judge)}: the panel's verdict in {j.with_majority} of {j.rounds} round(s)</li>"
        for j in p.majority
    )
    return (
        f"<h2>Judge panel agreement ({len(p.judges)} judges, {p.rounds} played rounds)</h2>"
        "<p class=muted>each round decided by the majority of the judges' verdicts (no "
        "majority: the median); agreement and Cohen's kappa on the 5-way verdict, 95% "
        "bootstrap intervals over rounds; DR-Arena reports kappa 0.84-0.90 between "
        "Examiners</p>"
        "<table><tr><th>judge</th><th>judge</th><th>rounds</th>"
        f"<th>agreement [95% CI]</th><th>Cohen's kappa [95% CI]</th></tr>{pairs}</table>"
        f"<ul>{majority}</ul>"
    )


def _percent(value: float | None, interval: tuple[float, float] | None) -> str:
    """'85% [70%, 95%]'; 'n/a' for no rounds."""
    if value is None:
        return "n/a"
    if interval is None:
        return f"{value:.0%}"
    return f"{value:.0%} [{interval[0]:.0%}, {interval[1]:.0%}]"


class PanelSection:
    name = "panel"

    def compute(self, run: ReportRun) -> PanelAgreement | None:
        """None for a run judged by one judge (no round carries a panel)."""
        return panel_agreement(run.matches, resamples=run.resamples, seed=run.seed)

    def render(self, figures: PanelAgreement) -> str:
        return panel_section(figures)
