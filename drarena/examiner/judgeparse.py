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
    to generate, and constrained decoding cannot skip or invent an item."""
    checks = {
        "type": "array",
        "items": {"type": "boolean"},
        "minItems": n_items,
        "maxItems": n_items,
    }
    return {
        "type": "object",
        "properties": {
            "checklist_a": checks,
            "checklist_b": checks,
            "verdict": {"type": "string", "enum": [v.value for v in Verdict]},
            "tie_quality": {"type": "string", "enum": ["HIGH", "LOW", "NA"]},
            "loser_failure_type": {"type": "string", "enum": [f.value for f in FailureType]},
            "reasoning": {"type": "string", "maxLength": REASONING_MAX_CHARS},
        },
        "required": [
            "checklist_a",
            "checklist_b",
            "verdict",
            "tie_quality",
            "loser_failure_type",
            "reasoning",
        ],
        "additionalProperties": False,
    }


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

    Ties without a quality count LOW; a winner's tie_quality is dropped; a tie's failure
    type is NONE whatever was written, because a tie has no loser.
    """
    try:
        verdict = Verdict(obj["verdict"])
        failure = FailureType(obj["loser_failure_type"])
    except (KeyError, ValueError) as exc:
        raise JudgeOutputError(f"judge output has no valid verdict: {exc}") from None
    quality: TieQuality | None = None
    if verdict == Verdict.TIE:
        quality = TieQuality.HIGH if obj.get("tie_quality") == "HIGH" else TieQuality.LOW
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
