"""Per-page drift verdicts: gone, redirected, changed or unchanged (pure).

Why sentences: ground truth (a checklist item) rests on a sentence or two of a page, so the
diff is made at sentence level. Old and new text come from the same extractor
(drarena.corpus.page), and whitespace is collapsed before comparing, so a re-indented page
is unchanged. Numbers and dates are diffed per matched sentence because a changed figure is
the drift most likely to make an answer wrong while the page still looks the same.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from enum import StrEnum

from drarena.records import Record
from drarena.web.warc.urls import canonicalize_url

MATCH_RATIO = 0.5  # word-level similarity above which a replaced sentence counts as changed
MAX_PAIRING = 250_000  # old x new sentences in one replaced block paired one by one, at most

_WS = re.compile(r"\s+")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"\w+(?:[.,:'-]\w+)*")
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|"
    "December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
)
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b"
    rf"|\b\d{{1,2}} (?:{_MONTHS}) \d{{4}}\b"
    rf"|\b(?:{_MONTHS}) \d{{4}}\b"
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,:]\d+)*%?")


class Verdict(StrEnum):
    GONE = "gone"
    REDIRECTED = "redirected"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    UNCHECKED = "unchecked"  # robots or our own policy kept us from looking


# Failures that say nothing about the page, only about what we were allowed to do.
POLICY_FAILURES = frozenset({"robots", "private_address", "bad_scheme", "bad_url", "not_compared"})


@dataclasses.dataclass(frozen=True, slots=True)
class NewVersion(Record):
    """What stands at a page's URL now (live fetch or later snapshot), text extracted.

    `hops` records every response on the way ("301 http://..."); `failure` is the kind of
    the failed last step ("" when a response came); `text` is None unless the final response
    is a 2xx HTML page; `same_bytes` says the body equals the snapshot's (not re-extracted)."""

    url: str
    final_url: str
    status: int
    hops: tuple[str, ...] = ()
    failure: str = ""
    detail: str = ""
    content_type: str = ""
    text: str | None = None
    same_bytes: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class SentenceChange(Record):
    """An old sentence and the new sentence it became; numbers/dates that differ."""

    old: str
    new: str
    ratio: float
    numbers_old: tuple[str, ...] = ()
    numbers_new: tuple[str, ...] = ()
    dates_old: tuple[str, ...] = ()
    dates_new: tuple[str, ...] = ()

    @property
    def figures_changed(self) -> bool:
        return bool(self.numbers_old or self.numbers_new or self.dates_old or self.dates_new)


@dataclasses.dataclass(frozen=True, slots=True)
class TextDiff(Record):
    similarity: float
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[SentenceChange, ...]

    @property
    def same(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclasses.dataclass(frozen=True, slots=True)
class PageDiff(Record):
    """The verdict on one snapshot page; `reason` is the one line the table shows."""

    url: str
    doc_id: str
    title: str
    verdict: Verdict
    reason: str
    status: int = 0
    target: str | None = None  # where a redirected page now leads
    hops: tuple[str, ...] = ()
    similarity: float = 1.0
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[SentenceChange, ...] = ()

    @property
    def stale_sentences(self) -> frozenset[str]:
        """Old sentences that no longer stand as they were."""
        return frozenset(self.removed) | frozenset(c.old for c in self.changed)


def norm_space(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _continues(previous: str, line: str) -> bool:
    """Extracted text keeps the source's hard line wraps: a line that starts in lower case
    (or with a digit or an opening bracket) after one that did not end a sentence is the
    same sentence going on."""
    return (
        previous[-1] not in ".!?:"
        and not line.startswith("- ")
        and (line[0].islower() or line[0].isdigit() or line[0] in "([{'\"‘“")
    )


def sentences(text: str) -> tuple[str, ...]:
    """Extracted lines, wrapped sentences rejoined, cut into sentences; whitespace collapsed."""
    blocks: list[str] = []
    for raw in text.splitlines():
        line = norm_space(raw)
        if not line:
            continue
        if blocks and _continues(blocks[-1], line):
            blocks[-1] += " " + line
        else:
            blocks.append(line)
    return tuple(part for block in blocks for part in _SPLIT.split(block) if part)


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def figures(sentence: str) -> tuple[list[str], list[str]]:
    """(numbers, dates) in order of appearance; a date's digits are not also numbers."""
    dates = [m.group(0) for m in _DATE.finditer(sentence)]
    rest = _DATE.sub(" ", sentence)
    numbers = [m.group(0) for m in _NUMBER.finditer(rest)]
    return numbers, dates


def _only_in(a: list[str], b: list[str]) -> tuple[str, ...]:
    """Items of `a` (with multiplicity, in order) not matched in `b`."""
    left = Counter(b)
    out = []
    for item in a:
        if left[item]:
            left[item] -= 1
        else:
            out.append(item)
    return tuple(out)


def sentence_change(old: str, new: str, ratio: float) -> SentenceChange:
    nums_old, dates_old = figures(old)
    nums_new, dates_new = figures(new)
    return SentenceChange(
        old,
        new,
        round(ratio, 4),
        _only_in(nums_old, nums_new),
        _only_in(nums_new, nums_old),
        _only_in(dates_old, dates_new),
        _only_in(dates_new, dates_old),
    )


def _word_ratio(a: list[str], b: list[str]) -> float:
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < MATCH_RATIO or matcher.quick_ratio() < MATCH_RATIO:
        return 0.0
    return matcher.ratio()


def _pair_block(
    old: Sequence[str], new: Sequence[str]
) -> tuple[list[tuple[int, int, float]], set[int], set[int]]:
    """Greedy best-first pairing of a replaced block: (ratio desc, old index, new index)."""
    if len(old) * len(new) > MAX_PAIRING:
        return [], set(range(len(old))), set(range(len(new)))
    old_words = [words(s) for s in old]
    new_words = [words(s) for s in new]
    candidates = []
    for i, a in enumerate(old_words):
        for j, b in enumerate(new_words):
            ratio = _word_ratio(a, b)
            if ratio >= MATCH_RATIO:
                candidates.append((-ratio, i, j))
    candidates.sort()
    pairs: list[tuple[int, int, float]] = []
    used_old: set[int] = set()
    used_new: set[int] = set()
    for neg, i, j in candidates:
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new.add(j)
            pairs.append((i, j, -neg))
    pairs.sort()
    return pairs, set(range(len(old))) - used_old, set(range(len(new))) - used_new


def compare_text(old_text: str, new_text: str) -> TextDiff:
    """Sentence diff of two extracted texts. Similarity is char-weighted: equal (or merely
    moved) sentences count fully, changed ones by their word ratio, added and removed ones
    not at all. A reordering alone leaves nothing changed, so it compares as the same."""
    old, new = sentences(old_text), sentences(new_text)
    if old == new or norm_space(old_text) == norm_space(new_text):
        return TextDiff(1.0, (), (), ())
    added: list[str] = []
    removed: list[str] = []
    changed: list[SentenceChange] = []
    matched = 0.0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            matched += 2 * sum(len(s) for s in old[i1:i2])
        elif tag == "delete":
            removed.extend(old[i1:i2])
        elif tag == "insert":
            added.extend(new[j1:j2])
        else:
            pairs, lone_old, lone_new = _pair_block(old[i1:i2], new[j1:j2])
            for i, j, ratio in pairs:
                a, b = old[i1 + i], new[j1 + j]
                changed.append(sentence_change(a, b, ratio))
                matched += ratio * (len(a) + len(b))
            removed.extend(old[i1 + i] for i in sorted(lone_old))
            added.extend(new[j1 + j] for j in sorted(lone_new))
    # a sentence removed in one place and added in another only moved: it still stands
    moved = Counter(removed) & Counter(added)
    matched += 2 * sum(len(s) * n for s, n in moved.items())
    removed, added = _without(removed, moved), _without(added, moved)
    total = sum(map(len, old)) + sum(map(len, new))
    similarity = round(matched / total, 4) if total else 1.0
    if not (added or removed or changed):
        similarity = 1.0
    return TextDiff(similarity, tuple(added), tuple(removed), tuple(changed))


def _without(items: list[str], drop: Counter[str]) -> list[str]:
    left = Counter(drop)
    out = []
    for item in items:
        if left[item]:
            left[item] -= 1
        else:
            out.append(item)
    return out


def _figures_note(changes: Sequence[SentenceChange]) -> str:
    notes = []
    for c in changes:
        before = ", ".join((*c.numbers_old, *c.dates_old)) or "-"
        after = ", ".join((*c.numbers_new, *c.dates_new)) or "-"
        if c.figures_changed:
            notes.append(f"{before} -> {after}")
    return "; figures " + "; ".join(notes) if notes else ""


def _same_url(a: str, b: str) -> bool:
    try:
        return canonicalize_url(a) == canonicalize_url(b)
    except ValueError:
        return a == b


def judge_page(url: str, doc_id: str, title: str, old_text: str, now: NewVersion) -> PageDiff:
    """The verdict on one page given its snapshot text and what stands at its URL now."""
    base = PageDiff(url, doc_id, title, Verdict.UNCHANGED, "", status=now.status, hops=now.hops)
    replace = dataclasses.replace
    if now.failure in POLICY_FAILURES:
        return replace(base, verdict=Verdict.UNCHECKED, reason=f"{now.failure}: {now.detail}")
    if now.failure:
        return replace(
            base, verdict=Verdict.GONE, reason=f"{now.failure}: {now.detail}", similarity=0.0
        )
    if not _same_url(now.final_url, url):
        steps = " -> ".join(h.split(" ", 1)[0] for h in now.hops)
        return replace(
            base,
            verdict=Verdict.REDIRECTED,
            target=now.final_url,
            similarity=0.0,
            reason=f"{steps} to {now.final_url}",
        )
    if now.status >= 400 or now.status < 200:
        return replace(base, verdict=Verdict.GONE, reason=f"HTTP {now.status}", similarity=0.0)
    if now.same_bytes:
        return replace(base, reason="same bytes")
    if now.text is None:
        return replace(
            base,
            verdict=Verdict.CHANGED,
            similarity=0.0,
            removed=sentences(old_text),
            reason=f"no longer an HTML page ({now.content_type or 'no type'})",
        )
    diff = compare_text(old_text, now.text)
    if diff.same:
        return replace(base, reason="same text")
    reason = (
        f"similarity {diff.similarity:.4f}; {len(diff.changed)} sentence(s) changed, "
        f"{len(diff.added)} added, {len(diff.removed)} removed"
        f"{_figures_note(diff.changed)}"
    )
    return replace(
        base,
        verdict=Verdict.CHANGED,
        reason=reason,
        similarity=diff.similarity,
        added=diff.added,
        removed=diff.removed,
        changed=diff.changed,
    )
