"""Validation of the Examiner's generated task before it is asked (pure).

Why: a question that names its target pages is a lookup, not research; a checklist item
that cannot be traced to a page in the tree is an opinion, not ground truth. Failures come
back as reasons the generator feeds into its retry.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from drarena.records import Record

# Length caps on what the task model writes (JSON Schema maxLength): drarena's bounds on a
# rambling model's output; the reference has none (core/examiner.py 81-100), and
# `match.task_text_caps: false` (set by `protocol: paper`) lifts them.
QUESTION_MAX_CHARS = 400
ITEM_MAX_CHARS = 160
RATIONALE_MAX_CHARS = 300
MAX_ITEMS = 6  # the ceiling `match.checklist_max_items: 6` restores (drarena before issue 16)


def task_schema(
    n_sources: int,
    n_targets: int = MAX_ITEMS,
    *,
    max_items: int | None = None,
    text_caps: bool = True,
) -> dict[str, Any]:
    """The task JSON Schema for a prompt that shows `n_sources` numbered pages, `n_targets` of
    them targets: at most one depth item per target and two width items per target, so every
    target can be checked at any width (the paper sets no bound; this one keeps a rambling
    model's output proportional to W). `max_items`: an optional fixed ceiling on both lists.

    Checklist items cite their page by number, not by URL: constrained decoding then makes
    an untraceable citation impossible, where small models mangle URLs they must copy. The
    length caps keep a rambling model's output bounded; `text_caps=False` leaves them out,
    as the reference sets none."""

    def text(most: int, least: int = 0) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if least:
            out["minLength"] = least
        if text_caps:
            out["maxLength"] = most
        return out

    item = {
        "type": "object",
        "properties": {
            "item": text(ITEM_MAX_CHARS, 1),
            "source": {"type": "integer", "minimum": 1, "maximum": n_sources},
        },
        "required": ["item", "source"],
        "additionalProperties": False,
    }

    def items(most: int) -> dict[str, Any]:
        return {
            "type": "array",
            "items": item,
            "minItems": 1,
            "maxItems": max(1, most if max_items is None else min(most, max_items)),
        }

    return {
        "type": "object",
        "properties": {
            "question": text(QUESTION_MAX_CHARS, 1),
            "checklist_depth": items(n_targets),
            "checklist_width": items(2 * n_targets),
            "rationale": text(RATIONALE_MAX_CHARS),
        },
        "required": ["question", "checklist_depth", "checklist_width", "rationale"],
        "additionalProperties": False,
    }


@dataclasses.dataclass(frozen=True, slots=True)
class ChecklistItem(Record):
    """One grading key item and the page it cites. `evidence`: the passage of that page
    that supports it, and `support`, the weighted share of the item's content words the
    passage holds (drarena.examiner.grounding); both absent (left out of the JSON) for tasks
    made before grounding, so their records keep their bytes."""

    _omit_if_none: ClassVar[tuple[str, ...]] = ("evidence", "support")

    item: str
    source_url: str
    evidence: str | None = None
    support: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Task(Record):
    question: str
    word_limit_instruction: str
    word_limit: tuple[int, int]
    checklist_depth: tuple[ChecklistItem, ...]
    checklist_width: tuple[ChecklistItem, ...]
    rationale: str
    notes: tuple[str, ...] = ()  # repairs made in validation (duplicate items dropped)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.casefold())).strip()


def leaked_names(question: str, forbidden: Iterable[str], *, min_len: int = 4) -> list[str]:
    """Forbidden strings (titles, site names, URLs, hosts) that appear in the question.

    Matching is on normalized words so punctuation and case do not hide a leak; very short
    names are skipped because they collide with ordinary words."""
    q = f" {_norm(question)} "
    found = []
    for name in forbidden:
        n = _norm(name)
        if len(n) >= min_len and f" {n} " in q:
            found.append(name)
    return sorted(set(found))


def forbidden_names(titles: Sequence[str], urls: Sequence[str]) -> list[str]:
    """Titles, URLs, hosts and file names of the root and target pages."""
    names = [t for t in titles if t]
    for url in urls:
        parts = urlsplit(url)
        names += [url, parts.netloc]
        leaf = parts.path.rstrip("/").rsplit("/", 1)[-1]
        if leaf:
            names.append(leaf)
    return names


def entity_names(titles: Sequence[str], urls: Sequence[str]) -> list[str]:
    """The target pages' entity names: a title's first segment when it is one word or a
    dotted name ("zipfile" of "zipfile — Work with ZIP archives — ..."), and a URL's file
    name without its extension ("zipfile" of .../zipfile.html; not "index").

    Why beside the whole titles: a question that names just the module gives its target
    away as surely as the title does, and the whole-title check let "zipfile" through (issue
    15's first Qwen run; examiner-check's leak rate measures it). Only target pages: the
    root's file name ("functions", "library") is an ordinary word of many fair questions."""
    names = []
    for title in titles:
        first = re.split(r"\s+[—–|-]\s+", title.strip(), maxsplit=1)[0].strip()
        if first and not re.search(r"\s", first):
            names.append(first)
    for url in urls:
        leaf = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
        stem = leaf.rsplit(".", 1)[0] if "." in leaf else leaf
        if stem and stem != "index":
            names.append(stem)
    return list(dict.fromkeys(names))


def check_task(
    raw: dict[str, Any],
    *,
    sources: Sequence[str],
    forbidden: Sequence[str],
    tree_urls: Iterable[str],
    earlier_questions: Sequence[str],
    word_limit: tuple[int, int],
    word_limit_instruction: str,
) -> tuple[Task | None, list[str]]:
    """A Task, or None with the reasons it was rejected. `sources` are the URLs of the pages
    the prompt numbered 1..n; items cite them by number.

    Empty and repeated checklist items (small models loop) are dropped and noted rather than
    failing the task: they add nothing to grade. A checklist left empty fails it."""
    reasons: list[str] = []
    notes: list[str] = []
    question = str(raw.get("question", "")).strip()
    if not question:
        reasons.append("the question is empty")
    leaks = leaked_names(question, forbidden)
    if leaks:
        reasons.append(f"the question names its sources: {', '.join(leaks)}")
    if any(_norm(question) == _norm(q) for q in earlier_questions):
        reasons.append("the question repeats an earlier question of this match")
    urls = set(tree_urls)
    lists: dict[str, tuple[ChecklistItem, ...]] = {}
    for key in ("checklist_depth", "checklist_width"):
        items = []
        seen: set[str] = set()
        dropped = 0
        for entry in raw.get(key) or []:
            item = str(entry.get("item", "")).strip() if isinstance(entry, dict) else ""
            number = entry.get("source") if isinstance(entry, dict) else None
            url = (
                sources[number - 1]
                if isinstance(number, int) and 1 <= number <= len(sources)
                else ""
            )
            if not item or _norm(item) in seen:
                dropped += 1
                continue
            seen.add(_norm(item))
            if not url:
                reasons.append(
                    f"{key} item {item[:60]!r} cites source {number!r}, not one of "
                    f"the {len(sources)} pages shown"
                )
                continue
            if url not in urls:
                reasons.append(
                    f"{key} item {item[:60]!r} cites {url[:100]!r}, not a page of the tree"
                )
            items.append(ChecklistItem(item, url))
        if dropped:
            notes.append(f"{key}: {dropped} empty or repeated item(s) dropped")
        if not items:
            reasons.append(
                f"{key} is empty" + (" once repeated items are dropped" if dropped else "")
            )
        lists[key] = tuple(items)
    if reasons:
        return None, list(dict.fromkeys(reasons))
    task = Task(
        question,
        word_limit_instruction,
        word_limit,
        lists["checklist_depth"],
        lists["checklist_width"],
        str(raw.get("rationale", "")),
        tuple(notes),
    )
    return task, []
