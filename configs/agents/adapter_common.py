"""What the adapters that answer in free prose share: the earlier questions of the round put
before the task, the URLs of the answer turned into [n] markers with a citation list, the
visible text of a fetched page, and the stdin -> stdout JSON protocol around `research`.

Why a module of its own: the smolagents, OpenAI Agents SDK and Pydantic AI adapters each had a
copy, and a fix to one (say, trailing punctuation on a URL) must reach all. It imports only
the standard library, so every harness venv can import it; an adapter run as a script has this
folder on sys.path, which is how `import adapter_common` finds it.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import sys
from collections.abc import Awaitable, Callable

# Tags and the content of script and style elements: what `page_text` drops.
TAG = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.S | re.I)

# A URL in prose: up to whitespace, a quote, a closing bracket or an angle bracket.
URL = re.compile(r"https?://[^\s<>\"')\]]+")


def with_history(task: str, history: list[dict[str, str]]) -> str:
    """The task with the round's earlier questions and answers before it (the paper's
    multi-turn rounds show the agent what it said), unchanged when there are none."""
    if not history:
        return task
    earlier = "\n\n".join(f"Q: {h['question']}\nA: {h['answer']}" for h in history)
    return f"Earlier questions and your answers:\n{earlier}\n\n{task}"


def cite(answer: str) -> tuple[str, list[str]]:
    """The answer with each URL replaced by [n], n its 1-based place in the returned list of
    distinct URLs (first-seen order). Trailing sentence punctuation is not part of a URL: it
    stays in the prose after the marker (the copies this replaced dropped it)."""
    citations: list[str] = []

    def mark(match: re.Match[str]) -> str:
        url = match.group(0).rstrip(".,;:")
        if url not in citations:
            citations.append(url)
        return f"[{citations.index(url) + 1}]{match.group(0)[len(url) :]}"

    return URL.sub(mark, answer), citations


def page_text(body: str, limit: int) -> str:
    """The visible text of an HTML page, whitespace collapsed, cut to `limit` characters."""
    text = html.unescape(TAG.sub(" ", body))
    return " ".join(text.split())[:limit]


Research = Callable[[str, int, int, list[dict[str, str]]], Awaitable[str]]


def serve(research: Research) -> int:
    """The command-agent protocol for an async `research(question, low, high, history)`: the
    request JSON on stdin, {"report", "citations"} on stdout, URLs of the answer cited."""
    request = json.load(sys.stdin)
    low, high = request.get("word_limit") or (150, 250)
    answer = asyncio.run(research(request["question"], low, high, request.get("history") or []))
    report, citations = cite(answer)
    json.dump({"report": report, "citations": citations}, sys.stdout)
    return 0
