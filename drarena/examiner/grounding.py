"""Grounded checklist items: each item tied to a passage of its cited page, measured (pure).

Why: the checklist is the grading key, and an item no page supports is an opinion. On issue
33's first Qwen2.5-Coder-1.5B run, 3 of 11 items were not supported by the page they cite
(e.g. "The base64 module mentions RFC 4648 for security considerations, relevant to
zipfile"), and any judge, LLM or code, then credits or blames answers for a fact the frozen
web does not hold. So every item carries `evidence`: the window of one or two consecutive
sentences of its cited page that holds the largest weighted share of the item's content
words (code picks it; the model is never asked to copy text, which small models mangle).
`support` is that share; an item under SUPPORT_MIN is unsupported.

Content words are compared as stems (drarena.corpus.terms) weighted by the snapshot's term
statistics, so "module" on the Python docs counts for little and "maxlen" for much.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from drarena.corpus.terms import UNIFORM, TermStats, content_stems, normalised, sentences
from drarena.examiner.taskcheck import ChecklistItem, Task

SUPPORT_MIN = 0.5  # weighted share of an item's content words its evidence must hold
EVIDENCE_MAX_CHARS = 600


@dataclasses.dataclass(frozen=True, slots=True)
class Evidence:
    """The passage chosen for an item and the weighted share of its words it holds."""

    text: str
    support: float


def weighted_share(wanted: Sequence[str], have: set[str], terms: TermStats) -> tuple[int, int]:
    """(weight of `wanted`'s distinct stems found in `have`, weight of them all): an exact
    fraction, compared by cross multiplication (`at_least`)."""
    distinct = list(dict.fromkeys(wanted))
    total = sum(terms.weight(s) for s in distinct)
    found = sum(terms.weight(s) for s in distinct if s in have)
    return found, total


def at_least(found: int, total: int, share: float) -> bool:
    """found / total >= share, in integers (share in basis points): the same on every CPU."""
    return total > 0 and found * 10000 >= round(share * 10000) * total


def ratio(found: int, total: int) -> float:
    """found / total rounded to 4 places, for records (0 when there is nothing to find)."""
    return round(found / total, 4) if total else 0.0


def windows(parts: Sequence[str], size: int = 2) -> list[str]:
    """Each part, and each run of up to `size` consecutive parts joined."""
    out = list(parts)
    for n in range(2, size + 1):
        out += [" ".join(parts[i : i + n]) for i in range(len(parts) - n + 1)]
    return out


def best_evidence(item: str, page_text: str, terms: TermStats = UNIFORM) -> Evidence:
    """The window of one or two sentences of `page_text` holding the largest weighted share
    of `item`'s content stems (the shorter, then the earlier, on a tie)."""
    wanted = content_stems(item)
    best, best_key = "", (-1, 0, 0)
    for i, window in enumerate(windows(sentences(page_text))):
        found, total = weighted_share(wanted, set(content_stems(window)), terms)
        # compare found/total across windows exactly: total is the same for every window
        key = (found, -len(window), -i)
        if key > best_key:
            best, best_key = window, key
            best_total = total
    if not best:
        return Evidence("", 0.0)
    return Evidence(best[:EVIDENCE_MAX_CHARS], ratio(best_key[0], best_total))


def occurs(passage: str, page_text: str) -> bool:
    """The passage occurs in the page, compared on words only (case, punctuation and line
    breaks ignored): how a stored item's evidence is checked against its page."""
    wanted = normalised(passage)
    return bool(wanted) and wanted in normalised(page_text)


def supported(evidence: Evidence) -> bool:
    return evidence.support >= SUPPORT_MIN


def ground_items(
    items: Sequence[ChecklistItem], pages: Mapping[str, str], terms: TermStats
) -> tuple[list[ChecklistItem], list[ChecklistItem]]:
    """(the items with their evidence and support attached, the unsupported ones): each
    item's evidence is the best window of the page it cites (`pages`: URL -> text)."""
    kept: list[ChecklistItem] = []
    dropped: list[ChecklistItem] = []
    for item in items:
        text = pages.get(item.source_url, "")
        found = best_evidence(item.item, text, terms) if text else Evidence("", 0.0)
        grounded = dataclasses.replace(item, evidence=found.text, support=found.support)
        (kept if supported(found) else dropped).append(grounded)
    return kept, dropped


def ground_task(
    task: Task, pages: Mapping[str, str], terms: TermStats
) -> tuple[Task | None, list[str]]:
    """The task with every item grounded and unsupported items dropped (noted), or None
    with the reasons when a checklist has no supported item left (fed back to the model as
    the reason of its next try)."""
    notes = list(task.notes)
    reasons = []
    lists = {}
    for key in ("checklist_depth", "checklist_width"):
        kept, dropped = ground_items(getattr(task, key), pages, terms)
        for item in dropped:
            notes.append(
                f"{key}: item {item.item[:60]!r} dropped: its page supports "
                f"{item.support or 0:.0%} of its words (under {SUPPORT_MIN:.0%})"
            )
        if not kept:
            reasons.append(
                f"no {key} item is supported by the page it cites (each item must state "
                "what its SOURCE page says, in the page's own terms)"
            )
        lists[key] = tuple(kept)
    if reasons:
        return None, reasons
    return (
        dataclasses.replace(
            task,
            checklist_depth=lists["checklist_depth"],
            checklist_width=lists["checklist_width"],
            notes=tuple(notes),
        ),
        [],
    )
