"""Untrusted text into prompts: delimited, unforgeable, and cut to fit the context (pure);
and onto one terminal line (`shown`).

Crawled pages and agent answers are data. Each block is wrapped in markers the text itself
cannot produce (any marker-like sequence inside the text is defanged), and page texts share
a character budget evenly, so one long page cannot push a target page out of the prompt.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from drarena.records import Record

_MARKER = re.compile(r"<{2,}|>{2,}|\[\[|\]\]")


def shown(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters for a one-line message, its control characters (CR,
    LF, NUL, ESC, line separators, bidi overrides) and lone surrogates written as escapes: a
    URL an agent, a page or a provider supplied, or a stored file's text, can neither break
    the line, forge another, nor send the terminal commands."""
    cut = text[:limit]
    if cut.isprintable():
        return cut
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in cut)


@functools.lru_cache(maxsize=1024)
def defang(text: str) -> str:
    """Break sequences that look like our markers or verdict tags ('<<<', '[[').

    Remembered (pure): every match of a tree quotes the same pages, and the substitution
    over a page of Python docs (many '>>>' prompts) took ~0.2 ms, which 64 matches starting
    at once in a round spend in a row before their first model calls go out."""
    return _MARKER.sub(_spaced, text)


def _spaced(match: re.Match[str]) -> str:
    return " ".join(match.group(0))


def quote_block(label: str, text: str) -> str:
    label = re.sub(r"[^A-Za-z0-9 _:/.#-]", "", label)[:120]
    return f"<<<BEGIN {label}>>>\n{defang(text)}\n<<<END {label}>>>"


@dataclasses.dataclass(frozen=True, slots=True)
class Fitted(Record):
    text: str
    original_chars: int
    cut: bool


def fit_evenly(texts: list[str], budget_chars: int, *, min_chars: int = 200) -> list[Fitted]:
    """Share a character budget across texts: short texts keep everything, and what they
    leave is split evenly among the longer ones (water-filling). Every text keeps at least
    min_chars, so no page is ever dropped; the cut is recorded."""
    n = len(texts)
    if n == 0:
        return []
    allowance = [0] * n
    remaining = max(budget_chars, min_chars * n)
    open_ = sorted(range(n), key=lambda i: (len(texts[i]), i))
    while open_:
        share = remaining // len(open_)
        i = open_[0]
        if len(texts[i]) <= share:
            allowance[i] = len(texts[i])
            remaining -= allowance[i]
            open_.pop(0)
            continue
        for j in open_:
            allowance[j] = share
        break
    return [Fitted(t[:a], len(t), a < len(t)) for t, a in zip(texts, allowance, strict=True)]
