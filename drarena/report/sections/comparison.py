"""report.html's agreement with an outside leaderboard: the correlations and scatter that
`drarena run compare` saved as comparison.json (drarena.ledger.compare), kept on every
re-render."""

from __future__ import annotations

import json

from drarena.errors import DrarenaError, one_line
from drarena.htmlpage import html_text as esc
from drarena.ledger.compare import Comparison
from drarena.ledger.folder import RunDir, read_text
from drarena.report.charts import opt, scatter_svg
from drarena.report.section import ReportRun

COMPARISON_FILE = "comparison.json"  # written by `drarena run compare`; kept on re-render


def read_comparison(run: RunDir) -> Comparison | None:
    path = run.path / COMPARISON_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(read_text(path))
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        found = Comparison.from_dict(value)
        if not len(found.agents) == len(found.ours) == len(found.theirs):
            raise ValueError("agents, ours and theirs differ in length")
        return found
    except (ValueError, TypeError) as exc:
        raise DrarenaError(
            f"{path}: damaged comparison ({one_line(exc)}); delete it, or run "
            "`drarena run compare` again, which writes it anew"
        ) from None


def comparison_section(c: Comparison) -> str:
    body = "".join(
        f"<tr><td>{esc(r.method)}</td><td class=num>{opt(r.value)}</td><td>"
        + (
            f"{r.lower:.3f} to {r.upper:.3f} ({r.resamples_used} resamples)"
            if r.lower is not None and r.upper is not None
            else "n/a"
        )
        + "</td></tr>"
        for r in c.correlations
    )
    points = [(t, o, a) for a, o, t in zip(c.agents, c.ours, c.theirs, strict=True)]
    extra = "".join(
        f"<p class=muted>{label}: {esc(', '.join(names))}</p>"
        for label, names in (
            ("only in the run", c.only_in_run),
            ("only in the file", c.only_in_file),
        )
        if names
    )
    return (
        f"<h2>Agreement with {esc(c.against)}</h2>"
        f"<p class=muted>{len(c.agents)} shared agents; bootstrap over agents, seed {c.seed}. "
        "paper (Table 4, against LMSYS Search Arena): Spearman 0.94, Pearson 0.74</p>"
        f"<table><tr><th>coefficient</th><th>value</th><th>95% interval</th></tr>{body}"
        f"</table>{scatter_svg(points, 'outside score', 'drarena rating', 'comparison scatter')}"
        f"{extra}"
    )


class ComparisonSection:
    name = "comparison"

    def compute(self, run: ReportRun) -> Comparison | None:
        return None if run.folder is None else read_comparison(run.folder)

    def render(self, figures: Comparison) -> str:
        return comparison_section(figures)
