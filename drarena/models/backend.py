"""Backends: the one place a model call leaves the process.

Why a seam here: the client (retries, cache, accounting) is the same for every backend; the
real one goes through litellm to any OpenAI-compatible server (vLLM on a GPU or the CPU),
and a scripted one exists only for control-flow unit tests.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, Protocol

from drarena.models import direct
from drarena.models.direct import DirectChat
from drarena.models.jsonbytes import without_lone_surrogates
from drarena.models.types import ToolCall


@dataclasses.dataclass(frozen=True, slots=True)
class BackendReply:
    """What a backend returns for one successful call."""

    model: str
    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


class TransientModelError(Exception):
    """A failure worth retrying (backends other than litellm raise it to say so)."""


class Backend(Protocol):
    async def complete(self, request: Mapping[str, Any]) -> BackendReply:
        """Send one chat completion; `request` holds model, messages, sampling, transport."""
        ...

    def is_retriable(self, exc: BaseException) -> bool: ...


def _import_litellm() -> Any:
    # Never fetch the price list from the network (frozen mode forbids it anyway).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LiteLLMBackend:
    """Every real model call: litellm.acompletion with its own retries turned off, or, where
    litellm would only forward the request to a self-hosted OpenAI-compatible server, the
    same request posted directly (drarena.models.direct: same replies, a fraction of the CPU).
    `direct=False` sends every call through litellm."""

    def __init__(self, *, direct: bool = True) -> None:
        self._litellm = _import_litellm()
        self._direct = DirectChat() if direct else None
        lt = self._litellm
        self._retriable: tuple[type[BaseException], ...] = (
            lt.RateLimitError,
            lt.Timeout,
            lt.APIConnectionError,
            lt.InternalServerError,
            lt.ServiceUnavailableError,
            lt.BadGatewayError,
            TimeoutError,
            ConnectionError,
            TransientModelError,
        )

    def is_retriable(self, exc: BaseException) -> bool:
        if isinstance(exc, self._retriable):
            return True
        status = getattr(exc, "status_code", None)
        return isinstance(status, int) and (status >= 500 or status in (408, 409, 429))

    async def complete(self, request: Mapping[str, Any]) -> BackendReply:
        model = str(request["model"])
        if self._direct is not None and direct.eligible(request):
            response = await self._direct.complete(request)
            cost = self._direct.cost(model, response)
        else:
            kwargs = dict(request)
            kwargs.setdefault("api_key", "EMPTY")
            response = await self._litellm.acompletion(num_retries=0, max_retries=0, **kwargs)
            hidden = getattr(response, "_hidden_params", None) or {}
            cost = hidden.get("response_cost")
        if not response.choices:  # a 200 that is no completion (a proxy's, an overloaded server's)
            raise TransientModelError(f"the server answered without a choice (model {model})")
        choice = response.choices[0]
        message = choice.message
        usage = getattr(response, "usage", None)
        reply = BackendReply(
            model=str(response.model or model),
            text=str(message.content or ""),
            tool_calls=direct.tool_calls_of(message),
            finish_reason=str(choice.finish_reason or ""),
            prompt_tokens=token_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=token_count(getattr(usage, "completion_tokens", 0)),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
        )
        return _utf8_safe(reply)


MAX_TOKEN_COUNT = 2**53 - 1  # beyond it a count is no count (and not exact in a JSON double)


def token_count(value: Any) -> int:
    """A server's usage figure as recorded: a whole number from 0 to MAX_TOKEN_COUNT, else 0,
    as for a server that reports none. A count of 10**30, -5, 1.5, NaN or "many" is no
    count: recorded as given it would swamp a run's token totals and per-agent budgets."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not value.is_integer():  # NaN and infinities too
        return 0
    return int(value) if 0 <= value <= MAX_TOKEN_COUNT else 0


def _utf8_safe(reply: BackendReply) -> BackendReply:
    """`reply` with any lone surrogate (a server's "\\ud800" escape, which json.loads keeps)
    replaced by U+FFFD: such a string has no UTF-8 bytes, so the answer, the match log and
    the cache could not be written. Checked once per reply; rebuilt only when it fails."""
    texts = [reply.model, reply.text, reply.finish_reason]
    texts += [part for call in reply.tool_calls for part in (call.id, call.name, call.arguments)]
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        clean = without_lone_surrogates
        calls = tuple(
            ToolCall(id=clean(c.id), name=clean(c.name), arguments=clean(c.arguments))
            for c in reply.tool_calls
        )
        return dataclasses.replace(
            reply,
            model=clean(reply.model),
            text=clean(reply.text),
            finish_reason=clean(reply.finish_reason),
            tool_calls=calls,
        )
    return reply
