"""Untrusted text into prompts: delimited, unforgeable, and cut to fit the context (pure);
and onto a terminal (`shown`, and the CLI's stream guard).

Crawled pages and agent answers are data. Each block is wrapped in markers the text itself
cannot produce (any marker-like sequence inside the text is defanged), and page texts share
a character budget evenly, so one long page cannot push a target page out of the prompt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, cast

from drarena.records import Record

_MARKER = re.compile(r"<{2,}|>{2,}|\[\[|\]\]")


# What a terminal would act on, not show: C0 controls but tab, LF and CR (ESC starts CSI and
# OSC sequences: titles, the clipboard, screen clears), DEL, C1 controls (0x9b is a one-byte
# CSI), bidi and zero-width format characters, line and paragraph separators, BOM, lone
# surrogates. LF and tab are layout; CR is left to the stream guard (progress bars redraw
# with it) and escaped by shown().
_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)


def _unicode_escape(match: re.Match[str]) -> str:
    """`\\u` and four hex digits (ESC is `\\u001b`): readable, and inside a JSON string the
    same character (JSON output stays valid and decodes to what it held)."""
    return f"\\u{ord(match.group()):04x}"


def shown(text: str, limit: int | None = 200, *, lines: bool = False) -> str:
    """The one way untrusted text (from a page, a model, an agent, a manifest, a config, a
    stored file, a user's path) reaches a terminal.

    One line (the default): `text` cut to `limit` characters, its control characters (CR,
    LF, NUL, ESC, line separators, bidi overrides) and lone surrogates written as escapes: it
    can neither break the line, forge another, nor send the terminal commands.
    `lines=True` (a report of several lines): LF and tab are kept, every other character a
    terminal would act on (CR, ESC, bidi overrides, ...) is escaped the same way (ESC as
    `\\u001b`); `limit` None keeps the whole text."""
    cut = text if limit is None else text[:limit]
    if lines:
        return _TERMINAL_UNSAFE.sub(_unicode_escape, cut.replace("\r", "\\r"))
    if cut.isprintable():
        return cut
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in cut)


def terminal_text(text: str) -> str:
    """What the stream guard writes: `text` with what a terminal would act on escaped
    (shown's `lines` mode), CR kept for progress bars."""
    if _TERMINAL_UNSAFE.search(text) is None:
        return text
    return _TERMINAL_UNSAFE.sub(_unicode_escape, text)


class TerminalGuard:
    """A text stream in front of stdout or stderr that writes everything through
    terminal_text. Why, beside shown() at each field: a string from a page, a model, an agent
    or a manifest reaches the terminal in many places (progress lines, banners, tables, error
    lines, argparse's echo of an argument, a library's warning), and one that is missed must
    still not set the title, write the clipboard (OSC 52) or clear the screen. Other
    attributes (fileno, isatty, encoding, flush) are the stream's."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.contextmanager
def guarded_terminal() -> Iterator[None]:
    """sys.stdout and sys.stderr behind TerminalGuard for the block (the CLI's whole run)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, TerminalGuard):
        sys.stdout = cast(TextIO, TerminalGuard(sys.stdout))
    if not isinstance(sys.stderr, TerminalGuard):
        sys.stderr = cast(TextIO, TerminalGuard(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


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
