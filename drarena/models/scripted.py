"""A scripted backend for control-flow unit tests only (retries, cache, repair loops).

It is never registered for the main job and says so in its name: results that come from it
say nothing about any model. Integration tests use the real CPU vLLM server instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from drarena.models.backend import BackendReply, TransientModelError
from drarena.models.types import ToolCall

Step = BackendReply | BaseException | Callable[[Mapping[str, Any]], BackendReply]


def reply(
    text: str = "",
    *,
    tool_calls: tuple[ToolCall, ...] = (),
    model: str = "scripted",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> BackendReply:
    return BackendReply(
        model=model,
        text=text,
        tool_calls=tool_calls,
        finish_reason="tool_calls" if tool_calls else "stop",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=None,
    )


class ScriptedBackendForTests:
    """Plays `steps` in order: a reply is returned, an exception raised, a callable called."""

    def __init__(self, steps: Iterable[Step]) -> None:
        self._steps = list(steps)
        self.requests: list[Mapping[str, Any]] = []

    def is_retriable(self, exc: BaseException) -> bool:
        return isinstance(exc, TransientModelError | TimeoutError | ConnectionError)

    async def complete(self, request: Mapping[str, Any]) -> BackendReply:
        self.requests.append(request)
        if not self._steps:
            raise AssertionError(
                f"ScriptedBackendForTests: script exhausted at call {len(self.requests)}"
            )
        step = self._steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step(request)
        return step
