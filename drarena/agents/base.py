"""The Agent protocol and the frozen records an agent hands back.

Why records, not dicts: an Answer goes into matches.jsonl, the judge prompt and the report;
its trajectory (every model call's cache key, every tool call with the docids it returned) is
how a match is audited and replayed, so its shape is fixed and round-trips through JSON.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Protocol, runtime_checkable

from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class Turn(Record):
    """One earlier round of the conversation: the question and this agent's answer to it."""

    question: str
    answer: str


@dataclasses.dataclass(frozen=True, slots=True)
class SourcePage(Record):
    """A page given to the agent as evidence (the oracle's target pages)."""

    url: str
    title: str
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Conversation(Record):
    """The current question, the earlier rounds, and (for the oracle only) the target pages.

    Follow-up rounds continue the same conversation, so each agent sees its own earlier
    answers. `targets` is filled by the match loop; every agent except the oracle ignores it.
    """

    question: str
    history: tuple[Turn, ...] = ()
    targets: tuple[SourcePage, ...] = ()
    # how the agent is told to answer (drarena.agents.common.INSTRUCTIONS): the match's
    # `agent_instruction`; a built-in agent puts it after the question
    instruction: str = "drarena"

    def then(self, answer: str, question: str) -> Conversation:
        """The conversation for the next round, after `answer` to the current question."""
        return Conversation(
            question, (*self.history, Turn(self.question, answer)), self.targets, self.instruction
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ModelCall(Record):
    """One model call: its cache key (to replay it), tokens and latency."""

    key: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    finish_reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class ToolEvent(Record):
    """One tool call: raw arguments, the docids and URLs it returned, or its error."""

    _tuple_fields: ClassVar[tuple[str, ...]] = ("docids", "urls")

    id: str
    name: str
    arguments: str
    docids: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    error: str | None = None
    latency_s: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class Step(Record):
    """One turn of the agent loop: the model call (if any), the tools it ran, any error."""

    index: int
    model: ModelCall | None
    tools: tuple[ToolEvent, ...] = ()
    error: str | None = None
    note: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Trajectory(Record):
    steps: tuple[Step, ...] = ()

    def model_calls(self) -> list[ModelCall]:
        return [s.model for s in self.steps if s.model is not None]

    def tool_events(self) -> list[ToolEvent]:
        return [t for s in self.steps for t in s.tools]

    def errors(self) -> list[str]:
        out = [s.error for s in self.steps if s.error]
        out += [f"{t.name}: {t.error}" for t in self.tool_events() if t.error]
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class Citation(Record):
    """Marker [n] resolved to a URL; `valid` is None until checked against the snapshot."""

    n: int
    url: str
    in_report: bool
    valid: bool | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CitationCheck(Record):
    """Counts over distinct cited URLs; `unresolved` counts [n] markers with no URL."""

    _tuple_fields: ClassVar[tuple[str, ...]] = ("fabricated_urls",)

    cited: int = 0
    valid: int = 0
    fabricated: int = 0
    unresolved: int = 0
    checked: bool = False
    fabricated_urls: tuple[str, ...] = ()


# How an answer's `error` starts when a model call failed for good (after the client's
# retries): an outage, not the agent's doing, so the arena voids the round (never scores it).
MODEL_CALL_FAILED = "model call failed"


def model_call_error(exc: BaseException) -> str:
    """An answer's `error` for a model call that failed for good: it starts with
    MODEL_CALL_FAILED, once (the client's own message already does)."""
    text = str(exc)
    return text if text.startswith(MODEL_CALL_FAILED) else f"{MODEL_CALL_FAILED}: {text}"


@dataclasses.dataclass(frozen=True, slots=True)
class Answer(Record):
    """What an agent returns for one round."""

    agent: str
    report: str
    citations: tuple[Citation, ...]
    check: CitationCheck
    trajectory: Trajectory
    wall_s: float
    model_s: float
    prompt_tokens: int
    completion_tokens: int
    limit_hit: str | None = None
    error: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def model_call_failed(self) -> bool:
        """A model call failed for good while answering: whatever report there is was made
        without the model's last word (a fallback list of pages, an earlier reply)."""
        return (self.error or "").startswith(MODEL_CALL_FAILED)

    def cited_urls(self) -> list[str]:
        return list(dict.fromkeys(c.url for c in self.citations))


@runtime_checkable
class Agent(Protocol):
    """A candidate in the arena: answers the current question of a conversation."""

    name: str

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        """The report for `conversation.question`, between word_limit[0] and [1] words."""
        ...
