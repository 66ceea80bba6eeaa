"""A report section, `answer_lengths`: each agent's answers in words (mean, shortest, longest)
over the run's matches. An example of a report section as a plugin (docs/extending.md,
"A report section"): one object that computes its figures from the run and renders them."""

from __future__ import annotations

import dataclasses

from drarena.htmlpage import html_text as esc
from drarena.report.section import ReportRun


@dataclasses.dataclass(frozen=True, slots=True)
class Lengths:
    agent: str
    answers: int
    mean: float
    shortest: int
    longest: int


class AnswerLengths:
    name = "answer_lengths"

    def compute(self, run: ReportRun) -> list[Lengths] | None:
        """Words per answer by agent; None (no section) for a run with no answer."""
        words: dict[str, list[int]] = {}
        for m in run.matches:
            for r in m.rounds:
                for agent, answer in ((m.a, r.answer_a), (m.b, r.answer_b)):
                    if answer is not None:
                        words.setdefault(agent, []).append(len(answer.report.split()))
        if not words:
            return None
        return [
            Lengths(a, len(n), sum(n) / len(n), min(n), max(n)) for a, n in sorted(words.items())
        ]

    def render(self, figures: list[Lengths]) -> str:
        rows = "".join(
            f"<tr><td>{esc(f.agent)}</td><td class=num>{f.answers}</td>"
            f"<td class=num>{f.mean:.0f}</td><td class=num>{f.shortest}</td>"
            f"<td class=num>{f.longest}</td></tr>"
            for f in figures
        )
        return (
            "<h2>Answer lengths (words)</h2><table><tr><th>agent</th><th>answers</th>"
            f"<th>mean</th><th>shortest</th><th>longest</th></tr>{rows}</table>"
        )


def build() -> AnswerLengths:
    return AnswerLengths()
