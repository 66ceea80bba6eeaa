"""Pointwise checklist grading: each answer alone, each item with a quote checked by code.

Why (issue 15 item 6): a small Examiner cannot compare two answers in one prompt (it copies
the prompt's example or prefers a position), but it can say, for one answer, whether an item
is there and copy the passage that shows it. Its own booleans are not trusted: an item counts
as satisfied only when the quoted passage really occurs in the answer (whitespace and case
normalised, at least MIN_QUOTE_CHARS long). The round's verdict is then derived by code from
the verified items of both answers (`derive`), so position bias is impossible by
construction. Each grade's prompt holds one task and one answer only, so the model cache
answers the same (task, answer) again from its record whatever the other answer is.

This is a deviation from DR-Arena, whose judge compares the two answers in one prompt
(docs/deviations.md); `judge_mode: pairwise` keeps the paper's way.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Protocol

from drarena.examiner import templates
from drarena.examiner.taskcheck import Task
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.models.client import ModelClient
from drarena.models.structured import complete_json
from drarena.quoting import defang, quote_block
from drarena.records import Record

MIN_QUOTE_CHARS = 12  # shorter passages ("the", "json") occur in almost any answer
MAX_QUOTE_CHARS = 300
_SPACE = re.compile(r"\s+")
_EDGE = "\"'`“”‘’«»…. "


def normalise(text: str) -> str:
    """Case-folded, NFKC, whitespace collapsed: what a quote is compared on."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def quote_found(quote: str, answer: str) -> bool:
    """True when `quote` (edges' quotation marks and ellipses dropped) is at least
    MIN_QUOTE_CHARS long once normalised and occurs in the answer as written or as the
    grader saw it (marker-like sequences defanged in the prompt)."""
    wanted = normalise(quote).strip(_EDGE)
    if len(wanted) < MIN_QUOTE_CHARS:
        return False
    return wanted in normalise(answer) or wanted in normalise(defang(answer))


def pointwise_schema(n_items: int) -> dict[str, Any]:
    entry = {
        "type": "object",
        "properties": {
            "satisfied": {"type": "boolean"},
            "quote": {"type": "string", "maxLength": MAX_QUOTE_CHARS},
        },
        "required": ["satisfied", "quote"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": entry, "minItems": n_items, "maxItems": n_items}
        },
        "required": ["items"],
        "additionalProperties": False,
    }


@dataclasses.dataclass(frozen=True, slots=True)
class ItemGrade(Record):
    """One checklist item of one answer: what the grader claimed and what code verified."""

    item: str
    kind: str  # "depth" or "width"
    claimed: bool
    quote: str
    verified: bool  # claimed, and the quote occurs in the answer


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerGrade(Record):
    """All items of one answer, with the grading call's cache key."""

    items: tuple[ItemGrade, ...]
    key: str

    def satisfied(self, kind: str) -> int:
        return sum(1 for i in self.items if i.kind == kind and i.verified)


@dataclasses.dataclass(frozen=True, slots=True)
class PointwiseJudgment(Record):
    """Both answers' grades (in the match's A/B order) and the verdict derived from them."""

    a: AnswerGrade
    b: AnswerGrade
    derived: Judgment


def grade_items(task: Task, answer: str, value: dict[str, Any]) -> tuple[ItemGrade, ...]:
    """Schema-valid grader JSON to verified grades (pure): an item is verified only when it
    was claimed and its quote occurs in the answer."""
    kinds = [("depth", i.item) for i in task.checklist_depth] + [
        ("width", i.item) for i in task.checklist_width
    ]
    out = []
    for (kind, item), entry in zip(kinds, value.get("items", []), strict=False):
        claimed = bool(entry.get("satisfied"))
        quote = str(entry.get("quote", ""))
        out.append(ItemGrade(item, kind, claimed, quote, claimed and quote_found(quote, answer)))
    for kind, item in kinds[len(out) :]:  # a short list (the schema forbids it): unsatisfied
        out.append(ItemGrade(item, kind, False, "", False))
    return tuple(out)


def grading_prompt(task: Task, answer: str) -> str:
    items = [*task.checklist_depth, *task.checklist_width]
    return templates.render(
        templates.POINTWISE_PROMPT,
        question=task.question,
        n_items=len(items),
        items="\n".join(f"{n}. {i.item}" for n, i in enumerate(items, 1)),
        answer=quote_block("ANSWER", answer),
        max_quote_chars=MAX_QUOTE_CHARS,
    )


async def grade_answer(client: ModelClient, role: str, task: Task, answer: str) -> AnswerGrade:
    """Grade one answer alone; raises the model layer's DrarenaError when no valid JSON."""
    n = len(task.checklist_depth) + len(task.checklist_width)
    messages = [{"role": "user", "content": grading_prompt(task, answer)}]
    value, completion = await complete_json(
        client, role, messages, pointwise_schema(n), name="grades"
    )
    return AnswerGrade(grade_items(task, answer, value), completion.key)


class GradedItem(Protocol):
    """One checklist item of one answer as `derive` reads it (ItemGrade, EvidenceItem)."""

    @property
    def kind(self) -> str: ...

    @property
    def verified(self) -> bool: ...


class Graded(Protocol):
    """One answer's graded items as `derive` reads them (AnswerGrade, AnswerEvidence)."""

    @property
    def items(self) -> Sequence[GradedItem]: ...

    def satisfied(self, kind: str) -> int: ...


def _missed(winner: Graded, loser: Graded, kind: str) -> bool:
    """Did the loser miss an item of `kind` that the winner satisfied?"""
    return any(
        w.verified and not lo.verified
        for w, lo in zip(winner.items, loser.items, strict=True)
        if w.kind == kind
    )


def derive(a: Graded, b: Graded) -> Judgment:
    """The round's verdict from the verified items of both answers (pure).

    Depth first, as the paper's hard constraints: more depth items satisfied wins whatever
    the width. Only equal depth lets width decide. Margins:
    - MUCH_BETTER: the winner satisfies every depth item, and the loser satisfies at most
      half of them (a depth win) or trails by at least half of the width items (a width win
      at equal depth);
    - BETTER: any other lead.
    - TIE: equal depth and equal width. HIGH when both cover the core items (every depth
      item and at least half of the width items), LOW otherwise.
    The loser's failure type: DEPTH when it missed a depth item the winner satisfied, WIDTH
    when a width item, BOTH when both, NONE when neither (it lost on presentation alone,
    possible only when `judge_mode: both` lets the pairwise judge break a tie).
    """
    n_depth = sum(1 for i in a.items if i.kind == "depth")
    n_width = len(a.items) - n_depth
    da, db = a.satisfied("depth"), b.satisfied("depth")
    wa, wb = a.satisfied("width"), b.satisfied("width")
    if da == db and wa == wb:
        core = all(d == n_depth and 2 * w >= n_width for d, w in ((da, wa), (db, wb)))
        return Judgment(Verdict.TIE, TieQuality.HIGH if core else TieQuality.LOW, FailureType.NONE)
    a_wins = da > db if da != db else wa > wb
    winner, loser = (a, b) if a_wins else (b, a)
    wd, ld = (da, db) if a_wins else (db, da)
    if wd != ld:
        much = wd == n_depth and 2 * ld <= n_depth
    else:
        much = wd == n_depth and 2 * abs(wa - wb) >= n_width
    verdict = Verdict.A_MUCH_BETTER if much else Verdict.A_BETTER
    return Judgment(verdict if a_wins else verdict.swapped(), None, failure_type(winner, loser))


def failure_type(winner: Graded, loser: Graded) -> FailureType:
    depth, width = _missed(winner, loser, "depth"), _missed(winner, loser, "width")
    if depth and width:
        return FailureType.BOTH
    if depth:
        return FailureType.DEPTH
    if width:
        return FailureType.WIDTH
    return FailureType.NONE
