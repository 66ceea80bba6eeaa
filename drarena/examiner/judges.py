"""Judges as components: `match.judge: {kind, args}` through a registry, like agents.

Why: the judge decides every ranking, and users need to swap it (an LLM judge on a GPU, the
evidence judge on a CPU, both side by side) without touching the arena; a tournament round,
examiner-check, rejudge and drift-run all judge through `build_judge(spec).judge(...)`, so a
new judging rule is one class in one room. Plugins add kinds through the `drarena.judges`
entry-point group, or as `package.module:factory` in config (drarena.registry).

Built-in kinds:
- `pairwise`, `pointwise`, `both`: the LLM judge (drarena.examiner.judge) in that mode;
  args `prompt`, `orders`, `sees_checklist`.
- `evidence`: code grades each answer against the items' page evidence, no model call
  (drarena.examiner.evidence); args are its thresholds.
- `hybrid`: an LLM judge decides (args `llm`, default pairwise) and the evidence judge grades
  the same round alongside (args `evidence`); the report shows how far they agree.

A factory takes the spec's args as keywords and returns a Judge; its `spec` is the resolved
{kind, args} (every default filled), which run.json records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.evidence import EvidenceArgs, Grounding, judge_evidence
from drarena.examiner.judge import (
    AnswerForJudge,
    JudgeMode,
    JudgeOptions,
    PairJudgment,
    judge_answers,
    judge_panel,
)
from drarena.examiner.taskcheck import Task
from drarena.models.client import ModelClient
from drarena.registry import ComponentSpec, Registry, RegistryError, parse_args


@dataclasses.dataclass(frozen=True)
class JudgeCall:
    """What one judging of one round is given besides the task and the answers: the model
    client and role (a tuple of roles: a judge panel, `match.judges`), whether a one-order
    LLM judge shows the answers swapped, and the grounding the evidence judge reads."""

    client: ModelClient | None = None
    role: str | tuple[str, ...] = "judge"
    swap: bool = False
    grounding: Grounding = dataclasses.field(default_factory=Grounding)


class Judge(Protocol):
    """A judging rule. `spec`: its resolved {kind, args}; `uses_model`: whether it calls a
    model (a judge panel needs one; the evidence judge does not); `template_specs`: the
    prompt templates it renders, by slot, for the run's prompt hashes."""

    @property
    def spec(self) -> ComponentSpec: ...

    @property
    def uses_model(self) -> bool: ...

    def template_specs(self) -> dict[str, str]: ...

    async def judge(
        self, call: JudgeCall, task: Task, a: AnswerForJudge, b: AnswerForJudge
    ) -> PairJudgment: ...


class LlmJudgeArgs(BaseModel):
    """The LLM judge's settings (`match.judge_prompt`, `judge_orders`,
    `judge_sees_checklist` in configs written before judges were components)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str = Field(
        templates.DEFAULT_PROMPTS["judge"],
        description="pairwise judge prompt: a name shipped in drarena/examiner/prompts/ "
        "(paper, checklist-first) or a file path; its sha256 goes into run.json",
    )
    orders: int = Field(
        2, ge=1, le=2, description="2: both orders reconciled; 1: one, A/B alternating"
    )
    sees_checklist: bool = Field(True, description="false: the paper's no-checklist ablation")

    @field_validator("prompt")
    @classmethod
    def _prompt_exists(cls, spec: str) -> str:
        return templates.check_spec(spec, "judge")


@dataclasses.dataclass(frozen=True)
class LlmJudge:
    """An LLM judge in one mode (pairwise, pointwise, both)."""

    mode: JudgeMode
    args: LlmJudgeArgs

    @property
    def spec(self) -> ComponentSpec:
        return ComponentSpec(kind=self.mode.value, args=self.args.model_dump())

    @property
    def uses_model(self) -> bool:
        return True

    def options(self, swap: bool = False) -> JudgeOptions:
        return JudgeOptions(
            prompt=self.args.prompt,
            mode=self.mode,
            orders=self.args.orders,
            sees_checklist=self.args.sees_checklist,
            swap=self.args.orders == 1 and swap,
        )

    def template_specs(self) -> dict[str, str]:
        return self.options().template_specs()

    async def judge(
        self, call: JudgeCall, task: Task, a: AnswerForJudge, b: AnswerForJudge
    ) -> PairJudgment:
        if call.client is None:
            raise DrarenaError(f"judge {self.mode.value}: no model client configured")
        options = self.options(call.swap)
        if isinstance(call.role, tuple):
            return await judge_panel(call.client, call.role, task, a, b, options)
        return await judge_answers(call.client, call.role, task, a, b, options)


@dataclasses.dataclass(frozen=True)
class EvidenceJudge:
    """Code against the pages' words (drarena.examiner.evidence): no model call."""

    args: EvidenceArgs

    @property
    def spec(self) -> ComponentSpec:
        return ComponentSpec(kind="evidence", args=self.args.model_dump())

    @property
    def uses_model(self) -> bool:
        return False

    def template_specs(self) -> dict[str, str]:
        return {}

    async def judge(
        self, call: JudgeCall, task: Task, a: AnswerForJudge, b: AnswerForJudge
    ) -> PairJudgment:
        graded = judge_evidence(
            task, (a.report, a.urls), (b.report, b.urls), call.grounding, self.args
        )
        return PairJudgment(None, None, graded.derived, evidence=graded)


class HybridArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    llm: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(kind="pairwise"),
        description="the LLM judge that decides: {kind: pairwise|pointwise|both, args}",
    )
    evidence: EvidenceArgs = Field(
        default_factory=EvidenceArgs, description="the evidence judge's thresholds"
    )


@dataclasses.dataclass(frozen=True)
class HybridJudge:
    """The LLM judge decides; the evidence judge grades the same round alongside, so every
    LLM verdict has a second opinion from the pages (drarena.ledger.hybrid measures how
    often they agree)."""

    llm: LlmJudge
    evidence: EvidenceJudge

    @property
    def spec(self) -> ComponentSpec:
        return ComponentSpec(
            kind="hybrid",
            args={"llm": self.llm.spec.model_dump(), "evidence": self.evidence.args.model_dump()},
        )

    @property
    def uses_model(self) -> bool:
        return True

    def template_specs(self) -> dict[str, str]:
        return self.llm.template_specs()

    async def judge(
        self, call: JudgeCall, task: Task, a: AnswerForJudge, b: AnswerForJudge
    ) -> PairJudgment:
        decided = await self.llm.judge(call, task, a, b)
        second = await self.evidence.judge(call, task, a, b)
        return dataclasses.replace(decided, evidence=second.evidence)


JUDGES: Registry[Judge] = Registry("judge", group="drarena.judges")
JUDGES.register("pairwise", "drarena.examiner.judges:build_pairwise", {"model"})
JUDGES.register("pointwise", "drarena.examiner.judges:build_pointwise", {"model"})
JUDGES.register("both", "drarena.examiner.judges:build_both", {"model"})
JUDGES.register("evidence", "drarena.examiner.judges:build_evidence", {"evidence"})
JUDGES.register("hybrid", "drarena.examiner.judges:build_hybrid", {"model", "evidence"})

LLM_KINDS = tuple(m.value for m in JudgeMode)


def reads_evidence(judge: Judge) -> bool:
    """Whether `judge` reads Grounding (the snapshot's term statistics and the round's
    pages): a kind registered with the trait "evidence", or a judge whose
    `reads_evidence` attribute says so (a plugin given as `package.module:factory`)."""
    return "evidence" in JUDGES.traits(judge.spec.kind) or bool(
        getattr(judge, "reads_evidence", False)
    )


def _llm(mode: JudgeMode, args: Mapping[str, Any]) -> LlmJudge:
    return LlmJudge(mode, parse_args(LlmJudgeArgs, dict(args), f"judge {mode.value}"))


def build_pairwise(**args: Any) -> LlmJudge:
    return _llm(JudgeMode.PAIRWISE, args)


def build_pointwise(**args: Any) -> LlmJudge:
    return _llm(JudgeMode.POINTWISE, args)


def build_both(**args: Any) -> LlmJudge:
    return _llm(JudgeMode.BOTH, args)


def build_evidence(**args: Any) -> EvidenceJudge:
    return EvidenceJudge(parse_args(EvidenceArgs, dict(args), "judge evidence"))


def build_hybrid(**args: Any) -> HybridJudge:
    parsed = parse_args(HybridArgs, dict(args), "judge hybrid")
    if parsed.llm.kind not in LLM_KINDS:
        raise DrarenaError(
            f"judge hybrid: args.llm.kind {parsed.llm.kind!r} is not an LLM judge "
            f"(one of {', '.join(LLM_KINDS)})"
        )
    return HybridJudge(
        _llm(JudgeMode(parsed.llm.kind), parsed.llm.args), EvidenceJudge(parsed.evidence)
    )


def build_judge(spec: ComponentSpec | Mapping[str, Any]) -> Judge:
    """The judge of `spec`; an unknown kind or bad args is one DrarenaError line."""
    if not isinstance(spec, ComponentSpec):
        spec = ComponentSpec.model_validate(dict(spec))
    try:
        judge = JUDGES.build(spec)
    except RegistryError as exc:
        raise DrarenaError(str(exc)) from None
    for attr in ("spec", "judge", "template_specs"):
        if not hasattr(judge, attr):
            raise DrarenaError(f"judge kind {spec.kind!r}: its factory returned no judge ({attr})")
    return judge


def judge_kinds() -> list[str]:
    return JUDGES.kinds()
