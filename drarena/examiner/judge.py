"""Judging a pair of answers: pairwise in one or both orders, pointwise, or both.

The answers are untrusted: they enter the prompt as quoted blocks, and the verdict is read
only from the judge's schema-valid JSON. In both orders (`orders: 2`, the default) the second
judgment sees the answers swapped and is mapped back to the match's order before
reconciliation. `judge_answers` is the one entry point (the round, examiner-check and
rejudge call it); `judge_pair` is its default: pairwise, both orders, the default prompt.
`judge_panel` has several judge roles judge the same pair and takes their majority
(drarena.examiner.panel).
"""

from __future__ import annotations

import dataclasses
import json
from enum import StrEnum
from typing import ClassVar

from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.evidence import EvidenceJudgment
from drarena.examiner.judgeparse import (
    RawJudgment,
    judge_fields,
    judge_schema,
    parse_judgment,
    parse_reference_judgment,
    reference_judge_schema,
)
from drarena.examiner.panel import majority
from drarena.examiner.pointwise import PointwiseJudgment, derive, grade_answer
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.examiner.verdicts import FailureType, Judgment, Verdict, reconcile
from drarena.models.client import ModelClient
from drarena.models.structured import complete_json
from drarena.quoting import quote_block
from drarena.records import Record
from drarena.settle import gather_settled


class JudgeMode(StrEnum):
    PAIRWISE = "pairwise"  # the paper: one prompt shows both answers
    POINTWISE = "pointwise"  # each answer graded alone, the verdict derived by code
    BOTH = "both"  # pointwise decides coverage; pairwise breaks its ties on presentation


@dataclasses.dataclass(frozen=True, slots=True)
class JudgeOptions(Record):
    """How to judge a pair. `prompt`: a shipped judge prompt's name or a file path (pairwise
    only); `orders`: 2 judges (A, B) and (B, A) and reconciles, 1 judges once, as (B, A) when
    `swap` (the caller alternates it; the paper swapped on odd trees); `sees_checklist`:
    False is the paper's ablation with no checklist shown to the pairwise judge."""

    prompt: str = templates.DEFAULT_PROMPTS["judge"]
    mode: JudgeMode = JudgeMode.PAIRWISE
    orders: int = 2
    sees_checklist: bool = True
    swap: bool = False

    def template_specs(self) -> dict[str, str]:
        """The judge templates these options use, by slot (for the run's prompt hashes)."""
        out = {}
        if self.mode != JudgeMode.POINTWISE:
            out["judge"] = self.prompt
        if self.mode != JudgeMode.PAIRWISE:
            out["pointwise"] = templates.POINTWISE_PROMPT
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerForJudge(Record):
    """What the judge sees of one answer: the report and its citation counts, and the cited
    URLs (the evidence judge checks that a cited page holds an item's evidence)."""

    report: str
    cited: int
    valid: int
    fabricated: int
    urls: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class JudgedOrder(Record):
    """One ordering's raw judgment, in that ordering's own A/B labels, with its call key."""

    order: str  # "AB" or "BA"
    raw: RawJudgment
    key: str


@dataclasses.dataclass(frozen=True, slots=True)
class PairJudgment(Record):
    """The judging of one round. `ab` / `ba`: the pairwise judgments made (both with
    `orders: 2`, one with `orders: 1`, none in pointwise mode); `pointwise`: the graded items
    when pointwise grading ran (absent from the JSON otherwise, so records written before it
    existed keep their bytes); `reconciled`: the round's verdict in the match's order.
    `panel`: with a judge panel (`match.judges`), every member's own judging, in the
    panel's order; the panel's judgment then has no orders of its own and `reconciled` is the
    members' majority (absent from the JSON for a single judge, as `pointwise`).
    `evidence`: the evidence judge's grades (drarena.examiner.evidence): the verdict itself
    for `judge: evidence`, the second opinion beside the LLM's for `hybrid`; absent
    otherwise."""

    _omit_if_none: ClassVar[tuple[str, ...]] = ("pointwise", "panel", "evidence")

    ab: JudgedOrder | None
    ba: JudgedOrder | None
    reconciled: Judgment
    pointwise: PointwiseJudgment | None = None
    panel: tuple[PanelMember, ...] | None = None
    evidence: EvidenceJudgment | None = None

    def orders(self) -> tuple[JudgedOrder, ...]:
        """The pairwise judgments made, (A, B) first."""
        return tuple(j for j in (self.ab, self.ba) if j is not None)


@dataclasses.dataclass(frozen=True, slots=True)
class PanelMember(Record):
    """One panel member's judging of a round: its model role and its judgment, as a single
    judge's would be recorded."""

    role: str
    judgment: PairJudgment


def _items(items: tuple[ChecklistItem, ...], first: int) -> str:
    return "\n".join(f"{n}. {i.item}" for n, i in enumerate(items, first))


def _answer_block(label: str, answer: AnswerForJudge) -> str:
    counts = (
        f"citations: {answer.cited} cited, {answer.valid} found in the archive, "
        f"{answer.fabricated} not found (fabricated)"
    )
    return quote_block(f"ANSWER {label}", f"({counts})\n\n{answer.report}")


def _reference_answer(label: str, answer: AnswerForJudge) -> str:
    """An answer as the reference shows it: its citation count alone (core/examiner.py
    137-138), no found or fabricated counts; quoted, as every answer drarena shows a judge."""
    return quote_block(f"ANSWER {label}", f"(Citation Count: {answer.cited})\n{answer.report}")


def reference_checklist(task: Task, shown: bool = True) -> str:
    """The checklist as the reference shows it: each list as JSON (core/examiner.py
    132-133); with the no-checklist ablation, both lists empty."""
    width = [i.item for i in task.checklist_width] if shown else []
    depth = [i.item for i in task.checklist_depth] if shown else []
    return (
        f"[WIDTH-Completeness]: {json.dumps(width, ensure_ascii=False)}\n"
        f"[DEPTH-Logic]: {json.dumps(depth, ensure_ascii=False)}"
    )


def checklist_block(task: Task, shown: bool = True) -> str:
    if not shown:
        return (
            "CHECKLIST: none is given. Judge the subjects and details from the question, "
            "your own knowledge and the answers' citations."
        )
    n = len(task.checklist_depth) + len(task.checklist_width)
    return (
        f"GROUND-TRUTH CHECKLIST ({n} items, numbered)\n"
        f"Depth (identity and logic):\n{_items(task.checklist_depth, 1)}\n"
        "Width (completeness of details):\n"
        f"{_items(task.checklist_width, len(task.checklist_depth) + 1)}"
    )


def judge_prompt(
    task: Task,
    first: AnswerForJudge,
    second: AnswerForJudge,
    prompt: str = templates.DEFAULT_PROMPTS["judge"],
    sees_checklist: bool = True,
) -> str:
    """The pairwise prompt with `first` as A. The v1 template ("judge", kept for replaying
    old runs) has its checklist and JSON description built in."""
    template = templates.resolve(prompt)
    if templates.reference_style(template):
        return templates.render_template(
            template,
            question=task.question,
            max_words=task.word_limit[1],
            checklist=reference_checklist(task, sees_checklist),
            answer_a=_reference_answer("A", first),
            answer_b=_reference_answer("B", second),
        )
    n_items = len(task.checklist_depth) + len(task.checklist_width)
    common = {
        "question": task.question,
        "word_limit_instruction": task.word_limit_instruction,
        "answer_a": _answer_block("A", first),
        "answer_b": _answer_block("B", second),
    }
    if prompt == templates.LEGACY_JUDGE_PROMPT:
        if not sees_checklist:
            raise DrarenaError("judge_prompt 'judge' (v1) always shows the checklist")
        return templates.render_template(
            template,
            **common,
            checklist_depth=_items(task.checklist_depth, 1),
            checklist_width=_items(task.checklist_width, len(task.checklist_depth) + 1),
            n_items=n_items,
        )
    return templates.render_template(
        template,
        **common,
        checklist=checklist_block(task, sees_checklist),
        fields=judge_fields(n_items if sees_checklist else 0),
    )


async def _judge_once(
    client: ModelClient,
    role: str,
    task: Task,
    first: AnswerForJudge,
    second: AnswerForJudge,
    order: str,
    options: JudgeOptions,
) -> JudgedOrder:
    prompt = judge_prompt(task, first, second, options.prompt, options.sees_checklist)
    if templates.reference_style(templates.resolve(options.prompt)):
        # the reference's system prompt and output (core/examiner.py 13, 16, 184-189)
        messages = [
            {"role": "system", "content": templates.REFERENCE_SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ]
        value, completion = await complete_json(
            client, role, messages, reference_judge_schema(), name="verdict"
        )
        return JudgedOrder(order, parse_reference_judgment(value), completion.key)
    messages = [{"role": "user", "content": prompt}]
    items = [i.item for i in (*task.checklist_depth, *task.checklist_width)]
    shown = items if options.sees_checklist else []
    value, completion = await complete_json(
        client, role, messages, judge_schema(len(shown)), name="verdict"
    )
    return JudgedOrder(order, parse_judgment(value, shown), completion.key)


async def _pairwise(
    client: ModelClient,
    role: str,
    task: Task,
    a: AnswerForJudge,
    b: AnswerForJudge,
    options: JudgeOptions,
) -> PairJudgment:
    if options.orders == 1:
        if options.swap:
            ba = await _judge_once(client, role, task, b, a, "BA", options)
            return PairJudgment(None, ba, ba.raw.judgment.swapped())
        ab = await _judge_once(client, role, task, a, b, "AB", options)
        return PairJudgment(ab, None, ab.raw.judgment)
    ab, ba = await gather_settled(
        _judge_once(client, role, task, a, b, "AB", options),
        _judge_once(client, role, task, b, a, "BA", options),
    )
    return PairJudgment(ab, ba, reconcile(ab.raw.judgment, ba.raw.judgment.swapped()))


def combine(coverage: Judgment, presentation: Judgment | None) -> Judgment:
    """`judge_mode: both` (pure): the pointwise verdict stands unless it is a tie; a tie is
    broken by the pairwise verdict, capped at BETTER (the answers cover the checklist
    equally, so only presentation separates them) with the loser's failure NONE."""
    if coverage.verdict != Verdict.TIE or presentation is None:
        return coverage
    signed = max(-1, min(1, presentation.verdict.signed))
    if signed == 0:
        return coverage
    return Judgment(Verdict.from_signed(signed), None, FailureType.NONE)


async def judge_answers(
    client: ModelClient,
    role: str,
    task: Task,
    a: AnswerForJudge,
    b: AnswerForJudge,
    options: JudgeOptions | None = None,
) -> PairJudgment:
    """Judge answers `a` and `b` to `task` as `options` say (default: pairwise, both
    orders, the default prompt). Raises DrarenaError when a judge call fails for good (the
    model layer's error) or the options name no usable prompt; the caller voids the round."""
    opts = options or JudgeOptions()
    if opts.orders not in (1, 2):
        raise DrarenaError(f"judge_orders must be 1 or 2, not {opts.orders}")
    if opts.mode == JudgeMode.PAIRWISE:
        return await _pairwise(client, role, task, a, b, opts)
    grades = await gather_settled(
        grade_answer(client, role, task, a.report), grade_answer(client, role, task, b.report)
    )
    graded = PointwiseJudgment(grades[0], grades[1], derive(grades[0], grades[1]))
    if opts.mode == JudgeMode.POINTWISE or graded.derived.verdict != Verdict.TIE:
        return PairJudgment(None, None, graded.derived, graded)
    pair = await _pairwise(client, role, task, a, b, opts)
    return PairJudgment(pair.ab, pair.ba, combine(graded.derived, pair.reconciled), graded)


async def judge_panel(
    client: ModelClient,
    roles: tuple[str, ...],
    task: Task,
    a: AnswerForJudge,
    b: AnswerForJudge,
    options: JudgeOptions | None = None,
) -> PairJudgment:
    """Every role in `roles` judges `a` and `b` as `options` say, concurrently; the round's
    judgment is their majority (drarena.examiner.panel), each member's judging kept in
    `panel`. All members run to the end and the first failure by position is raised
    (gather_settled), so a replay fails as the run did; one member failing for good fails
    the panel (the caller voids the round, as for a single judge)."""
    if not roles:
        raise DrarenaError("a judge panel needs at least one judge role")

    async def member(role: str) -> PanelMember:
        try:
            return PanelMember(role, await judge_answers(client, role, task, a, b, options))
        except DrarenaError as exc:
            raise DrarenaError(f"panel judge {role!r}: {exc}") from exc

    members = tuple(await gather_settled(*(member(r) for r in roles)))
    return PairJudgment(
        None, None, majority([m.judgment.reconciled for m in members]), None, members
    )


async def judge_pair(
    client: ModelClient, role: str, task: Task, a: AnswerForJudge, b: AnswerForJudge
) -> PairJudgment:
    """Both orders concurrently, the default prompt; raises the model layer's DrarenaError
    if either fails."""
    return await judge_answers(client, role, task, a, b, JudgeOptions())
