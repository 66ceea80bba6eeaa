"""The second opinion (drarena.ledger.second and report/second): the LLM judge's verdicts
against the evidence judge's on the same rounds, worked out by hand on built records."""

from __future__ import annotations

import dataclasses

from matchkit import answer, judgment, match, round_

from drarena.examiner.evidence import AnswerEvidence, EvidenceJudgment
from drarena.examiner.evolve import Outcome
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.ledger.second import second_opinion
from drarena.report.sections.second import second_opinion_section

NO_ITEMS = AnswerEvidence((), 0, 0.0, 0.0, 0, "")


def graded(verdict: Verdict) -> EvidenceJudgment:
    quality = TieQuality.LOW if verdict == Verdict.TIE else None
    return EvidenceJudgment(NO_ITEMS, NO_ITEMS, Judgment(verdict, quality, FailureType.NONE))


def hybrid_round(index: int, llm: Verdict, evidence: Verdict) -> object:
    pj = dataclasses.replace(judgment(llm, quality=TieQuality.LOW), evidence=graded(evidence))
    return round_(index, answer("x"), answer("y"), pj)


def test_agreement_of_the_llm_and_the_evidence() -> None:
    """Four rounds: two agree exactly, one agrees on the direction only, one disagrees."""
    rounds = (
        hybrid_round(0, Verdict.A_MUCH_BETTER, Verdict.A_MUCH_BETTER),
        hybrid_round(1, Verdict.B_BETTER, Verdict.B_BETTER),
        hybrid_round(2, Verdict.A_BETTER, Verdict.A_MUCH_BETTER),
        hybrid_round(3, Verdict.A_MUCH_BETTER, Verdict.B_MUCH_BETTER),
    )
    log = [match("m1", "x", "y", Outcome.A_WINS, rounds)]
    got = second_opinion(log, resamples=200, seed=0)
    assert got is not None
    assert got.rounds == 4
    assert got.verdict.agreement == 0.5 and got.direction.agreement == 0.75
    assert got.disagreeing == 1
    (d,) = got.listed
    assert (d.match_id, d.round, d.llm, d.evidence) == ("m1", 3, "A_MUCH_BETTER", "B_MUCH_BETTER")
    assert got.direction.kappa is not None and got.direction.kappa_ci is not None
    html = second_opinion_section(got)
    assert "Second opinion" in html and "m1 round 3 (x vs y)" in html


def test_no_second_opinion_without_both_judges() -> None:
    """An LLM-only run and an evidence-only run (no LLM orders) have nothing to compare."""
    llm_only = match(
        "m",
        "x",
        "y",
        Outcome.A_WINS,
        (round_(0, answer("x"), answer("y"), judgment(Verdict.A_BETTER)),),
    )
    evidence = graded(Verdict.A_BETTER)
    from drarena.examiner.judge import PairJudgment

    alone = PairJudgment(None, None, evidence.derived, evidence=evidence)
    evidence_only = match(
        "m", "x", "y", Outcome.A_WINS, (round_(0, answer("x"), answer("y"), alone),)
    )
    assert second_opinion([llm_only], resamples=10, seed=0) is None
    assert second_opinion([evidence_only], resamples=10, seed=0) is None
