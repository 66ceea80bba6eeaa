"""Answers as text for people: the report, its citations and a compact trajectory (pure)."""

from __future__ import annotations

import json

from drarena.agents.base import Answer, ToolEvent


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_line(event: ToolEvent) -> str:
    try:
        args = json.loads(event.arguments)
        shown = (
            ", ".join(f"{k}={v!r}" for k, v in args.items())
            if isinstance(args, dict)
            else event.arguments
        )
    except (json.JSONDecodeError, RecursionError):
        shown = event.arguments
    head = f"{event.name}({_short(shown, 80)})"
    if event.error:
        return f"{head} -> ERROR {_short(event.error, 120)}"
    if event.name == "answer":
        return head.split("(", 1)[0] + "(...)"
    urls = ", ".join(event.urls[:3]) + (f" +{len(event.urls) - 3}" if len(event.urls) > 3 else "")
    return f"{head} -> {len(event.urls)} url(s) {urls}".rstrip()


def format_answer(answer: Answer) -> str:
    lines = [f"# {answer.agent}", "", answer.report or "(no report)", "", "## Citations"]
    if not answer.citations:
        lines.append("(none)")
    for c in answer.citations:
        status = {True: "ok", False: "FABRICATED", None: "unchecked"}[c.valid]
        used = "" if c.in_report else " (not referenced in the report)"
        lines.append(f"[{c.n}] {c.url}  {status}{used}")
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
            f"key {model.key[:12]}"
            if model
            else f"step {step.index}: no model call"
        )
        if step.note:
            head += f" [{step.note}]"
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
        lines.append(f"limit hit: {answer.limit_hit}")
    if answer.error:
        lines.append(f"error: {answer.error}")
    return "\n".join(lines)
