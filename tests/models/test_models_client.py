"""Client control flow (retries, limits, accounting, config) on the scripted backend."""

from __future__ import annotations

import asyncio
import random

import pytest
from pydantic import ValidationError

from drarena.errors import DrarenaError
from drarena.models.backend import BackendReply, TransientModelError
from drarena.models.client import ModelCallError, ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy, Sampling
from drarena.models.scripted import ScriptedBackendForTests, reply

MESSAGES = [{"role": "user", "content": "hello"}]


def config(**kwargs: object) -> ModelsConfig:
    roles = {
        "examiner": ModelRole(model="openai/ex", api_base="http://127.0.0.1:9/v1"),
        "agent-a": ModelRole(
            model="openai/a", api_base="http://127.0.0.1:9/v1", sampling=Sampling(max_tokens=32)
        ),
    }
    return ModelsConfig.model_validate({"roles": roles, **kwargs})


async def test_retries_with_exponential_backoff_and_jitter_then_succeeds(fake_sleep) -> None:
    backend = ScriptedBackendForTests(
        [
            TransientModelError("503"),
            TimeoutError("slow"),
            ConnectionResetError("dropped"),
            reply("done"),
        ]
    )
    policy = RetryPolicy(max_attempts=4, base_delay_s=1.0, max_delay_s=3.0)
    client = ModelClient(
        config(retry=policy), backend=backend, sleep=fake_sleep, rng=random.Random(7)
    )
    result = await client.complete("examiner", MESSAGES)
    assert result.text == "done" and not result.cached
    draws = random.Random(7)
    expected = [policy.delay(i, draws.random()) for i in range(3)]
    assert fake_sleep.delays == pytest.approx(expected)
    # caps: 1, 2, 3 (capped at max_delay_s, not 4)
    assert [d <= c for d, c in zip(fake_sleep.delays, [1.0, 2.0, 3.0], strict=True)] == [True] * 3
    assert client.model_calls == 4
    usage = client.usage()["examiner"]
    assert (usage.calls, usage.model_calls, usage.retries, usage.failures) == (1, 4, 3, 0)


def test_backoff_delay_is_exponential_and_capped() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=4.0)
    assert [policy.delay(i, 1.0) for i in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert policy.delay(3, 0.25) == 1.0


async def test_gives_up_after_max_attempts_with_one_clear_error(fake_sleep) -> None:
    backend = ScriptedBackendForTests([TransientModelError(f"503 number {i}") for i in range(3)])
    client = ModelClient(
        config(retry=RetryPolicy(max_attempts=3)), backend=backend, sleep=fake_sleep
    )
    with pytest.raises(ModelCallError) as info:
        await client.complete("agent-a", MESSAGES)
    message = str(info.value)
    assert "'agent-a'" in message and "openai/a" in message
    assert "http://127.0.0.1:9/v1" in message and "after 3 attempt(s)" in message
    assert "503 number 2" in message  # the last failure, not the first
    assert len(fake_sleep.delays) == 2
    assert client.usage()["agent-a"].failures == 1


async def test_non_retriable_error_fails_at_once(fake_sleep) -> None:
    backend = ScriptedBackendForTests([ValueError("bad request"), reply("never")])
    client = ModelClient(config(), backend=backend, sleep=fake_sleep)
    with pytest.raises(ModelCallError, match=r"not retriable.*ValueError: bad request"):
        await client.complete("examiner", MESSAGES)
    assert fake_sleep.delays == [] and client.model_calls == 1


async def test_concurrency_limit_is_respected() -> None:
    in_flight = {"now": 0, "max": 0}

    async def slow(request: object) -> BackendReply:
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        await asyncio.sleep(0.01)
        in_flight["now"] -= 1
        return reply("ok")

    class Slow(ScriptedBackendForTests):
        async def complete(self, request):
            self.requests.append(request)
            return await slow(request)

    client = ModelClient(config(concurrency=3), backend=Slow([]))
    results = await asyncio.gather(
        *(client.complete("examiner", [{"role": "user", "content": f"q{i}"}]) for i in range(12))
    )
    assert len(results) == 12 and in_flight["max"] == 3


def test_concurrency_limit_holds_in_each_event_loop_a_client_serves() -> None:
    """One client serves several asyncio.run calls (execute runs the examiner check, then the
    tournament); calls that queue in the second loop must wait, not fail."""
    in_flight = {"now": 0, "max": 0}

    class Slow(ScriptedBackendForTests):
        async def complete(self, request):
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
            await asyncio.sleep(0.005)
            in_flight["now"] -= 1
            return reply("ok")

    client = ModelClient(config(concurrency=2), backend=Slow([]))

    async def burst(tag: str) -> list[str]:
        calls = [
            client.complete("examiner", [{"role": "user", "content": f"{tag}{i}"}])
            for i in range(5)
        ]
        return [c.text for c in await asyncio.gather(*calls)]

    for tag in ("check", "tournament", "again"):
        in_flight["max"] = 0
        assert asyncio.run(burst(tag)) == ["ok"] * 5
        assert in_flight["max"] == 2
    assert client.model_calls == 15


async def test_a_lone_surrogate_is_sent_and_keyed_as_u_fffd() -> None:
    """A lone surrogate (invalid UTF-8 from a command line, a model's '\\ud800' escape) has no
    UTF-8 bytes: the request goes out, and is keyed, with U+FFFD in its place."""
    backend = ScriptedBackendForTests([reply("ok"), reply("never")])
    client = ModelClient(config(), backend=backend)
    first = await client.complete("examiner", [{"role": "user", "content": "caf\udce9 \ud800"}])
    assert first.text == "ok"
    assert backend.requests[0]["messages"] == [{"role": "user", "content": "caf\ufffd \ufffd"}]
    clean = await client.complete("examiner", [{"role": "user", "content": "caf\ufffd \ufffd"}])
    assert clean.key == first.key  # the same request, so the same key


async def test_usage_sums_tokens_latency_and_cost_per_role(clock) -> None:
    replies = [
        reply("a", prompt_tokens=10, completion_tokens=4),
        reply("b", prompt_tokens=20, completion_tokens=6),
        BackendReply("m", "c", (), "stop", 5, 1, 0.002),
    ]
    client = ModelClient(config(), backend=ScriptedBackendForTests(replies), clock=clock)
    await client.complete("examiner", MESSAGES)
    await client.complete("examiner", [{"role": "user", "content": "again"}])
    done = await client.complete("agent-a", MESSAGES)
    usage = client.usage()
    assert list(usage) == ["agent-a", "examiner"]
    assert (usage["examiner"].prompt_tokens, usage["examiner"].completion_tokens) == (30, 10)
    assert usage["examiner"].latency_s == pytest.approx(0.5)  # 2 calls x 0.25 s per reading
    assert usage["examiner"].cost_unknown_calls == 2 and usage["examiner"].cost_usd == 0.0
    assert usage["agent-a"].cost_usd == pytest.approx(0.002) and done.cost_usd == 0.002


async def test_requests_carry_role_sampling_and_transport() -> None:
    backend = ScriptedBackendForTests([reply("x")])
    client = ModelClient(config(), backend=backend)
    await client.complete("agent-a", MESSAGES, tool_choice="required", tools=[{"t": 1}])
    sent = backend.requests[0]
    assert sent["model"] == "openai/a" and sent["max_tokens"] == 32
    assert sent["temperature"] == 0.0 and sent["seed"] == 0
    assert sent["api_base"] == "http://127.0.0.1:9/v1" and sent["tool_choice"] == "required"


async def test_unknown_role_is_a_clear_error() -> None:
    client = ModelClient(config(), backend=ScriptedBackendForTests([]))
    with pytest.raises(DrarenaError, match=r"no role 'judge' \(configured: agent-a, examiner\)"):
        await client.complete("judge", MESSAGES)


def test_config_rejects_unknown_fields_and_missing_cache_path() -> None:
    with pytest.raises(ValidationError, match="temprature"):
        ModelsConfig.model_validate(
            {"roles": {"examiner": {"model": "openai/x", "sampling": {"temprature": 0}}}}
        )
    with pytest.raises(ValidationError, match=r"cache\.path is required"):
        ModelsConfig.model_validate(
            {"roles": {"examiner": {"model": "openai/x"}}, "cache": {"mode": "replay"}}
        )
