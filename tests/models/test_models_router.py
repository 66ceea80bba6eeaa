"""Several endpoints per role (`api_bases`): config validation, and control-flow tests with
two fake OpenAI-compatible servers on loopback (no real model; canned answers only)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from loopback_servers import start_app

from drarena.config.tournament import parse_config
from drarena.errors import DrarenaError
from drarena.models.client import ModelCallError, ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy


def chat_body(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


@dataclass
class FakeReplica:
    """One fake server: answers a pure function of the request after `delay_s`; `hits`
    counts requests, `fail_first` makes the first N answer 503."""

    name: str
    api_base: str = ""
    hits: int = 0
    in_flight: int = 0
    peak: int = 0
    fail_first: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)


async def start_replica(replica: FakeReplica, delay_s: float) -> web.AppRunner:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        replica.hits += 1
        replica.bodies.append(body)
        if replica.hits <= replica.fail_first:
            return web.json_response({"error": {"message": "overloaded"}}, status=503)
        replica.in_flight += 1
        replica.peak = max(replica.peak, replica.in_flight)
        try:
            await asyncio.sleep(delay_s)
        finally:
            replica.in_flight -= 1
        # The same answer from every replica, as replicas of one model at temperature 0.
        text = json.dumps({"echo": body["messages"][-1]["content"]})
        return web.json_response(chat_body(text, model=body["model"]))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner, port = await start_app(app)
    replica.api_base = f"http://127.0.0.1:{port}/v1"
    return runner


@pytest.fixture
async def two_fake_replicas() -> AsyncIterator[tuple[FakeReplica, FakeReplica]]:
    replicas = (FakeReplica("a"), FakeReplica("b"))
    runners = [await start_replica(r, delay_s=0.05) for r in replicas]
    yield replicas
    for runner in runners:
        await runner.cleanup()


def models(
    role: ModelRole,
    tmp_path: Path,
    *,
    concurrency: int = 8,
    cache_file: str = "calls.sqlite",
    **kwargs: Any,
) -> ModelsConfig:
    return ModelsConfig.model_validate(
        {
            "roles": {"examiner": role},
            "concurrency": concurrency,
            "cache": {"path": str(tmp_path / cache_file), "mode": "read-write"},
            **kwargs,
        }
    )


# --- config validation -------------------------------------------------------------------


def test_api_bases_is_one_line_error_when_given_with_api_base() -> None:
    data = {
        "name": "t",
        "snapshot": "snap",
        "models": {
            "roles": {
                "examiner": {
                    "model": "openai/m",
                    "api_base": "http://127.0.0.1:1/v1",
                    "api_bases": ["http://127.0.0.1:2/v1"],
                }
            }
        },
        "agents": [{"name": n, "kind": "closed_book"} for n in ("x", "y")],
    }
    with pytest.raises(DrarenaError) as info:
        parse_config(data, "t.yaml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("t.yaml: models.roles.examiner")
    assert "either api_base or api_bases, not both" in message


@pytest.mark.parametrize(
    ("bases", "why"),
    [
        ([], "at least one endpoint"),
        (["http://127.0.0.1:2/v1", " "], "an endpoint is empty"),
        (
            ["http://127.0.0.1:2/v1", "http://127.0.0.1:2/v1"],
            "endpoint listed twice: http://127.0.0.1:2/v1",
        ),
    ],
)
def test_api_bases_rejects_empty_blank_and_repeated(bases: list[str], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        ModelRole.model_validate({"model": "openai/m", "api_bases": bases})


def test_endpoints_of_a_role() -> None:
    assert ModelRole(model="openai/m").endpoints() == ()
    assert ModelRole(model="openai/m", api_base="http://h:1/v1").endpoints() == ("http://h:1/v1",)
    both = ModelRole.model_validate(
        {"model": "openai/m", "api_bases": ["http://h:1/v1", "http://h:2/v1"]}
    )
    assert both.endpoints() == ("http://h:1/v1", "http://h:2/v1")


# --- control flow with fake servers --------------------------------------------------------


async def test_fake_servers_both_receive_a_roles_concurrent_calls(
    two_fake_replicas: tuple[FakeReplica, FakeReplica], tmp_path: Path
) -> None:
    a, b = two_fake_replicas
    role = ModelRole.model_validate({"model": "openai/m", "api_bases": [a.api_base, b.api_base]})
    client = ModelClient(models(role, tmp_path))
    done = await asyncio.gather(
        *[client.complete("examiner", [{"role": "user", "content": f"q{i}"}]) for i in range(16)]
    )
    assert [json.loads(c.text)["echo"] for c in done] == [f"q{i}" for i in range(16)]
    # Least in flight: each replica gets calls, and never more than half the limit at once.
    assert a.hits > 0 and b.hits > 0 and a.hits + b.hits == 16
    assert client.endpoint_attempts == {a.api_base: a.hits, b.api_base: b.hits}
    assert a.peak <= 4 and b.peak <= 4
    # Neither endpoint is in what the cache stores of a request.
    assert all("api_base" not in body for body in a.bodies + b.bodies)


async def test_sequential_calls_go_to_the_first_listed_idle_endpoint(
    two_fake_replicas: tuple[FakeReplica, FakeReplica], tmp_path: Path
) -> None:
    a, b = two_fake_replicas
    role = ModelRole.model_validate({"model": "openai/m", "api_bases": [b.api_base, a.api_base]})
    client = ModelClient(models(role, tmp_path))
    for i in range(3):
        await client.complete("examiner", [{"role": "user", "content": f"s{i}"}])
    assert (b.hits, a.hits) == (3, 0)  # ties go to the first listed: deterministic


async def test_a_retry_after_a_failure_goes_to_the_other_replica(
    two_fake_replicas: tuple[FakeReplica, FakeReplica], tmp_path: Path, fake_sleep: Any
) -> None:
    a, b = two_fake_replicas
    a.fail_first = 1
    role = ModelRole.model_validate({"model": "openai/m", "api_bases": [a.api_base, b.api_base]})
    client = ModelClient(models(role, tmp_path), sleep=fake_sleep)
    result = await client.complete("examiner", [{"role": "user", "content": "y"}])
    assert json.loads(result.text) == {"echo": "y"}
    assert (a.hits, b.hits) == (1, 1)  # a answered 503; the retry went to b
    usage = client.usage()["examiner"]
    assert (usage.calls, usage.model_calls, usage.retries) == (1, 2, 1)


async def test_failure_names_the_endpoint_that_failed_last(tmp_path: Path, fake_sleep: Any) -> None:
    replicas = (FakeReplica("a", fail_first=99), FakeReplica("b", fail_first=99))
    runners = [await start_replica(r, delay_s=0.0) for r in replicas]
    try:
        role = ModelRole.model_validate(
            {"model": "openai/m", "api_bases": [r.api_base for r in replicas]}
        )
        client = ModelClient(
            models(role, tmp_path, retry=RetryPolicy(max_attempts=3)), sleep=fake_sleep
        )
        with pytest.raises(ModelCallError, match=r"after 3 attempt\(s\)") as info:
            await client.complete("examiner", [{"role": "user", "content": "z"}])
        assert (replicas[0].hits, replicas[1].hits) == (2, 1)  # a, b, a: away from the failed
        assert replicas[0].api_base in str(info.value)
    finally:
        for runner in runners:
            await runner.cleanup()


async def test_cache_key_and_replay_do_not_depend_on_the_endpoints(
    two_fake_replicas: tuple[FakeReplica, FakeReplica], tmp_path: Path
) -> None:
    a, b = two_fake_replicas
    messages = [[{"role": "user", "content": f"k{i}"}] for i in range(6)]
    balanced = ModelClient(
        models(
            ModelRole.model_validate({"model": "openai/m", "api_bases": [a.api_base, b.api_base]}),
            tmp_path,
            cache_file="balanced.sqlite",
        )
    )
    single = ModelClient(
        models(
            ModelRole(model="openai/m", api_base=a.api_base), tmp_path, cache_file="single.sqlite"
        )
    )
    many = await asyncio.gather(*[balanced.complete("examiner", m) for m in messages])
    one = [await single.complete("examiner", m) for m in messages]
    assert a.hits > 0 and b.hits > 0
    assert [c.key for c in many] == [c.key for c in one]
    # The balanced run's cache replays on a role that names a different, dead endpoint.
    replay = ModelClient(
        ModelsConfig.model_validate(
            {
                "roles": {"examiner": {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"}},
                "cache": {"path": str(tmp_path / "balanced.sqlite"), "mode": "replay"},
            }
        )
    )
    again = [await replay.complete("examiner", m) for m in messages]
    assert [c.text for c in again] == [c.text for c in many]
    assert all(c.cached for c in again) and replay.model_calls == 0
