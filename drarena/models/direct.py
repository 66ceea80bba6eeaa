"""The direct path: a chat completion posted straight to a self-hosted OpenAI-compatible server.

Why: litellm's `acompletion` costs about 4-10 ms of CPU a call in this process (its logging
object, callbacks, a price lookup through the whole model map, the OpenAI SDK's client and
pydantic parse), while the HTTP exchange itself costs about 0.3 ms. A tournament against a GPU
cluster makes hundreds of calls a second from one drarena process, so litellm, not the GPUs,
became the limit (bench/bench_cluster.py: 128 agents on 16 replicas). For the calls where
litellm only forwards the request, this module sends the same JSON body on one aiohttp session
per event loop and reads the answer with litellm's own response converter, so a call returns
the same `BackendReply` (text, tool calls, finish reason, tokens, model, cost) as litellm's
path and fails with the same litellm exception classes and messages for HTTP errors. The body
is the same JSON value; one with a long message (a task prompt's ~30 KB) is written by
jsonbytes.request_body, which reuses what the cache key's encoding made of that text.

Eligible (`eligible`): the `openai/` provider with an explicit `api_base` (vLLM, llama.cpp or
SGLang behind an OpenAI-compatible route), a model name litellm treats as an unknown OpenAI
model (not in its catalog, not o-series or GPT-5: for those it rewrites parameters), only the
request keys the model client sends, message contents that are plain strings (no content parts
for litellm to rebuild) and tools without regex `pattern`s (litellm drops the ones Python
cannot compile). Everything else goes through litellm as before. tests/models/test_models_direct.py
sends each request shape both ways to one loopback server and compares the bodies received and
the replies (or errors) returned.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import types
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator, Mapping
from typing import Any

from drarena.models.jsonbytes import request_body
from drarena.models.types import ToolCall

# The keys ModelClient puts in a request; any other key sends the call through litellm.
REQUEST_KEYS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "top_p",
        "max_tokens",
        "seed",
        "stop",
        "tools",
        "tool_choice",
        "response_format",
        "timeout",
        "api_base",
        "api_key",
    }
)
# Sent as they are (the transport keys, and `model` without its provider, are handled apart).
BODY_KEYS = ("temperature", "top_p", "max_tokens", "seed", "stop", "tools", "response_format")
PREFIX = "openai/"
# The most bytes of one reply read before the call fails: a chat completion is kilobytes (a
# 32k-token answer with logprobs off is under 1 MiB), and an endpoint that streams without end
# must not take the process's memory with it. A larger reply fails as a server error (500),
# which ModelClient retries and then reports.
MAX_REPLY_BYTES = 32 * 1024 * 1024


@functools.lru_cache(maxsize=256)
def forwarded_model(model: str) -> bool:
    """litellm forwards this `openai/` model's parameters unchanged: its chat config for it is
    the one for unknown models (a proxy alias or a self-hosted model), not a catalog model's,
    an o-series or a GPT-5 one (those rename or drop parameters)."""
    from litellm.llms.openai.chat.gpt_transformation import OpenAIUnknownModelConfig
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    config = ProviderConfigManager.get_provider_chat_config(
        model=model, provider=LlmProviders.OPENAI
    )
    return type(config) is OpenAIUnknownModelConfig


def _has_pattern(value: Any) -> bool:
    if isinstance(value, dict):
        return "pattern" in value or any(_has_pattern(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_pattern(v) for v in value)
    return False


def eligible(request: Mapping[str, Any]) -> bool:
    """Whether litellm would only forward this request (see the module docstring)."""
    model = request.get("model")
    if not isinstance(model, str) or not model.startswith(PREFIX) or not request.get("api_base"):
        return False
    if not REQUEST_KEYS.issuperset(request):
        return False
    if not forwarded_model(model[len(PREFIX) :]):
        return False
    messages = request.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("content"), str | None) for m in messages
    ):
        return False
    return not _has_pattern(request.get("tools"))


def body_of(request: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body litellm sends for an eligible request: the model without its provider,
    the messages without their None-valued keys (an assistant turn with tool calls and
    `content: None`), the parameters as given; `tool_choice` only with tools (litellm drops it
    otherwise)."""
    messages = [
        m if None not in m.values() else {k: v for k, v in m.items() if v is not None}
        for m in request["messages"]
    ]
    body: dict[str, Any] = {"model": request["model"][len(PREFIX) :], "messages": messages}
    for key in BODY_KEYS:
        if key in request and request[key] is not None:
            body[key] = request[key]
    if request.get("tools") and request.get("tool_choice") is not None:
        body["tool_choice"] = request["tool_choice"]
    return body


def _error_message(status: int, raw: bytes) -> str:
    """The message litellm's OpenAI path reports for an HTTP error: the body's error.message
    (or the body's own message) when there is one, else only the status, as the OpenAI SDK
    and litellm word it."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else f"Error code: {status}"


def _litellm_error(model: str, status: int, message: str) -> Exception:
    """litellm's exception for an OpenAI-provider failure (class by status, same message),
    so retries (ModelClient) and error lines treat both paths alike."""
    from litellm.litellm_core_utils.exception_mapping_utils import exception_type
    from litellm.llms.openai.common_utils import OpenAIError

    try:
        exception_type(  # type: ignore[no-untyped-call,unused-ignore]
            model=model,
            original_exception=OpenAIError(status_code=status, message=message),
            custom_llm_provider="openai",
            completion_kwargs={},
            extra_kwargs={},
        )
    except Exception as mapped:
        return mapped
    return OpenAIError(status_code=status, message=message)  # pragma: no cover - it always raises


# Python 3.12+ starts tasks eagerly in the standard library (asyncio.eager_task_factory)
STDLIB_EAGER = hasattr(asyncio, "eager_task_factory")


def eager_body_writes(loop: asyncio.AbstractEventLoop) -> Callable[..., Any] | None:
    """On Python 3.11, make `loop` write each aiohttp request's body inside the call that
    sends it, as aiohttp itself does from Python 3.12; returns the task factory installed, or
    None where nothing was needed (3.12 and later) or the loop already has a factory (its
    owner's, left alone).

    Why: aiohttp writes a request's headers and body from a task of its own. From 3.12 it
    starts that task eagerly (`eager_start=True`), so the request leaves at once; on 3.11 the
    task waits for the event loop's next turn, behind everything already ready in this one.
    A tournament's requests come in bursts (a Swiss round's 64 task requests, the answers
    that 64 task replies call for), so every request of a burst left only when the whole
    burst had been prepared: with 128 agents on 16 simulated replicas
    (bench/bench_cluster.py) the server received a round's first request 60-80 ms after
    drarena had sent it, with the replicas idle. Only aiohttp's body writer is started early;
    every other coroutine becomes a task exactly as without a factory."""
    if sys.version_info >= (3, 12) or loop.get_task_factory() is not None:
        return None
    from aiohttp.client_reqrep import ClientRequest

    factory = functools.partial(_eager_task, ClientRequest.write_bytes.__code__)
    loop.set_task_factory(factory)
    return factory


def _eager_task(
    code: types.CodeType,
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any],
    **kwargs: Any,
) -> asyncio.Future[Any]:
    """A task factory (see eager_body_writes): a coroutine of `code` runs its first step
    now, in the caller's turn (an eager task); any other coroutine: `asyncio.Task`, as the
    loop makes it without a factory.

    Where the standard library has eager tasks (Python 3.12+: `asyncio.eager_task_factory`,
    `Task(eager_start=True)`), that coroutine's task is one of those. On 3.11 it is imitated:
    one that finishes in its first step is handed back as a finished future (aiohttp then
    drops it, as it drops an eager task that is done), one that waits (a paused transport)
    goes on as a task resumed with what it awaited. (The imitation resumes it through a
    generator-based coroutine, `_resumed`, which 3.12's Task refuses: "a coroutine was
    expected".)"""
    if getattr(coro, "cr_code", None) is not code:
        return asyncio.Task(coro, loop=loop, **kwargs)
    if STDLIB_EAGER:
        return asyncio.Task(coro, loop=loop, eager_start=True, **kwargs)  # type: ignore[call-arg,unused-ignore]
    done = loop.create_future()
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        done.set_result(stop.value)
        return done
    except asyncio.CancelledError:
        done.cancel()
        return done
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # observed like an eager task's: by whoever awaits it
        done.set_exception(exc)
        return done
    return asyncio.Task(_resumed(coro, yielded), loop=loop, **kwargs)


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Drive `coro` on from what its first step yielded, as its task would have: what the
    task sends or throws in (a cancellation) goes to `coro`, what `coro` yields goes to the
    task."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                yielded = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = coro.send(sent)
            except StopIteration as stop:
                return stop.value


class DirectChat:
    """Posts eligible requests on one aiohttp session per event loop.

    The session lives in an async generator parked at its `yield`: asyncio.run finalises
    every async generator before closing its loop (`shutdown_asyncgens`), which closes the
    session there, so no loop is left with an unclosed session and every asyncio.run of a
    run (the Examiner check, the tournament) gets its own."""

    def __init__(self) -> None:
        self._sessions: dict[asyncio.AbstractEventLoop, Any] = {}
        self._keepers: dict[asyncio.AbstractEventLoop, AsyncGenerator[Any, None]] = {}
        # (request model, response model) -> whether litellm prices it (None: not asked yet)
        self._priced: dict[tuple[str, str], bool] = {}
        # each URL posted to -> (proxy, proxy auth) from the environment, read once
        self._proxies: dict[str, tuple[Any, Any]] = {}

    async def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is not None and not session.closed:
            return session
        for old in [lp for lp in self._sessions if lp.is_closed()]:  # loops gone since
            self._sessions.pop(old, None)
            self._keepers.pop(old, None)
        keeper = self._keep()
        session = await keeper.__anext__()
        self._sessions[loop] = session
        self._keepers[loop] = keeper
        return session

    @staticmethod
    async def _keep() -> AsyncGenerator[Any, None]:
        import aiohttp

        loop = asyncio.get_running_loop()
        eager = eager_body_writes(loop)  # removed with the session, if still the loop's

        # no connection limit (ModelClient's semaphore is the limit). trust_env off: with it
        # aiohttp looks up the environment's proxy and ~/.netrc in a worker thread on every
        # request, two thread hand-offs a call that took 17% of the event loop's time with 128
        # agents on 16 replicas (bench/bench_cluster.py, sampled with py-spy). `_proxy_of`
        # reads the same environment once per endpoint instead.
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trust_env=False)
        try:
            yield session
        finally:
            await session.close()
            if eager is not None and loop.get_task_factory() is eager:
                loop.set_task_factory(None)

    async def complete(self, request: Mapping[str, Any]) -> Any:
        """The reply as litellm's ModelResponse (converted by litellm's own converter)."""
        import aiohttp
        from litellm import ModelResponse
        from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
            convert_to_model_response_object,
        )

        model = request["model"][len(PREFIX) :]
        url = str(request["api_base"]).rstrip("/") + "/chat/completions"
        headers = {
            "Authorization": f"Bearer {request.get('api_key') or 'EMPTY'}",
            "Content-Type": "application/json",
        }
        session = await self._session()
        timeout = aiohttp.ClientTimeout(total=float(request.get("timeout") or 600.0))
        proxy, proxy_auth = self._proxy_of(url)
        try:
            async with session.post(
                url,
                data=request_body(body_of(request)),
                headers=headers,
                timeout=timeout,
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as response:
                status = response.status
                raw = await _read_capped(response)
        except TimeoutError:
            raise _litellm_error(model, 408, "Request timed out.") from None
        except aiohttp.ClientError:
            raise _litellm_error(model, 500, "Connection error.") from None
        if raw is None:
            raise _litellm_error(
                model, 500, f"reply from {url} exceeds {MAX_REPLY_BYTES} bytes; not read further"
            )
        if status >= 400:
            raise _litellm_error(model, status, _error_message(status, raw))
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise _litellm_error(model, 500, str(exc)) from None
        return convert_to_model_response_object(
            response_object=parsed, model_response_object=ModelResponse()
        )

    def _proxy_of(self, url: str) -> tuple[Any, Any]:
        """The proxy (and its credentials) the environment names for url, as aiohttp's
        trust_env would pick it (HTTP(S)_PROXY, NO_PROXY, proxy credentials in ~/.netrc),
        looked up on the first call to that URL (an endpoint's, fixed for the run): the
        environment is read once per endpoint and backend, not per request; (None, None) is
        no proxy. The endpoint's own ~/.netrc login is not used: drarena sends its
        Authorization header, and aiohttp refuses a request that has both."""
        found = self._proxies.get(url)
        if found is None:
            from aiohttp.helpers import get_env_proxy_for_url
            from yarl import URL

            try:
                found = get_env_proxy_for_url(URL(url))
            except LookupError:
                found = (None, None)
            self._proxies[url] = found
        return found

    def cost(self, request_model: str, response: Any) -> float | None:
        """What litellm's cost calculator gives this reply: None for a model its price map
        does not know (the self-hosted case: asked once per request and response model), else
        litellm.completion_cost of it."""
        import litellm

        key = (request_model, str(response.model or ""))
        priced = self._priced.get(key)
        if priced is False:
            return None
        try:
            cost = litellm.completion_cost(completion_response=response, model=request_model)
        except Exception:
            cost = None
        self._priced[key] = cost is not None
        return float(cost) if isinstance(cost, int | float) else None


async def _read_capped(response: Any) -> bytes | None:
    """The reply's bytes, or None once they pass MAX_REPLY_BYTES (reading stops there)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def tool_calls_of(message: Any) -> tuple[ToolCall, ...]:
    """The message's tool calls as drarena's ToolCall (the same for both paths)."""
    return tuple(
        ToolCall(id=str(c.id), name=str(c.function.name), arguments=str(c.function.arguments or ""))
        for c in (message.tool_calls or ())
    )
