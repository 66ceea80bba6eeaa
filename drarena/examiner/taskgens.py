"""Task generators as components: `match.taskgen: {kind, args}` through a registry.

Why: how questions and checklists are made decides what a ranking measures, and it is the
part a small model does worst (issue 33). A tournament round and examiner-check make tasks
through `build_taskgen(spec).generate(...)`, so another generator is one class in this room;
plugins add kinds through the `drarena.taskgens` entry-point group.

Built-in kinds:
- `llm`: the Examiner writes the question and both checklists from the pages (the paper's
  way, drarena.examiner.taskgen); with `ground: true` (the default) every item is tied to the
  passage of its page that supports it and unsupported items are dropped
  (drarena.examiner.grounding).
- `extractive`: code picks the facts, the model writes only the question
  (drarena.examiner.extractive).

A generator's three arguments, TaskCall, TaskRequest and TaskRules, are defined in
drarena.examiner.taskgen (generate_task takes the same three) and importable from here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from drarena.corpus.records import TreePage
from drarena.errors import DrarenaError
from drarena.examiner import extractive, templates
from drarena.examiner.evolve import word_limit
from drarena.examiner.taskcheck import entity_names, forbidden_names
from drarena.examiner.taskgen import (
    TaskAttempt,
    TaskCall,
    TaskOutcome,
    TaskRequest,
    TaskRules,
    ask_until_valid,
    generate_task,
    topic_line,
    word_limit_instruction,
)
from drarena.registry import ComponentSpec, Registry, RegistryError, parse_args
from drarena.settle import gather_settled


class TaskGenerator(Protocol):
    @property
    def spec(self) -> ComponentSpec: ...

    def template_specs(self) -> dict[str, str]: ...

    async def generate(
        self, call: TaskCall, request: TaskRequest, rules: TaskRules
    ) -> TaskOutcome: ...


class LlmTaskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str = Field(
        templates.DEFAULT_PROMPTS["taskgen"],
        description="task prompt: a shipped name or a file path; its sha256 goes into run.json",
    )
    ground: bool = Field(
        True,
        description="tie every checklist item to the passage of its page that supports it "
        "and drop unsupported items (false: items as the model wrote them)",
    )

    @field_validator("prompt")
    @classmethod
    def _prompt_exists(cls, spec: str) -> str:
        return templates.check_spec(spec, "taskgen")


@dataclasses.dataclass(frozen=True)
class LlmTaskGen:
    args: LlmTaskArgs

    @property
    def spec(self) -> ComponentSpec:
        return ComponentSpec(kind="llm", args=self.args.model_dump())

    def template_specs(self) -> dict[str, str]:
        return {"taskgen": self.args.prompt}

    async def generate(self, call: TaskCall, request: TaskRequest, rules: TaskRules) -> TaskOutcome:
        return await generate_task(
            call,
            request,
            rules,
            prompt=self.args.prompt,
            ground=call.terms if self.args.ground else None,
        )


class ExtractiveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str = Field(
        "taskgen-extractive",
        description="the prompt for one fact's question (variables: root_topic, fact, "
        "forbidden, max_words): a shipped name or a file path",
    )
    substitutes: int = Field(
        1,
        ge=0,
        le=5,
        description="a fact whose question is refused on every try is replaced by the next "
        "best free sentence of the same page, asked again, up to this many times; 0: the "
        "task fails (the round is void). Why: some sentences cannot be asked about without "
        "stating them (the 1.5B demo voided 2 of 4 matches that way)",
    )

    identity: bool = Field(
        False,
        description="the first question at a node whose page has a heading '<name> — "
        "<description>' asks for the node's name by its description (the paper's masked "
        "depth entity), the name kept out of every part; width facts from the sibling pages "
        "(drarena.examiner.extractive, 'Identity')",
    )
    identity_prompt: str = Field(
        "taskgen-identity",
        description="the prompt for the identity question (the same variables as `prompt`; "
        "the fact is the heading's description)",
    )

    @field_validator("prompt", "identity_prompt")
    @classmethod
    def _prompt_exists(cls, spec: str) -> str:
        return templates.check_spec(spec)


@dataclasses.dataclass(frozen=True)
class _Asking:
    """What every fact's question of one task is asked with."""

    call: TaskCall
    targets: Sequence[TreePage]
    topic: str
    forbidden: tuple[str, ...]
    max_attempts: int
    hidden: str = ""


@dataclasses.dataclass(frozen=True)
class ExtractiveTaskGen:
    args: ExtractiveArgs

    @property
    def spec(self) -> ComponentSpec:
        return ComponentSpec(kind="extractive", args=self.args.model_dump())

    def template_specs(self) -> dict[str, str]:
        specs = {"taskgen": self.args.prompt}
        if self.args.identity:
            specs["taskgen_identity"] = self.args.identity_prompt
        return specs

    async def generate(self, call: TaskCall, request: TaskRequest, rules: TaskRules) -> TaskOutcome:
        """Nuggets by code, one question per fact by the model (concurrent calls), each
        checked; a refused question is asked again with the reason (rules.max_attempts per
        fact), as the llm kind does for its task."""
        if not request.targets:
            raise DrarenaError("extractive task: no target pages")
        nuggets = extractive.pick_nuggets(
            request.targets,
            call.terms,
            len(request.earlier_questions) if request.revisits is None else request.revisits,
            by_identity=self.args.identity,
        )
        kinds = {g.kind for g in nuggets}
        if kinds != {"depth", "width"}:
            return TaskOutcome(
                None, (), (), error="extractive task: the target pages hold no fact sentence"
            )
        limits = word_limit(len(request.targets), request.depth, root_counted=rules.root_counted)
        targets = request.targets
        forbidden = forbidden_names(
            [request.root.title, *(t.title for t in targets)],
            [request.root.url, *(t.url for t in targets)],
        )
        if rules.forbid_entity_names:
            forbidden += entity_names([t.title for t in targets], [t.url for t in targets])
        hidden = next((g.answer for g in nuggets if g.answer), "")
        forbidden += [hidden] if hidden else []
        asking = _Asking(
            call,
            request.targets,
            topic_line(request.root),
            tuple(forbidden),
            rules.max_attempts,
            hidden,
        )
        asked = await gather_settled(*(self._question(asking, g, nuggets) for g in nuggets))
        nuggets = list(nuggets)
        asked = [
            await self._substitute(asking, i, nuggets, got) if got[0] is None else got
            for i, got in enumerate(asked)
        ]
        attempts = tuple(a for _, tries, _ in asked for a in tries)
        failed = [f"fact {i}: {error}" for i, (q, _, error) in enumerate(asked, 1) if q is None]
        if failed:
            return TaskOutcome(None, attempts, (), error="; ".join(failed))
        task, reasons = extractive.build_task(
            [q for q, _, _ in asked if q is not None],
            nuggets,
            earlier=request.earlier_questions,
            word_limit=limits,
            word_limit_instruction=word_limit_instruction(limits),
        )
        if task is None:
            return TaskOutcome(None, attempts, (), error="; ".join(reasons))
        return TaskOutcome(task, attempts, ())

    async def _substitute(
        self,
        asking: _Asking,
        index: int,
        nuggets: list[extractive.Nugget],
        got: tuple[str | None, list[TaskAttempt], str],
    ) -> tuple[str | None, list[TaskAttempt], str]:
        """Fact `index` refused on every try: the next best free sentences of its page in
        its place (`nuggets` updated), one after another, up to `substitutes` of them. An
        identity whose question always said the name gives way to a sentence of its page,
        which may then be asked with the name (the 1.5B model named "queue" from "A
        synchronized ... class" twice, and its substitute was refused for naming it too)."""
        question, tries, error = got
        if nuggets[index].answer:
            hidden = asking.hidden
            asking = dataclasses.replace(
                asking, hidden="", forbidden=tuple(f for f in asking.forbidden if f != hidden)
            )
        refused = {nuggets[index].text}
        for _ in range(self.args.substitutes):
            taken = {g.text for g in nuggets} | refused
            sub = extractive.substitute(asking.targets, nuggets[index], taken, asking.call.terms)
            if sub is None:
                return question, tries, f"{error}; no other sentence of its page to ask"
            nuggets[index] = sub
            refused.add(sub.text)
            question, more, why = await self._question(asking, sub, nuggets)
            tries = [*tries, *more]
            error = f"{error}; its substitute: {why}"
            if question is not None:
                return question, tries, ""
        return question, tries, error

    async def _question(
        self,
        asking: _Asking,
        nugget: extractive.Nugget,
        nuggets: Sequence[extractive.Nugget],
    ) -> tuple[str | None, list[TaskAttempt], str]:
        """(the accepted question or None, the tries, why the last one was refused)."""
        prompt = self.args.identity_prompt if nugget.answer else self.args.prompt
        text = extractive.prompt_text(prompt, asking.topic, nugget, asking.forbidden)
        others = [g for g in nuggets if g is not nugget]
        call = asking.call

        def check(raw: dict[str, Any]) -> tuple[str | None, list[str]]:
            question = " ".join(str(raw.get("question", "")).split())
            reasons = extractive.check_part(
                question,
                nugget,
                others,
                forbidden=asking.forbidden,
                terms=call.terms,
                hidden=asking.hidden,
            )
            return (None if reasons else question), reasons

        return await ask_until_valid(
            call.client,
            call.role,
            text,
            extractive.question_schema(),
            "question",
            check,
            asking.max_attempts,
        )


TASKGENS: Registry[TaskGenerator] = Registry("task generator", group="drarena.taskgens")
TASKGENS.register("llm", "drarena.examiner.taskgens:build_llm")
TASKGENS.register("extractive", "drarena.examiner.taskgens:build_extractive")


def build_llm(**args: Any) -> LlmTaskGen:
    return LlmTaskGen(parse_args(LlmTaskArgs, dict(args), "taskgen llm"))


def build_extractive(**args: Any) -> ExtractiveTaskGen:
    return ExtractiveTaskGen(parse_args(ExtractiveArgs, dict(args), "taskgen extractive"))


def build_taskgen(spec: ComponentSpec | Mapping[str, Any]) -> TaskGenerator:
    """The task generator of `spec`; an unknown kind or bad args is one DrarenaError line."""
    if not isinstance(spec, ComponentSpec):
        spec = ComponentSpec.model_validate(dict(spec))
    try:
        gen = TASKGENS.build(spec)
    except RegistryError as exc:
        raise DrarenaError(str(exc)) from None
    for attr in ("spec", "generate", "template_specs"):
        if not hasattr(gen, attr):
            raise DrarenaError(
                f"taskgen kind {spec.kind!r}: its factory returned no task generator ({attr})"
            )
    return gen
