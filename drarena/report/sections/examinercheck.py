"""report.html's examiner-check section: the Examiner's figures from run.json
(`examiner_check`), above the leaderboard because they say how far it can be trusted."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from drarena.htmlpage import html_text as esc
from drarena.report.section import ReportRun
from drarena.validity.check import FIGURE_ROWS, figure_parts, mode_figures


def _figure(f: Any) -> str:
    parts = figure_parts(f)
    if parts is None:
        return "n/a"
    value, low, high, n = parts
    return f"{value:.2f} [{low:.2f}, {high:.2f}] ({n})"


def _reason(verdict: str) -> str:
    """The check's verdict line without its leading "can rank: " or "cannot rank: ", which
    the sentence around it already says."""
    for prefix in ("cannot rank: ", "can rank: "):
        if verdict.startswith(prefix):
            return verdict[len(prefix) :]
    return verdict


def examiner_check_section(block: Mapping[str, Any] | None) -> str:
    """One column per judge mode, value [95% interval] (n), and the verdict with its
    threshold. A run without a check says so, so that silence is never read as a pass."""
    head = "<h2>Examiner check (answer pairs of known preference)</h2>"
    if not block:
        return head + (
            "<p class=muted>not run for this tournament (--no-examiner-check, or a run "
            "recorded before the check existed); `drarena examiner-check` measures it</p>"
        )
    figures = mode_figures(block)
    results = block.get("results")
    modes = list(figures)
    cols = "".join(f"<th>{esc(m)}</th>" for m in modes)
    body = "".join(
        f"<tr><td>{esc(label.strip())}</td>"
        + "".join(f"<td class=num>{esc(_figure(figures[m].get(key)))}</td>" for m in modes)
        + "</tr>"
        for key, label in FIGURE_ROWS
    )
    verdicts = "".join(
        f"<li>{esc(m)}: {esc(str(results[m].get('verdict', '')))}</li>"
        for m in modes
        if isinstance(results, Mapping) and isinstance(results.get(m), Mapping)
    )
    can = bool(block.get("can_rank"))
    line = (
        f"<p class={'muted' if can else 'void'}>"
        f"{'' if can else 'WARNING: '}the Examiner {'can' if can else 'cannot'} rank: "
        f"{esc(_reason(str(block.get('verdict', ''))))}</p>"
    )
    about = esc(
        f"{block.get('tasks', '?')} task(s), leak rate of the questions "
        f"{_figure(block.get('leak_rate'))}"
        + (", reused from an earlier run with the same Examiner" if block.get("reused") else "")
        + (f", key {str(block['key'])[:16]}" if block.get("key") else "")
    )
    return (
        f"{head}{line}<table><tr><th>figure</th>{cols}</tr>{body}</table>"
        f"<ul>{verdicts}</ul><p class=muted>{about}</p>"
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ExaminerCheck:
    """run.json's `examiner_check` block as recorded (None: the check was not run)."""

    block: Any


class ExaminerCheckSection:
    name = "examiner_check"

    def compute(self, run: ReportRun) -> ExaminerCheck:
        block = None if run.header is None else run.header.examiner_check
        return ExaminerCheck(None if block is None else block.as_json())

    def render(self, figures: ExaminerCheck) -> str:
        return examiner_check_section(figures.block)
