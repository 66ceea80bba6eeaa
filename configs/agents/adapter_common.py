"""What the adapters that answer in free prose share: the earlier questions of the round put
before the task, and the URLs of the answer turned into [n] markers with a citation list.

Why a module of its own: the smolagents and OpenAI Agents SDK adapters each had a copy, and a
fix to one (say, trailing punctuation on a URL) must reach both. It imports only the standard
library, so every harness venv can import it; an adapter run as a script has this folder on
sys.path, which is how `import adapter_common` finds it.
"""

from __future__ import annotations

import re

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
