"""The judge's structured output: its JSON Schema and the parser (pure).

The verdict is read only from the `verdict` field of schema-valid JSON, never by searching
free text for markers, so a '[[A_MUCH_BETTER]]' planted in an answer cannot become a verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.records import Record

REASONING_MAX_CHARS = 800


def judge_schema(n_items: int) -> dict[str, Any]:
    """The verdict JSON Schema for a task with `n_items` checklist items (depth, then width).

    Each answer's checklist result is a list of exactly n booleans, in checklist order: short
    to generate, and constrained decoding cannot skip or invent an item. With no checklist
    shown to the judge (n_items 0, the paper's ablation) the lists are left out."""
    checks = {
        "type": "array",
        "items": {"type": "boolean"},
        "minItems": n_items,
        "maxItems": n_items,
    }
    lists = {"checklist_a": checks, "checklist_b": checks} if n_items else {}
    properties = {
        **lists,
        "verdict": {"type": "string", "enum": [v.value for v in Verdict]},
        "tie_quality": {"type": "string", "enum": ["HIGH", "LOW", "NA"]},
        "loser_failure_type": {"type": "string", "enum": [f.value for f in FailureType]},
        "reasoning": {"type": "string", "maxLength": REASONING_MAX_CHARS},
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def judge_fields(n_items: int) -> str:
    """The JSON fields described in words for the prompt: no example object a model could
    copy as its answer (small models copied `[true, false]` verbatim; issue 15)."""
    lines = []
    if n_items:
        lines.append(
            f"- checklist_a: a list of exactly {n_items} booleans, one per checklist item in "
            "the numbered order; each is true only if answer A satisfies that item."
        )
        lines.append("- checklist_b: the same for answer B, judged on its own.")
    lines += [
        "- verdict: one of " + ", ".join(v.value for v in Verdict) + ".",
        "- tie_quality: HIGH or LOW for a TIE; NA when there is a winner.",
        "- loser_failure_type: DEPTH, WIDTH, BOTH or NONE (NONE for a tie).",
        f"- reasoning: at most {REASONING_MAX_CHARS} characters; first the subjects (depth) "
        "of both answers, then the details (width), then presentation.",
    ]
    return "\n".join(lines)


# The reference's output values (core/examiner.py 184-189) and drarena's for them.
REFERENCE_VERDICTS = {
    "[[A_MUCH_BETTER]]": Verdict.A_MUCH_BETTER,
    "[[A_BETTER]]": Verdict.A_BETTER,
    "[[Tie]]": Verdict.TIE,
    "[[B_BETTER]]": Verdict.B_BETTER,
    "[[B_MUCH_BETTER]]": Verdict.B_MUCH_BETTER,
}
REFERENCE_FAILURES = {
    "DEEP": FailureType.DEPTH,
    "WIDE": FailureType.WIDTH,
    "BOTH": FailureType.BOTH,
    "NONE": FailureType.NONE,
}


def reference_judge_schema() -> dict[str, Any]:
    """The JSON Schema of a reference-style judge prompt (the shipped "paper"): the
    reference's four fields in its own values; only `verdict` is required, as only a missing
    verdict fails the reference's parse (core/examiner.py 199-200); no per-item booleans and
    no length cap on the reasoning, so a long reasoning never voids a round."""
    return {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": list(REFERENCE_VERDICTS)},
            "tie_quality": {"type": "string", "enum": ["HIGH", "LOW", "N/A"]},
            "loser_failure_type": {"type": "string", "enum": list(REFERENCE_FAILURES)},
            "reasoning": {"type": "string"},
        },
        "required": ["verdict"],
        "additionalProperties": False,
    }


def parse_reference_judgment(obj: dict[str, Any]) -> RawJudgment:
    """A reference-style judgment: a missing `loser_failure_type` is NONE and a missing or
    "N/A" tie quality HIGH, as core/evolvement_loop.py 358-359 read them (only a stated LOW
    backs the walk off); a tie has no loser."""
    verdict = REFERENCE_VERDICTS.get(str(obj.get("verdict")))
    if verdict is None:
        raise JudgeOutputError(f"judge output has no valid verdict: {obj.get('verdict')!r}")
    failure = REFERENCE_FAILURES.get(str(obj.get("loser_failure_type", "NONE")), FailureType.NONE)
    quality: TieQuality | None = None
    if verdict == Verdict.TIE:
        quality = TieQuality.LOW if obj.get("tie_quality") == "LOW" else TieQuality.HIGH
        failure = FailureType.NONE
    return RawJudgment(Judgment(verdict, quality, failure), (), (), str(obj.get("reasoning", "")))


@dataclasses.dataclass(frozen=True, slots=True)
class CheckResult(Record):
    item: str
    passed: bool


@dataclasses.dataclass(frozen=True, slots=True)
class RawJudgment(Record):
    """What the judge said about one ordering, in that ordering's own A/B labels."""

    judgment: Judgment
    checklist_a: tuple[CheckResult, ...]
    checklist_b: tuple[CheckResult, ...]
    reasoning: str


class JudgeOutputError(ValueError):
    """Schema-valid JSON that still cannot be a judgment."""


def parse_judgment(obj: dict[str, Any], items: Sequence[str] = ()) -> RawJudgment:
    """Turn schema-validated judge JSON into a RawJudgment; `items` names the checklist
    entries the booleans refer to, in order.

    A tie counts HIGH unless the judge wrote LOW (a missing or NA quality is HIGH, as in the
    reference, core/evolvement_loop.py: only a stated low-quality tie backs the walk off);
    a winner's tie_quality is dropped; a tie's failure type is NONE whatever was written,
    because a tie has no loser.
    """
    try:
        verdict = Verdict(obj["verdict"])
        failure = FailureType(obj["loser_failure_type"])
    except (KeyError, ValueError) as exc:
        raise JudgeOutputError(f"judge output has no valid verdict: {exc}") from None
    quality: TieQuality | None = None
    if verdict == Verdict.TIE:
        quality = TieQuality.LOW if obj.get("tie_quality") == "LOW" else TieQuality.HIGH
        failure = FailureType.NONE
    checks = {
        side: tuple(
            CheckResult(item, bool(passed))
            for item, passed in zip(items, obj.get(f"checklist_{side}", []), strict=False)
        )
        for side in ("a", "b")
    }
    return RawJudgment(
        Judgment(verdict, quality, failure), checks["a"], checks["b"], str(obj.get("reasoning", ""))
    )
