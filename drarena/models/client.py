"""The model client: every agent and Examiner call goes through `ModelClient.complete`.

Why one chokepoint: roles, the concurrency limit, retries with backoff, the record/replay
cache and per-role token/latency/cost accounting must apply to every call, or a tournament
is neither reproducible nor accountable. Clock, sleep and randomness are injectable so the
retry schedule is tested without waiting.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from drarena.errors import DrarenaError
from drarena.models.backend import Backend, BackendReply
from drarena.models.cache import CallCache, request_key
from drarena.models.config import CacheMode, ModelRole, ModelsConfig
from drarena.models.jsonbytes import without_lone_surrogates
from drarena.models.types import Completion, RoleUsage

log = logging.getLogger("drarena.models")


class ModelCallError(DrarenaError):
    """A call that failed for good: names the role, the endpoint and the last failure."""


class ReplayMissError(DrarenaError):
    """Replay mode met a call the cache does not hold."""


_TRACEBACK = "Traceback (most recent call last):"


def _without_traceback(text: str) -> str:
    """`text` with a Python traceback pasted into it (litellm puts one in the message of an
    "Invalid response object") reduced to the exception it ends in and that exception's own
    lines: the frames, the source lines and what follows (litellm's dump of the reply, its
    arguments) say nothing to the reader of a run's error."""
    head, found, rest = text.partition(_TRACEBACK)
    if not found:
        return text
    lines = rest.splitlines()
    start = next((i for i, line in enumerate(lines) if line and not line[0].isspace()), None)
    if start is None:
        return head
    kept = []
    for line in lines[start:]:
        if not line.strip():
            break
        if not line.lstrip().startswith("For further information visit"):
            kept.append(line)
    return f"{head.rstrip()} ({' '.join(kept)})"


def _brief(exc: BaseException, limit: int = 300) -> str:
    text = without_lone_surrogates(_without_traceback(str(exc)))
    text = " ".join(text.split()) or "(no message)"
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}"


def _preview(messages: Sequence[Mapping[str, Any]], limit: int = 80) -> str:
    if not messages:
        return "(no messages)"
    content = " ".join(str(messages[-1].get("content") or "").split())
    return content if len(content) <= limit else content[: limit - 3] + "..."


@dataclasses.dataclass(frozen=True, slots=True)
class _Call:
    """What a call asks, as keyed and sent: one value to pass, not four."""

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] | None
    tool_choice: Any
    response_format: Mapping[str, Any] | None


def _keyed(model: str, sampling: Mapping[str, Any], call: _Call) -> tuple[_Call, str]:
    """The call and its cache key; a call holding a lone surrogate (no UTF-8 bytes to hash)
    comes back with it replaced by U+FFFD, sent and keyed so."""
    for attempt in (1, 2):
        try:
            key = request_key(
                model=model,
                messages=call.messages,
                sampling=sampling,
                tools=call.tools,
                tool_choice=call.tool_choice,
                response_format=call.response_format,
            )
            break
        except UnicodeEncodeError:  # a lone surrogate: sent (and keyed) as U+FFFD instead
            if attempt == 2:
                raise
            call = dataclasses.replace(
                call,
                messages=without_lone_surrogates(call.messages),
                tools=without_lone_surrogates(call.tools),
                response_format=without_lone_surrogates(call.response_format),
            )
    return call, key


def _request(spec: ModelRole, sampling: Mapping[str, Any], call: _Call) -> dict[str, Any]:
    """The backend request of a call, the same for every attempt (each attempt adds its
    endpoint: _call_with_retries chooses it)."""
    request: dict[str, Any] = {
        "model": spec.model,
        "messages": list(call.messages),
        **sampling,
        "timeout": spec.timeout_s,
    }
    # api_base is chosen per attempt in _call_with_retries (one of the role's endpoints).
    if spec.api_key_env:
        request["api_key"] = os.environ.get(spec.api_key_env, "")
    if call.tools:
        request["tools"] = list(call.tools)
    if call.tool_choice is not None:
        request["tool_choice"] = call.tool_choice
    if call.response_format is not None:
        request["response_format"] = dict(call.response_format)
    return request


class ModelClient:
    """Async calls by role, under one concurrency limit, with retries and a call cache."""

    def __init__(
        self,
        config: ModelsConfig,
        *,
        backend: Backend | None = None,
        cache: CallCache | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        if backend is None:
            from drarena.models.backend import LiteLLMBackend

            backend = LiteLLMBackend(direct=config.transport == "direct")
        self._backend = backend
        if cache is None and config.cache.mode is not CacheMode.OFF:
            assert config.cache.path is not None  # validated by CacheConfig
            cache = CallCache(config.cache.path, read_only=config.cache.mode is CacheMode.REPLAY)
        self._cache = cache
        self._mode = config.cache.mode if cache is not None else CacheMode.OFF
        self._clock = clock
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random(0)
        # the concurrency limit, one per event loop (see _gate)
        self._gates: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._usage: dict[str, RoleUsage] = {}
        self.model_calls = 0  # attempts that reached the backend, failed ones included
        self.replay_misses: list[str] = []  # replay: every call the cache lacked, in order
        # Calls in flight per endpoint URL, across roles (two roles may share a replica), and
        # attempts sent to each: the least-in-flight balancer reads the first, the run reads both.
        self._in_flight: dict[str, int] = {}
        self.endpoint_attempts: dict[str, int] = {}

    def _gate(self) -> asyncio.Semaphore:
        """The concurrency limit in the running event loop.

        Why one per loop: an asyncio.Semaphore binds to the first loop it makes a call wait in,
        and one client serves several `asyncio.run`s (the examiner check, then the tournament),
        so a single semaphore raised RuntimeError in the second loop as soon as calls queued.
        """
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            for old in [lp for lp in self._gates if lp.is_closed()]:  # loops gone since
                del self._gates[old]
            gate = self._gates[loop] = asyncio.Semaphore(self.config.concurrency)
        return gate

    def role(self, name: str) -> ModelRole:
        try:
            return self.config.roles[name]
        except KeyError:
            known = ", ".join(sorted(self.config.roles)) or "none"
            raise DrarenaError(f"models.roles: no role {name!r} (configured: {known})") from None

    def _cached(
        self, key: str, role: str, cached: bool, latency_s: Callable[[], float]
    ) -> Completion | None:
        """The stored answer under `key` as a Completion, or None; a stored entry without a
        field an answer needs is one line naming the cache (a DrarenaError, not KeyError)."""
        assert self._cache is not None
        hit = self._cache.get(key)
        if hit is None:
            return None
        try:
            return Completion.from_content(
                hit, role=role, key=key, cached=cached, latency_s=latency_s()
            )
        except (KeyError, TypeError, ValueError) as exc:
            problem = f"no {exc}" if isinstance(exc, KeyError) else " ".join(str(exc).split())
            raise DrarenaError(
                f"model cache {self._cache.path}: entry {key[:16]} is corrupt ({problem[:200]})"
            ) from None

    def usage(self) -> dict[str, RoleUsage]:
        """Per-role totals, sorted by role, for the run header."""
        return {name: self._usage[name] for name in sorted(self._usage)}

    def _add(self, role: str, **deltas: float) -> None:
        current = self._usage.get(role) or RoleUsage(role=role)
        changes = {k: getattr(current, k) + v for k, v in deltas.items()}
        self._usage[role] = dataclasses.replace(current, **changes)

    async def complete(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        spec = self.role(role)
        sampling = spec.sampling.as_params()
        call, key = _keyed(
            spec.model, sampling, _Call(messages, tools, tool_choice, response_format)
        )
        started = self._clock()
        if self._cache is not None:
            done = self._from_cache(key, role, spec, call.messages, started)
            if done is not None:
                return done
        request = _request(spec, sampling, call)
        reply = await self._call_with_retries(role, spec, request)
        completion = self._completion(role, key, reply, started)
        if self._cache is not None and self._mode is CacheMode.READ_WRITE:
            completion = self._store(key, role, spec.model, request, completion)
        self._add(
            role,
            calls=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            latency_s=completion.latency_s,
            cost_usd=reply.cost_usd or 0.0,
            cost_unknown_calls=int(reply.cost_usd is None),
        )
        return completion

    def _from_cache(
        self,
        key: str,
        role: str,
        spec: ModelRole,
        messages: Sequence[Mapping[str, Any]],
        started: float,
    ) -> Completion | None:
        """The cached answer (counted as a call), or None to call the model; in replay a miss
        or a damaged entry raises, and is listed in `replay_misses` first so the run knows of
        it even when a caller catches it."""
        try:
            done = self._cached(key, role, True, lambda: self._clock() - started)
        except DrarenaError as exc:  # a damaged entry: reported, never answered from
            if self._mode is CacheMode.REPLAY:
                self.replay_misses.append(str(exc))  # callers may catch it, as a miss
            raise
        if done is not None:
            self._add(role, calls=1, cached_calls=1)
            return done
        if self._mode is CacheMode.REPLAY:
            miss = (
                f"replay: no cached answer for role {role!r} ({spec.model}), key "
                f"{key[:16]}, last message {_preview(messages)!r}"
            )
            self.replay_misses.append(miss)  # callers may catch it; the run still knows
            raise ReplayMissError(miss)
        return None

    def _completion(self, role: str, key: str, reply: BackendReply, started: float) -> Completion:
        """The backend's reply as a Completion, its tool-call ids derived from the key.

        Why: servers draw tool-call ids at random (vLLM: chatcmpl-tool-<random>); the ids go
        back into the conversation and so into every later cache key. Ids derived from the
        request make a re-run of the same requests produce the same keys and records."""
        tool_calls = tuple(
            dataclasses.replace(call, id=f"call-{key[:16]}-{i}")
            for i, call in enumerate(reply.tool_calls)
        )
        return Completion(
            role=role,
            model=reply.model,
            text=reply.text,
            tool_calls=tool_calls,
            finish_reason=reply.finish_reason,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            latency_s=self._clock() - started,
            cost_usd=reply.cost_usd,
            cached=False,
            key=key,
        )

    def _store(
        self, key: str, role: str, model: str, request: Mapping[str, Any], completion: Completion
    ) -> Completion:
        """Record the answer (its request less timeout, endpoint and key); the answer to return.

        Why another answer may come back: a concurrent identical call stored its answer first;
        using that one makes this run return exactly what a replay of it will."""
        assert self._cache is not None
        stored = {k: v for k, v in request.items() if k not in ("timeout", "api_base", "api_key")}
        content = {**completion.content, "recorded_latency_s": completion.latency_s}
        if not self._cache.put(key, model, stored, content):
            latency = completion.latency_s
            first = self._cached(key, role, False, lambda: latency)
            if first is not None:
                return first
        return completion

    def _pick_endpoint(self, endpoints: Sequence[str], failed: str | None) -> str:
        """The endpoint with the fewest calls in flight; among equals, not the one whose
        attempt just failed, then the first listed.

        Why our own balancer rather than litellm.Router: it costs nothing per call (the Router
        took 2.2-2.6x the time of plain acompletion for 40 concurrent loopback calls here), its
        cooldowns and retries would overlap the client's own retry policy, and it is
        deterministic, so control-flow tests can say which endpoint gets which call. A retry
        goes to another replica than the one that failed unless that one is less busy.
        """
        return min(endpoints, key=lambda base: (self._in_flight.get(base, 0), base == failed))

    async def _call_with_retries(
        self, role: str, spec: ModelRole, request: Mapping[str, Any]
    ) -> BackendReply:
        policy = self.config.retry
        endpoints = spec.endpoints()
        endpoint = "the provider's default endpoint"
        failed: str | None = None
        for attempt in range(policy.max_attempts):
            async with self._gate():
                self.model_calls += 1
                self._add(role, model_calls=1)
                attempt_request = dict(request)
                if endpoints:
                    endpoint = self._pick_endpoint(endpoints, failed)
                    attempt_request["api_base"] = endpoint
                    self.endpoint_attempts[endpoint] = self.endpoint_attempts.get(endpoint, 0) + 1
                    self._in_flight[endpoint] = self._in_flight.get(endpoint, 0) + 1
                try:
                    return await self._backend.complete(attempt_request)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    failure = exc
                    failed = endpoint
                finally:
                    if endpoints:
                        self._in_flight[endpoint] -= 1
            retriable = self._backend.is_retriable(failure)
            if not retriable or attempt + 1 == policy.max_attempts:
                self._add(role, failures=1)
                why = f"after {attempt + 1} attempt(s)" if retriable else "(not retriable)"
                raise ModelCallError(
                    f"model call failed for role {role!r}: model {spec.model} at {endpoint} "
                    f"{why}; last failure: {_brief(failure)}"
                ) from failure
            delay = policy.delay(attempt, self._rng.random())
            log.warning(
                "role %s: %s; retry %d in %.2f s", role, _brief(failure, 120), attempt + 1, delay
            )
            self._add(role, retries=1)
            await self._sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")
