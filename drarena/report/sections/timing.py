"""report.html's time per answer: each agent's mean wall seconds per answer in this run
(timings.jsonl; not part of the replayed record, so a replay's differ)."""

from __future__ import annotations

from drarena.htmlpage import html_text as esc
from drarena.report.section import ReportRun


class TimingSection:
    name = "timing"

    def compute(self, run: ReportRun) -> list[tuple[str, float]]:
        """(agent, mean seconds per answer), by agent name; none for a run without timings."""
        return [(a, sum(v) / len(v)) for a, v in sorted(run.seconds.items()) if v]

    def render(self, figures: list[tuple[str, float]]) -> str:
        listed = "".join(f"<li>{esc(a)}: {mean:.1f} s per answer</li>" for a, mean in figures)
        return (
            "<h2>Time per answer (this run; not part of the replayed record)</h2>"
            f"<ul>{listed or '<li>none recorded</li>'}</ul>"
        )
