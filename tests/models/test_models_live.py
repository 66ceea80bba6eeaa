"""Against the real CPU vLLM server (SmolLM2-135M-Instruct), started once per session.

The model calls are made once, recorded into a cache (the `recorded` fixture); the tests then
check each answer, and the last one replays them all with zero calls. Two shared cores make
every generated token count.

Never what the model says: vLLM's CPU kernels take other paths on AVX2, AVX-512 and AMX, so
greedy decoding of the same prompt gives other tokens on other machines (on an AMX Xeon this
model does not name Paris). The tests assert the protocol: finish reasons, token counts,
schema-valid JSON, tool-call shape, the request reaching the server, replay identity.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from drarena.models.client import ModelCallError, ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy
from drarena.models.serve import ServerHandle, free_port, served_models
from drarena.models.structured import complete_json, complete_tool_call, strict_tool
from drarena.models.types import Completion

pytestmark = pytest.mark.model

CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "country": {"type": "string", "maxLength": 40},
    },
    "required": ["city", "country"],
    "additionalProperties": False,
}
SEARCH = strict_tool(
    "search",
    "Search the frozen web.",
    {"properties": {"query": {"type": "string", "maxLength": 60}}},
)
ANSWER = strict_tool(
    "answer",
    "Give the final answer.",
    {"properties": {"text": {"type": "string", "maxLength": 120}}},
)
CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]
CITY_ASK = [{"role": "user", "content": "Name a big city and its country as JSON."}]
TOOL_ASK = [{"role": "user", "content": "Find out which building is the tallest in the world."}]
MAX_TOKENS = 128  # the model_role fixture's completion limit


def assert_plain_completion(done: Completion) -> None:
    """A chat reply, whatever its words: it ended by a stop token or at the token limit, and
    the counts agree with that."""
    assert isinstance(done.text, str) and not done.tool_calls
    assert done.finish_reason in ("stop", "length"), done.finish_reason
    assert done.prompt_tokens > 5 and 0 < done.completion_tokens <= MAX_TOKENS
    if done.finish_reason == "length":
        assert done.completion_tokens == MAX_TOKENS
    assert len(done.key) == 64


def make_client(role: ModelRole, cache: Path, mode: str) -> ModelClient:
    cfg = ModelsConfig.model_validate(
        {"roles": {"examiner": role}, "cache": {"path": cache, "mode": mode}}
    )
    return ModelClient(cfg)


async def run_calls(client: ModelClient) -> dict[str, Any]:
    chat = await client.complete("examiner", CAPITAL)
    city, city_done = await complete_json(client, "examiner", CITY_ASK, CITY, name="city")
    named, named_done = await complete_tool_call(
        client, "examiner", TOOL_ASK, [SEARCH, ANSWER], tool_name="search"
    )
    required, required_done = await complete_tool_call(
        client, "examiner", TOOL_ASK, [SEARCH, ANSWER]
    )
    return {
        "chat": chat,
        "city": city,
        "city_done": city_done,
        "named": named,
        "named_done": named_done,
        "required": required,
        "required_done": required_done,
        "calls": client.model_calls,
        "usage": client.usage(),
    }


@pytest.fixture(scope="module")
def cache_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("live") / "llm-cache.sqlite"


@pytest.fixture(scope="module")
def recorded(model_role: ModelRole, cache_path: Path) -> dict[str, Any]:
    return asyncio.run(run_calls(make_client(model_role, cache_path, "read-write")))


def test_server_is_local_and_serves_the_model(model_server: ServerHandle) -> None:
    assert model_server.api_base.startswith("http://127.0.0.1:")
    assert model_server.model in served_models(model_server.api_base)


def test_chat(recorded: dict[str, Any]) -> None:
    chat: Completion = recorded["chat"]
    assert_plain_completion(chat)
    assert not chat.cached
    usage = recorded["usage"]["examiner"]
    assert usage.model_calls == recorded["calls"] >= 4 and usage.prompt_tokens > 0
    assert usage.prompt_tokens >= chat.prompt_tokens + recorded["city_done"].prompt_tokens


def test_json_schema_output_is_valid(recorded: dict[str, Any]) -> None:
    city = recorded["city"]
    assert set(city) == {"city", "country"} and all(isinstance(v, str) for v in city.values())
    assert recorded["city_done"].text.lstrip().startswith("{")


def test_strict_tool_calls_named_and_required(recorded: dict[str, Any]) -> None:
    named = recorded["named"]
    assert [c.name for c in named] == ["search"]
    assert recorded["named_done"].finish_reason == "tool_calls"
    assert isinstance(named[0].parsed_arguments()["query"], str)
    assert recorded["required"] and {c.name for c in recorded["required"]} <= {"search", "answer"}


async def test_retries_reach_the_server_through_a_failing_endpoint(
    model_role: ModelRole,
    model_server: ServerHandle,
    fault_server,
    fake_sleep,
    recorded: dict[str, Any],
) -> None:
    fault_server.upstream = model_server.api_base  # fails twice with 500, then forwards
    role = model_role.model_copy(update={"api_base": fault_server.api_base("proxy")})
    cfg = ModelsConfig(roles={"examiner": role}, retry=RetryPolicy(max_attempts=3))
    client = ModelClient(cfg, sleep=fake_sleep)
    done = await client.complete("examiner", CAPITAL)
    assert fault_server.hits["proxy"] == 3
    assert client.usage()["examiner"].retries == 2 and len(fake_sleep.delays) == 2
    # the third attempt reached the real model with the request unchanged: a real completion
    # of the same prompt (same tokenizer, same token count), under the same cache key
    assert_plain_completion(done)
    direct: Completion = recorded["chat"]
    assert (done.prompt_tokens, done.key) == (direct.prompt_tokens, direct.key)


async def test_a_model_the_server_does_not_serve_is_one_clear_error(
    model_role: ModelRole, model_server: ServerHandle
) -> None:
    role = model_role.model_copy(update={"model": "openai/no-such-model"})
    client = ModelClient(ModelsConfig(roles={"examiner": role}))
    with pytest.raises(ModelCallError) as info:
        await client.complete("examiner", CAPITAL)
    message = str(info.value)
    assert "role 'examiner'" in message and model_server.api_base in message
    assert "no-such-model" in message and "NotFoundError" in message
    assert client.model_calls == 1  # not retried: a 404 stays a 404


async def test_replay_makes_zero_calls_and_returns_identical_outputs(
    recorded: dict[str, Any], model_role: ModelRole, cache_path: Path
) -> None:
    # The endpoint now points at a dead port: any real call would fail.
    dead = model_role.model_copy(update={"api_base": f"http://127.0.0.1:{free_port()}/v1"})
    replayer = make_client(dead, cache_path, "replay")
    replayed = await run_calls(replayer)
    assert replayed["calls"] == 0 and replayer.model_calls == 0
    for name in ("chat", "city_done", "named_done", "required_done"):
        assert replayed[name].cached and replayed[name].content == recorded[name].content
    assert (replayed["city"], replayed["named"]) == (recorded["city"], recorded["named"])
