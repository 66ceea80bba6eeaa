"""Judging a pair of answers in both orders and reconciling the two verdicts.

The answers are untrusted: they enter the prompt as quoted blocks, and the verdict is read
only from the judge's schema-valid JSON. The second judgment sees the answers swapped and is
mapped back to the match's order before reconciliation.
"""

from __future__ import annotations

import asyncio
import dataclasses

from drarena.examiner import templates
from drarena.examiner.judgeparse import RawJudgment, judge_schema, parse_judgment
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.examiner.verdicts import Judgment, reconcile
from drarena.models.client import ModelClient
from drarena.models.structured import complete_json
from drarena.quoting import quote_block
from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerForJudge(Record):
    """What the judge sees of one answer: the report and its citation counts."""

    report: str
    cited: int
    valid: int
    fabricated: int


@dataclasses.dataclass(frozen=True, slots=True)
class JudgedOrder(Record):
    """One ordering's raw judgment, in that ordering's own A/B labels, with its call key."""

    order: str  # "AB" or "BA"
    raw: RawJudgment
    key: str


@dataclasses.dataclass(frozen=True, slots=True)
class PairJudgment(Record):
    ab: JudgedOrder
    ba: JudgedOrder
    reconciled: Judgment


def _items(items: tuple[ChecklistItem, ...], first: int) -> str:
    return "\n".join(f"{n}. {i.item}" for n, i in enumerate(items, first))


def _answer_block(label: str, answer: AnswerForJudge) -> str:
    counts = (
        f"citations: {answer.cited} cited, {answer.valid} found in the archive, "
        f"{answer.fabricated} not found (fabricated)"
    )
    return quote_block(f"ANSWER {label}", f"({counts})\n\n{answer.report}")


def judge_prompt(task: Task, first: AnswerForJudge, second: AnswerForJudge) -> str:
    return templates.render(
        "judge",
        question=task.question,
        word_limit_instruction=task.word_limit_instruction,
        checklist_depth=_items(task.checklist_depth, 1),
        checklist_width=_items(task.checklist_width, len(task.checklist_depth) + 1),
        n_items=len(task.checklist_depth) + len(task.checklist_width),
        answer_a=_answer_block("A", first),
        answer_b=_answer_block("B", second),
    )


async def _judge_once(
    client: ModelClient,
    role: str,
    task: Task,
    first: AnswerForJudge,
    second: AnswerForJudge,
    order: str,
) -> JudgedOrder:
    messages = [{"role": "user", "content": judge_prompt(task, first, second)}]
    items = [i.item for i in (*task.checklist_depth, *task.checklist_width)]
    value, completion = await complete_json(
        client, role, messages, judge_schema(len(items)), name="verdict"
    )
    return JudgedOrder(order, parse_judgment(value, items), completion.key)


async def judge_pair(
    client: ModelClient, role: str, task: Task, a: AnswerForJudge, b: AnswerForJudge
) -> PairJudgment:
    """Both orders concurrently; raises the model layer's DrarenaError if either fails."""
    ab, ba = await asyncio.gather(
        _judge_once(client, role, task, a, b, "AB"), _judge_once(client, role, task, b, a, "BA")
    )
    return PairJudgment(ab, ba, reconcile(ab.raw.judgment, ba.raw.judgment.swapped()))
