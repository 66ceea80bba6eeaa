"""report.html's void matches: each match no score came of, with its reason."""

from __future__ import annotations

from drarena.htmlpage import html_text as esc
from drarena.report.section import ReportRun


class VoidSection:
    name = "void"

    def compute(self, run: ReportRun) -> list[tuple[str, str]]:
        """(match id, void reason) of every void match, in log order."""
        return [(m.match_id, m.void_reason) for m in run.matches if m.score_a() is None]

    def render(self, figures: list[tuple[str, str]]) -> str:
        listed = "".join(f"<li>{esc(match)}: {esc(reason)}</li>" for match, reason in figures)
        return f"<h2>Void matches ({len(figures)})</h2><ul>{listed or '<li>none</li>'}</ul>"
