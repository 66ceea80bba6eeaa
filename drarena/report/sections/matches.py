"""report.html's match viewer: every match of the log, collapsed, with its rounds: the
task and its checklist (with the evidence judge's grades), both answers, the judges' orders
and verdicts, the transition and any void reason. Each round has an id (m<match's place in
the log>r<round index>) the human audit section links to."""

from __future__ import annotations

from collections.abc import Sequence

from drarena.agents.base import Answer
from drarena.examiner.evidence import EvidenceJudgment
from drarena.examiner.judge import JudgedOrder, PanelMember
from drarena.examiner.taskcheck import ChecklistItem
from drarena.htmlpage import LONG_CAP
from drarena.htmlpage import html_text as esc
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.report.section import ReportRun


def _answer(answer: Answer | None, label: str) -> str:
    if answer is None:
        return f"<div><b>{esc(label)}</b><p class=void>no answer</p></div>"
    cites = "".join(
        f"<li>[{c.n}] {esc(c.url)}{'' if c.valid is not False else ' (fabricated)'}</li>"
        for c in answer.citations
    )
    tools = sum(len(s.tools) for s in answer.trajectory.steps)
    return (
        f"<div><b>{esc(label)}</b> <span class=muted>{len(answer.trajectory.steps)} steps, "
        f"{tools} tool calls, {answer.tokens} tokens"
        f"{'; limit: ' + esc(answer.limit_hit) if answer.limit_hit else ''}</span>"
        f"<pre>{esc(answer.report, LONG_CAP)}</pre><ol class=muted>{cites}</ol></div>"
    )


def _judged(j: JudgedOrder) -> str:
    jd = j.raw.judgment
    return (
        f"<li>order {esc(j.order)}: {esc(jd.verdict.value)}"
        f"{' (' + esc(jd.tie_quality.value) + ')' if jd.tie_quality else ''}, loser failure "
        f"{esc(jd.loser_failure_type.value)}<pre>{esc(j.raw.reasoning, LONG_CAP)}</pre></li>"
    )


def _member(p: PanelMember) -> str:
    """A judge panel member's judging of a round: its verdict and its orders."""
    rec = p.judgment.reconciled
    orders = "".join(_judged(j) for j in p.judgment.orders())
    return (
        f"<li>judge {esc(p.role)}: {esc(rec.verdict.value)}"
        f"{' (' + esc(rec.tie_quality.value) + ')' if rec.tie_quality else ''}, loser failure "
        f"{esc(rec.loser_failure_type.value)}{f'<ul>{orders}</ul>' if orders else ''}</li>"
    )


def _link(url: str) -> str:
    """A page URL as text, not a link: report.html holds no element or attribute an
    untrusted value reaches beyond text (tests/fuzz/test_fuzz_report_drift.py checks it)."""
    return esc(url)


def _item(kind: str, n: int, item: ChecklistItem, graded: EvidenceJudgment | None) -> str:
    """A checklist item with its page (linked) and evidence passage, and, for a round the
    evidence judge graded, whether each answer stated it (recall of its key terms)."""
    evidence = ""
    if item.evidence:
        support = "" if item.support is None else f" (supports {item.support:.0%} of the item)"
        evidence = f"<blockquote class=muted>{esc(item.evidence)}{esc(support)}</blockquote>"
    grades = ""
    if graded is not None:
        marks = []
        for side, answer in (("A", graded.a), ("B", graded.b)):
            if n < len(answer.items):
                g = answer.items[n]
                mark = "stated" if g.verified else "not stated"
                cited = " and cited" if g.cited else ""
                marks.append(f"{side} {mark}{cited} (recall {g.recall:.2f})")
        grades = f" <span class=muted>[{esc('; '.join(marks))}]</span>"
    return (
        f"<li>[{kind}] {esc(item.item)}{grades} <span class=muted>{_link(item.source_url)}"
        f"</span>{evidence}</li>"
    )


def _evidence_line(graded: EvidenceJudgment) -> str:
    """The evidence judge's verdict with what decided it, in its order: items stated, then
    items cited to a page holding them (the citation tie-break), then nuance, the missed
    facts' key terms an answer still holds (the nuance tie-break, when the run sets it)."""
    sides = (("A", graded.a), ("B", graded.b))
    guards = [f"{side}: {g.guard}" for side, g in sides if g.guard]
    figures = "; ".join(
        f"{side} {sum(i.verified for i in g.items)} of {len(g.items)} stated, {g.cited()} "
        f"cited, nuance {g.nuance():.2f}"
        for side, g in sides
    )
    return (
        f"<p><b>evidence judge:</b> {esc(graded.derived.verdict.value)} "
        f"<span class=muted>({esc(figures)})</span>"
        + (f" (guards: {esc(', '.join(guards))})" if guards else "")
        + "</p>"
    )


def _round(m: MatchRecord, r: RoundRecord, anchor: str = "") -> str:
    """`anchor`: the round's id (m<match's place in the log>r<round index>, numbers only),
    which the human audit section links to."""
    where = f" id={anchor}" if anchor else ""
    out = [f"<h4{where}>round {r.index + 1}: depth {r.depth}, width {r.width}</h4>"]
    task = r.task.task
    graded = r.judgment.evidence if r.judgment is not None else None
    if task is not None:
        listed = [
            *(("depth", i) for i in task.checklist_depth),
            *(("width", i) for i in task.checklist_width),
        ]
        items = "".join(_item(kind, n, i, graded) for n, (kind, i) in enumerate(listed))
        out.append(
            f"<p><b>Q:</b> {esc(task.question)} <span class=muted>"
            f"({esc(task.word_limit_instruction)})</span></p><ul>{items}</ul>"
        )
    elif r.task.error:
        out.append(f"<p class=void>task: {esc(r.task.error)}</p>")
    out.append(
        f'<div class="pair">{_answer(r.answer_a, "A: " + m.a)}'
        f"{_answer(r.answer_b, 'B: ' + m.b)}</div>"
    )
    if graded is not None:
        out.append(_evidence_line(graded))
    if r.judgment is not None:
        rec = r.judgment.reconciled
        if r.judgment.panel is not None:
            out.append(f"<ul>{''.join(_member(p) for p in r.judgment.panel)}</ul>")
        out.append(
            f"<ul>{''.join(_judged(j) for j in (r.judgment.ab, r.judgment.ba) if j)}</ul>"
            f"<p><b>{'panel majority' if r.judgment.panel else 'reconciled'}:</b> "
            f"{esc(rec.verdict.value)}"
            f"{' (' + esc(rec.tie_quality.value) + ')' if rec.tie_quality else ''}, "
            f"loser failure {esc(rec.loser_failure_type.value)}; score "
            f"{r.score.points_a}-{r.score.points_b}</p>"
        )
    if r.transition is not None:
        out.append(
            f"<p>transition: {esc(r.transition.move.value)} to depth "
            f"{r.transition.depth}, width {r.transition.width}</p>"
        )
    if r.void_reason:
        out.append(f"<p class=void>void: {esc(r.void_reason)}</p>")
    return "".join(out)


def match_viewer(matches: Sequence[MatchRecord]) -> str:
    parts = []
    for i, m in enumerate(matches):
        title = (
            f"{esc(m.match_id)}: {esc(m.a)} vs {esc(m.b)} on {esc(m.tree)}: "
            f"{esc(m.outcome.value)} {m.score.points_a}-{m.score.points_b}"
        )
        rounds = "".join(_round(m, r, f"m{i}r{r.index}") for r in m.rounds)
        void = f"<p class=void>{esc(m.void_reason)}</p>" if m.void_reason else ""
        parts.append(f"<details id=m{i}><summary>{title}</summary>{void}{rounds}</details>")
    return "".join(parts)


class MatchesSection:
    name = "matches"

    def compute(self, run: ReportRun) -> Sequence[MatchRecord]:
        return run.matches

    def render(self, figures: Sequence[MatchRecord]) -> str:
        return f"<h2>Matches</h2>{match_viewer(figures)}"
