"""report.html: one self-contained page (no scripts, no external assets).

Everything that came from a crawled page, an agent or the Examiner passes through `esc`
(drarena.htmlpage.html_text: html.escape with quotes) before it reaches the page, so an
answer containing <script> or an attribute-breaking quote stays inert text; it is cut there
(TEXT_CAP, LONG_CAP for answers and judges' reasoning: the run folder keeps it whole) and
characters a page cannot carry (lone surrogates, controls, bidi overrides) show as U+FFFD.
Charts are inline SVG built from numbers only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drarena.agents.base import Answer
from drarena.examiner.evidence import EvidenceJudgment
from drarena.examiner.judge import JudgedOrder, PanelMember
from drarena.examiner.taskcheck import ChecklistItem
from drarena.htmlpage import CSS, LONG_CAP
from drarena.htmlpage import html_text as esc
from drarena.ledger.leaderboard import FAILURES, LeaderboardRow, failed_rounds
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.validity.check import FIGURE_ROWS, figure_parts, mode_figures


def leaderboard_table(rows: Sequence[LeaderboardRow]) -> str:
    head = (
        "<tr><th>rank</th><th>agent</th><th>rating</th><th>95% interval</th><th>W-L-T</th>"
        "<th>void</th><th>rounds/match</th><th>citations valid/fabricated</th>"
        "<th>tokens/answer</th></tr>"
    )
    body = "".join(
        f"<tr><td class=num>{r.rank}</td><td>{esc(r.agent)}</td><td class=num>{r.rating:.0f}"
        f"</td><td>{r.lower:.0f} to {r.upper:.0f}</td><td>{r.wins}-{r.losses}-{r.ties}</td>"
        f"<td class=num>{r.void}</td><td class=num>{r.avg_rounds:.2f}</td>"
        f"<td>{r.valid_citations}/{r.fabricated_citations}</td>"
        f"<td class=num>{r.tokens_per_answer:.0f}</td></tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


def ratings_svg(rows: Sequence[LeaderboardRow]) -> str:
    if not rows:
        return ""
    lo = min(r.lower for r in rows) - 20
    hi = max(r.upper for r in rows) + 20
    width, left, row_h = 640, 160, 22
    scale = (width - left - 20) / max(hi - lo, 1.0)

    def x(v: float) -> float:
        return left + (v - lo) * scale

    parts = []
    for i, r in enumerate(rows):
        y = 15 + i * row_h
        parts.append(
            f'<text x="4" y="{y + 4}">{esc(r.agent)}</text>'
            f'<line x1="{x(r.lower):.1f}" x2="{x(r.upper):.1f}" y1="{y}" y2="{y}" '
            f'stroke="#4a7" stroke-width="3"/>'
            f'<circle cx="{x(r.rating):.1f}" cy="{y}" r="4" fill="#264"/>'
            f'<text x="{x(r.upper) + 6:.1f}" y="{y + 4}">{r.rating:.0f}</text>'
        )
    height = 25 + len(rows) * row_h
    return (
        f'<svg width="{width}" height="{height}" role="img" '
        f'aria-label="ratings with 95% intervals">{"".join(parts)}</svg>'
    )


def win_matrix(agents: Sequence[str], matches: Sequence[MatchRecord]) -> str:
    score: dict[tuple[str, str], list[float]] = {}
    for m in matches:
        s = m.score_a()
        if s is None:
            continue
        score.setdefault((m.a, m.b), []).append(s)
        score.setdefault((m.b, m.a), []).append(1.0 - s)
    head = "<tr><th>row vs column</th>" + "".join(f"<th>{esc(a)}</th>" for a in agents) + "</tr>"
    body = ""
    for a in agents:
        cells = []
        for b in agents:
            vals = score.get((a, b))
            cells.append(
                "<td class=muted>-</td>"
                if not vals
                else f"<td class=num>{sum(vals):g}/{len(vals)}</td>"
            )
        body += f"<tr><th>{esc(a)}</th>{''.join(cells)}</tr>"
    return f"<table>{head}{body}</table><p class=muted>points (win 1, tie 0.5) / matches</p>"


def failure_table(rows: Sequence[LeaderboardRow]) -> str:
    head = (
        "<tr><th>agent</th><th>lost rounds</th>"
        + "".join(f"<th>{f}</th>" for f in FAILURES)
        + "</tr>"
    )
    body = "".join(
        f"<tr><td>{esc(r.agent)}</td><td class=num>{r.lost_rounds}</td>"
        + "".join(f"<td class=num>{r.failure_share[f]:.0%}</td>" for f in FAILURES)
        + "</tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


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
        guards = [f"{side}: {g.guard}" for side, g in (("A", graded.a), ("B", graded.b)) if g.guard]
        out.append(
            f"<p><b>evidence judge:</b> {esc(graded.derived.verdict.value)}"
            + (f" (guards: {esc(', '.join(guards))})" if guards else "")
            + "</p>"
        )
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
    """The Examiner's figures from run.json (`examiner_check`), above the leaderboard because
    they say how far it can be trusted: one column per judge mode, value [95% interval] (n),
    and the verdict with its threshold. A run without a check says so, so that silence is
    never read as a pass."""
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


def failed_table(agents: Sequence[str], matches: Sequence[MatchRecord]) -> str:
    """Per agent, the rounds its own failures voided (drarena's default) or lost it (its
    error text judged, `failed_answers: judged`)."""
    body = "".join(
        f"<tr><td>{esc(f.agent)}</td><td class=num>{f.voided}</td><td class=num>{f.judged}</td>"
        "</tr>"
        for f in failed_rounds(sorted(agents), matches)
    )
    return (
        "<table><tr><th>agent</th><th>rounds voided by its failure</th>"
        f"<th>rounds its error text was judged</th></tr>{body}</table>"
    )


def render_report(
    title: str,
    header: Mapping[str, Any],
    rows: Sequence[LeaderboardRow],
    matches: Sequence[MatchRecord],
    seconds: Mapping[str, Sequence[float]] | None = None,
    sections: str = "",
) -> str:
    """`sections`: finished HTML (drarena.report.analyses) placed after the failure profiles."""
    agents = [r.agent for r in rows]
    void = [m for m in matches if m.score_a() is None]
    void_list = "".join(f"<li>{esc(m.match_id)}: {esc(m.void_reason)}</li>" for m in void)
    timing = "".join(
        f"<li>{esc(a)}: {sum(v) / len(v):.1f} s per answer</li>"
        for a, v in sorted((seconds or {}).items())
        if v
    )
    meta = esc(
        ", ".join(
            f"{k}: {header.get(k)}"
            for k in ("snapshot_fingerprint", "seed", "git_revision")
            if k in header
        )
    )
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1><p class=muted>{meta}</p>"
        f"{examiner_check_section(header.get('examiner_check'))}"
        f"<h2>Leaderboard</h2>{leaderboard_table(rows)}"
        f"<h2>Ratings (Bradley-Terry, 95% bootstrap intervals)</h2>{ratings_svg(rows)}"
        f"<h2>Pairwise results</h2>{win_matrix(agents, matches)}"
        f"<h2>Failure profiles (share of lost rounds)</h2>{failure_table(rows)}{sections}"
        f"<h2>Void matches ({len(void)})</h2><ul>{void_list or '<li>none</li>'}</ul>"
        f"<h2>Failed answers</h2>{failed_table(agents, matches)}"
        f"<h2>Time per answer (this run; not part of the replayed record)</h2>"
        f"<ul>{timing or '<li>none recorded</li>'}</ul>"
        f"<h2>Matches</h2>{match_viewer(matches)}</body></html>\n"
    )
