"""Answers as text for people: the report, its citations and a compact trajectory (pure).

Everything an answer holds came from a model, an agent or a page: each field goes through
quoting.shown, so no part of it can send the terminal commands (an OSC 52 clipboard write, a
title, a screen clear, a bidi override) or forge a line of drarena's own. The report keeps its
lines, each behind "| ", so a line of it cannot pass for one of drarena's (`error: ...`).
"""

from __future__ import annotations

import json

from drarena.agents.base import Answer, ToolEvent
from drarena.quoting import shown

REPORT_GUTTER = "| "


def _short(text: str, limit: int) -> str:
    text = shown(" ".join(text.split()), None)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_line(event: ToolEvent) -> str:
    try:
        args = json.loads(event.arguments)
        args_text = (
            ", ".join(f"{k}={v!r}" for k, v in args.items())
            if isinstance(args, dict)
            else event.arguments
        )
    except (json.JSONDecodeError, RecursionError):
        args_text = event.arguments
    head = f"{_short(event.name, 40)}({_short(args_text, 80)})"
    if event.error:
        return f"{head} -> ERROR {_short(event.error, 120)}"
    if event.name == "answer":
        return head.split("(", 1)[0] + "(...)"
    urls = ", ".join(shown(u, 300) for u in event.urls[:3])
    urls += f" +{len(event.urls) - 3}" if len(event.urls) > 3 else ""
    return f"{head} -> {len(event.urls)} url(s) {urls}".rstrip()


def report_lines(report: str) -> list[str]:
    """The report's lines behind the gutter, what a terminal would act on escaped."""
    if not report:
        return ["(no report)"]
    return [REPORT_GUTTER + line for line in shown(report, None, lines=True).split("\n")]


def format_answer(answer: Answer) -> str:
    lines = [f"# {shown(answer.agent)}", "", *report_lines(answer.report), "", "## Citations"]
    if not answer.citations:
        lines.append("(none)")
    for c in answer.citations:
        status = {True: "ok", False: "FABRICATED", None: "unchecked"}[c.valid]
        used = "" if c.in_report else " (not referenced in the report)"
        lines.append(f"[{c.n}] {shown(c.url, 2000)}  {status}{used}")
    k = answer.check
    lines.append(
        f"cited {k.cited}, valid {k.valid}, fabricated {k.fabricated}, "
        f"unresolved markers {k.unresolved}" + ("" if k.checked else " (not checked)")
    )
    lines += ["", "## Trajectory"]
    for step in answer.trajectory.steps:
        model = step.model
        head = (
            f"step {step.index}: model {model.prompt_tokens}+{model.completion_tokens} tok "
            f"{model.latency_s:.1f}s{' (cached)' if model.cached else ''} "
            f"key {shown(model.key, 12)}"
            if model
            else f"step {step.index}: no model call"
        )
        if step.note:
            head += f" [{shown(step.note)}]"
        lines.append(head)
        if step.error:
            lines.append(f"    ERROR {_short(step.error, 160)}")
        lines += [f"    {tool_line(t)}" for t in step.tools]
    lines += [
        "",
        f"wall {answer.wall_s:.1f}s, model {answer.model_s:.1f}s, tokens "
        f"{answer.prompt_tokens}+{answer.completion_tokens}",
    ]
    if answer.limit_hit:
        lines.append(f"limit hit: {shown(answer.limit_hit, 500)}")
    if answer.error:
        lines.append(f"error: {shown(answer.error, 2000)}")
    return "\n".join(lines)
