"""Hand-built rounds and labels for the human audit's tests (drarena.ledger.audit,
.auditsample, .humanaudit; drarena.report.audit*): every round has a task with a checklist,
both answers and a judgment, so a person can label it, and every field a figure reads is set
here, so the expected figures can be worked out by hand."""

from __future__ import annotations

import dataclasses

from matchkit import answer, judgment, match, round_

from drarena.examiner.evolve import Outcome
from drarena.examiner.judge import JudgedOrder, PairJudgment
from drarena.examiner.judgeparse import CheckResult
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.examiner.taskgen import TaskOutcome
from drarena.examiner.verdicts import FailureType, TieQuality, Verdict
from drarena.ledger.audit import LABEL_SCHEMA_VERSION, AuditLabel
from drarena.ledger.records import MatchRecord, RoundRecord

ITEMS = 3  # checklist items of every task here: two depth, one width


def task(question: str = "Which module parses arguments?") -> Task:
    return Task(
        question=question,
        word_limit_instruction="Answer in 20 to 80 words.",
        word_limit=(20, 80),
        checklist_depth=(
            ChecklistItem("names argparse", "http://127.0.0.1:8765/a.html", "argparse parses"),
            ChecklistItem("names ArgumentParser", "http://127.0.0.1:8765/b.html"),
        ),
        checklist_width=(ChecklistItem("mentions add_argument", "http://127.0.0.1:8765/a.html"),),
        rationale="r",
    )


def with_marks(pj: PairJudgment, a: tuple[bool, ...], b: tuple[bool, ...]) -> PairJudgment:
    """The judgment with the LLM's (A, B) checklist marks set (its (B, A) order mirrored)."""
    names = [f"item {n}" for n in range(len(a))]

    def results(marks: tuple[bool, ...]) -> tuple[CheckResult, ...]:
        return tuple(CheckResult(n, m) for n, m in zip(names, marks, strict=True))

    assert pj.ab is not None and pj.ba is not None
    ab = JudgedOrder(
        "AB", dataclasses.replace(pj.ab.raw, checklist_a=results(a), checklist_b=results(b)), "k1"
    )
    ba = JudgedOrder(
        "BA", dataclasses.replace(pj.ba.raw, checklist_a=results(b), checklist_b=results(a)), "k2"
    )
    return dataclasses.replace(pj, ab=ab, ba=ba)


def audit_round(
    index: int,
    a: str,
    b: str,
    verdict: Verdict,
    depth: int = 1,
    report_a: str = "answer A",
    report_b: str = "answer B",
    marks: tuple[tuple[bool, ...], tuple[bool, ...]] = ((True, True, False), (False, True, True)),
) -> RoundRecord:
    quality = TieQuality.HIGH if verdict == Verdict.TIE else None
    failure = FailureType.NONE if verdict == Verdict.TIE else FailureType.DEPTH
    pj = with_marks(judgment(verdict, failure=failure, quality=quality), *marks)
    r = round_(index, answer(a, report_a, 2), answer(b, report_b, 1), pj, depth=depth)
    return dataclasses.replace(r, task=TaskOutcome(task(), (), ()))


def audit_log(verdicts: list[list[Verdict]], pairs: list[tuple[str, str]]) -> list[MatchRecord]:
    """One match per pair, its rounds judged with the listed verdicts (depth = index + 1)."""
    out = []
    for n, ((a, b), rounds) in enumerate(zip(pairs, verdicts, strict=True)):
        made = tuple(audit_round(i, a, b, v, depth=i + 1) for i, v in enumerate(rounds))
        out.append(match(f"m{n}-{a}-vs-{b}", a, b, Outcome.A_WINS, made))
    return out


def label(
    who: str,
    match_id: str,
    round_index: int,
    verdict: Verdict,
    *,
    shown: str = "AB",
    items_a: tuple[bool, ...] = (),
    items_b: tuple[bool, ...] = (),
    valid: bool | None = True,
    time: str = "2025-01-02T03:04:05+00:00",
    note: str = "",
) -> AuditLabel:
    return AuditLabel(
        schema_version=LABEL_SCHEMA_VERSION,
        annotator=who,
        time=time,
        match_id=match_id,
        round=round_index,
        shown=shown,
        verdict=verdict,
        tie_quality=TieQuality.HIGH if verdict == Verdict.TIE else None,
        loser_failure=FailureType.NONE if verdict == Verdict.TIE else FailureType.WIDTH,
        items_a=items_a,
        items_b=items_b,
        question_valid=valid,
        note=note,
    )
