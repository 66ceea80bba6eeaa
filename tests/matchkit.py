"""Small synthetic match records for the analysis, style and report tests (hand-built: every
field a test reads is set here, so the expected figures can be worked out by hand)."""

from __future__ import annotations

from drarena.agents.base import Answer, Citation, CitationCheck, Trajectory
from drarena.examiner.evolve import MatchScore, Outcome
from drarena.examiner.judge import JudgedOrder, PairJudgment
from drarena.examiner.judgeparse import RawJudgment
from drarena.examiner.taskgen import TaskOutcome
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict, reconcile
from drarena.ledger.records import SCHEMA_VERSION, MatchRecord, RoundRecord


def answer(
    agent: str, report: str = "r", citations: int = 0, prompt: int = 90, completion: int = 10
) -> Answer:
    return Answer(
        agent=agent,
        report=report,
        citations=tuple(Citation(n, f"https://x/{n}", True, True) for n in range(1, citations + 1)),
        check=CitationCheck(cited=citations, valid=citations, checked=True),
        trajectory=Trajectory(),
        wall_s=0.0,
        model_s=0.0,
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


def judgment(
    ab: Verdict,
    ba_back: Verdict | None = None,
    failure: FailureType = FailureType.DEPTH,
    quality: TieQuality | None = None,
) -> PairJudgment:
    """Judged as (A, B) with `ab` and as (B, A) with a verdict that maps back to `ba_back`
    (default: the same as `ab`, i.e. position-consistent); reconciled as drarena does."""
    back = ab if ba_back is None else ba_back
    first = Judgment(ab, quality if ab == Verdict.TIE else None, failure)
    second_back = Judgment(back, quality if back == Verdict.TIE else None, failure)
    shown = second_back.swapped()  # what the judge said with B shown first
    return PairJudgment(
        JudgedOrder("AB", RawJudgment(first, (), (), ""), "k1"),
        JudgedOrder("BA", RawJudgment(shown, (), (), ""), "k2"),
        reconcile(first, second_back),
    )


def round_(
    index: int,
    a: Answer | None,
    b: Answer | None,
    pj: PairJudgment | None,
    depth: int = 1,
    width: int = 2,
    void: str = "",
) -> RoundRecord:
    return RoundRecord(
        index=index,
        node="n",
        depth=depth,
        width=width,
        target_urls=("u",),
        task=TaskOutcome(None, (), ()),
        answer_a=a,
        answer_b=b,
        judgment=pj,
        score=MatchScore(0, 0, 1, 0),
        transition=None,
        void_reason=void,
    )


def match(
    match_id: str, a: str, b: str, outcome: Outcome, rounds: tuple[RoundRecord, ...]
) -> MatchRecord:
    return MatchRecord(
        SCHEMA_VERSION,
        match_id,
        1,
        a,
        b,
        "t",
        0,
        rounds,
        MatchScore(0, 0, len(rounds), 0),
        outcome,
        "void: judge failed" if outcome == Outcome.VOID else "",
    )


def simple(
    match_id: str,
    a: str,
    b: str,
    outcome: Outcome,
    report_a: str = "r",
    report_b: str = "r",
    citations_a: int = 0,
    citations_b: int = 0,
) -> MatchRecord:
    """One judged round whose verdict follows the outcome (much better, or a low tie)."""
    verdict = {
        Outcome.A_WINS: Verdict.A_MUCH_BETTER,
        Outcome.B_WINS: Verdict.B_MUCH_BETTER,
        Outcome.TIE: Verdict.TIE,
    }[outcome]
    pj = judgment(verdict, quality=TieQuality.LOW)
    return match(
        match_id,
        a,
        b,
        outcome,
        (
            round_(
                0,
                answer(a, report_a, citations_a),
                answer(b, report_b, citations_b),
                pj,
            ),
        ),
    )
