"""The human audit's figures: how far people agree with the Examiner, and with each other
(pure; `run rank --json` and report.html's "Human audit" section show them).

Why these figures: "does the judge agree with people?" is the first question about any
LLM-judged leaderboard (DR-Arena reports kappa 0.91 between its Examiner and people). Every
person's latest label of a round (drarena.ledger.audit.latest) is paired with each judge's
verdict of that round:
- agreement and Cohen's kappa (drarena.ledger.agreement.measure: seeded bootstrap 95%
  intervals, n) on the 5-way verdict and on its direction (A / TIE / B), per judge: the
  round's own verdict ("examiner"), and where the run had more than one judge, the evidence
  judge beside the LLM ("evidence") and each panel member ("panel <role>"). n counts labels:
  a round two people labelled counts twice;
- between people, Krippendorff's alpha (nominal) over the rounds two or more people
  labelled, on the verdict and its direction, bootstrapped over rounds;
- checklist items: each item a person marked for each answer against the judge's marks
  (the LLM's own checklist in its (A, B) order, the evidence judge's verified items);
- the share of labels that found the question invalid (of those that said either way);
- the rounds of strongest disagreement: largest mean distance between people's signed
  verdicts (+2 .. -2) and the Examiner's, listed with their place in the log (the match
  viewer's anchors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drarena.examiner.judge import PairJudgment
from drarena.examiner.judgeparse import CheckResult
from drarena.examiner.verdicts import Verdict
from drarena.ledger.agreement import Agreement, bootstrap, collapse, krippendorff_alpha, measure
from drarena.ledger.audit import AuditLabel, RoundKey, latest
from drarena.ledger.records import MatchRecord
from drarena.records import Record

LISTED = 20  # rounds of strongest disagreement listed


@dataclasses.dataclass(frozen=True, slots=True)
class JudgeAgreement(Record):
    """People against one judge: on the 5-way verdict and on its direction."""

    judge: str
    verdict: Agreement
    direction: Agreement


@dataclasses.dataclass(frozen=True, slots=True)
class Alpha(Record):
    """Krippendorff's alpha between people on one kind of label, over `rounds` rounds."""

    what: str
    rounds: int
    alpha: float | None
    alpha_ci: tuple[float, float] | None


@dataclasses.dataclass(frozen=True, slots=True)
class AuditDisagreement(Record):
    """A round where people and the Examiner differ most. `match_index`: the match's place
    in the log (report.html's match viewer anchors it as m<match_index>r<round>)."""

    match_id: str
    match_index: int
    round: int
    a: str
    b: str
    examiner: str
    people: tuple[str, ...]
    distance: float


@dataclasses.dataclass(frozen=True, slots=True)
class HumanAudit(Record):
    """Every figure of the audit (module doc). `labels`: latest labels counted; `rounds`:
    rounds with at least one; `questions_rated`: labels that said whether the question is
    valid, `questions_invalid` of them said not."""

    labels: int
    rounds: int
    annotators: tuple[str, ...]
    judges: tuple[JudgeAgreement, ...]
    between_people: tuple[Alpha, ...]
    items: tuple[Agreement, ...]
    questions_rated: int
    questions_invalid: int
    invalid_share: float | None
    disagreements: tuple[AuditDisagreement, ...]


def judge_verdicts(j: PairJudgment) -> dict[str, Verdict]:
    """The verdicts of a round by judge name: "examiner" is the round's own; "evidence" when
    the evidence judge graded beside an LLM judge; "panel <role>" for each panel member."""
    out = {"examiner": j.reconciled.verdict}
    llm = j.ab is not None or j.ba is not None or j.pointwise is not None or j.panel is not None
    if j.evidence is not None and llm:
        out["evidence"] = j.evidence.derived.verdict
    for member in j.panel or ():
        out[f"panel {member.role}"] = member.judgment.reconciled.verdict
    return out


def judge_items(j: PairJudgment) -> dict[str, tuple[tuple[bool, ...], tuple[bool, ...]]]:
    """Each judge's checklist marks of a round, (answer A, answer B) in the run's order: the
    LLM's in its (A, B) judgment (else its (B, A) one, swapped back), the evidence judge's
    verified items."""
    out = {}
    if j.ab is not None:
        raw = j.ab.raw
        out["llm"] = (_passed(raw.checklist_a), _passed(raw.checklist_b))
    elif j.ba is not None:
        raw = j.ba.raw
        out["llm"] = (_passed(raw.checklist_b), _passed(raw.checklist_a))
    if j.evidence is not None:
        out["evidence"] = (
            tuple(i.verified for i in j.evidence.a.items),
            tuple(i.verified for i in j.evidence.b.items),
        )
    return {k: v for k, v in out.items() if v[0] or v[1]}


def _passed(results: Sequence[CheckResult]) -> tuple[bool, ...]:
    return tuple(c.passed for c in results)


def _alpha(what: str, units: list[list[str]], resamples: int, seed: int) -> Alpha:
    return Alpha(
        what,
        len(units),
        krippendorff_alpha(units),
        bootstrap(units, krippendorff_alpha, resamples=resamples, seed=seed),
    )


def human_audit(
    log: Sequence[MatchRecord], labels: Sequence[AuditLabel], *, resamples: int, seed: int
) -> HumanAudit | None:
    """The audit's figures from the run's log and its labels (file order; each person's
    latest label of a round counts); None when no label names a judged round of the log."""
    rounds: dict[RoundKey, tuple[int, MatchRecord, PairJudgment]] = {}
    for i, m in enumerate(log):
        for r in m.rounds:
            if r.judgment is not None and not r.void_reason:
                rounds[(m.match_id, r.index)] = (i, m, r.judgment)
    used = [lb for lb in latest(labels).values() if lb.key in rounds]
    if not used:
        return None
    used.sort(key=lambda lb: (lb.match_id, lb.round, lb.annotator))
    verdicts: dict[str, list[tuple[str, str]]] = {}
    items: dict[str, list[tuple[str, str]]] = {}
    by_round: dict[RoundKey, list[AuditLabel]] = {}
    for lb in used:
        _, _, j = rounds[lb.key]
        by_round.setdefault(lb.key, []).append(lb)
        for name, verdict in judge_verdicts(j).items():
            verdicts.setdefault(name, []).append((lb.verdict.value, verdict.value))
        for name, (marks_a, marks_b) in judge_items(j).items():
            for mine, theirs in ((lb.items_a, marks_a), (lb.items_b, marks_b)):
                if mine and len(mine) == len(theirs):
                    items.setdefault(name, []).extend(
                        (_yes(p), _yes(q)) for p, q in zip(mine, theirs, strict=True)
                    )
    judges = tuple(
        JudgeAgreement(
            name,
            measure("verdict (5-way)", pairs, resamples=resamples, seed=seed),
            measure(
                "direction (A/TIE/B)",
                [(collapse(p), collapse(q)) for p, q in pairs],
                resamples=resamples,
                seed=seed,
            ),
        )
        for name, pairs in sorted(verdicts.items(), key=lambda kv: (kv[0] != "examiner", kv[0]))
    )
    shared = [[lb.verdict.value for lb in group] for group in by_round.values() if len(group) > 1]
    directions = [[collapse(v) for v in unit] for unit in shared]
    between = (
        (
            _alpha("verdict (5-way)", shared, resamples, seed),
            _alpha("direction (A/TIE/B)", directions, resamples, seed),
        )
        if shared
        else ()
    )
    rated = [lb.question_valid for lb in used if lb.question_valid is not None]
    invalid = sum(1 for v in rated if not v)
    return HumanAudit(
        labels=len(used),
        rounds=len(by_round),
        annotators=tuple(sorted({lb.annotator for lb in used})),
        judges=judges,
        between_people=between,
        items=tuple(
            measure(f"checklist items ({name})", pairs, resamples=resamples, seed=seed)
            for name, pairs in sorted(items.items())
        ),
        questions_rated=len(rated),
        questions_invalid=invalid,
        invalid_share=invalid / len(rated) if rated else None,
        disagreements=_strongest(by_round, rounds),
    )


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _strongest(
    by_round: dict[RoundKey, list[AuditLabel]],
    rounds: dict[RoundKey, tuple[int, MatchRecord, PairJudgment]],
) -> tuple[AuditDisagreement, ...]:
    rows = []
    for key, group in by_round.items():
        index, m, j = rounds[key]
        examiner = j.reconciled.verdict
        distance = sum(abs(lb.verdict.signed - examiner.signed) for lb in group) / len(group)
        if distance > 0:
            people = tuple(lb.verdict.value for lb in group)
            rows.append(
                AuditDisagreement(
                    m.match_id, index, key[1], m.a, m.b, examiner.value, people, distance
                )
            )
    rows.sort(key=lambda d: (-d.distance, d.match_index, d.round))
    return tuple(rows[:LISTED])
