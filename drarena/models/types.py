"""Frozen records the model layer hands to its callers (agents, Examiner, run header)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class ToolCall(Record):
    """A tool call as the model emitted it; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        return json.loads(self.arguments)

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Completion(Record):
    """One model answer. `cached` says it came from the record/replay cache (no model call);
    then `latency_s` is the time the lookup took."""

    role: str
    model: str
    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cost_usd: float | None
    cached: bool
    key: str

    @property
    def content(self) -> dict[str, Any]:
        """What the cache stores and replays: the model's output, not how it was obtained."""
        return {
            "text": self.text,
            "tool_calls": [t.to_dict() for t in self.tool_calls],
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "cost_usd": self.cost_usd,
        }

    def assistant_message(self) -> dict[str, Any]:
        """The message to append to the conversation to continue it."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [t.to_message() for t in self.tool_calls]
        return message

    @classmethod
    def from_content(
        cls, content: dict[str, Any], *, role: str, key: str, cached: bool, latency_s: float
    ) -> Completion:
        return cls(
            role=role,
            model=str(content["model"]),
            text=str(content["text"]),
            tool_calls=tuple(ToolCall.from_dict(t) for t in content["tool_calls"]),
            finish_reason=str(content["finish_reason"]),
            prompt_tokens=int(content["prompt_tokens"]),
            completion_tokens=int(content["completion_tokens"]),
            latency_s=latency_s,
            cost_usd=content.get("cost_usd"),
            cached=cached,
            key=key,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class RoleUsage(Record):
    """Per-role totals for the run header."""

    role: str
    calls: int = 0
    cached_calls: int = 0
    model_calls: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cost_unknown_calls: int = 0
