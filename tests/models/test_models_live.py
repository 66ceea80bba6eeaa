"""Against the real CPU vLLM server (SmolLM2-135M-Instruct), started once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy
from drarena.models.serve import ServerHandle, free_port, served_models
from drarena.models.structured import complete_json, complete_tool_call, strict_tool

pytestmark = pytest.mark.model

CITY = {"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40},
                       "country": {"type": "string", "maxLength": 40}},
        "required": ["city", "country"], "additionalProperties": False}
SEARCH = strict_tool("search", "Search the frozen web.",
                     {"properties": {"query": {"type": "string", "maxLength": 60}}})
ANSWER = strict_tool("answer", "Give the final answer.",
                     {"properties": {"text": {"type": "string", "maxLength": 120}}})
CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]


def make_client(role: ModelRole, cache: Path | None = None, mode: str = "off",
                **kwargs: object) -> ModelClient:
    cfg = ModelsConfig.model_validate(
        {"roles": {"examiner": role}, "concurrency": 4,
         "cache": {"path": cache, "mode": mode} if cache else {}, **kwargs})
    return ModelClient(cfg)


def test_server_is_local_and_serves_the_model(model_server: ServerHandle) -> None:
    assert model_server.api_base.startswith("http://127.0.0.1:")
    assert model_server.model in served_models(model_server.api_base)


async def test_chat(model_role: ModelRole) -> None:
    client = make_client(model_role)
    done = await client.complete("examiner", CAPITAL)
    assert "Paris" in done.text and done.finish_reason == "stop"
    assert done.prompt_tokens > 5 and done.completion_tokens > 0 and not done.cached
    usage = client.usage()["examiner"]
    assert usage.model_calls == 1 and usage.prompt_tokens == done.prompt_tokens


async def test_json_schema_output_is_valid(model_role: ModelRole) -> None:
    client = make_client(model_role)
    value, done = await complete_json(
        client, "examiner", [{"role": "user", "content": "Name a big city and its country "
                                                         "as JSON."}], CITY, name="city")
    assert set(value) == {"city", "country"} and all(isinstance(v, str) for v in value.values())
    assert done.text.lstrip().startswith("{")


async def test_strict_tool_calls_named_and_required(model_role: ModelRole) -> None:
    client = make_client(model_role)
    ask = [{"role": "user", "content": "Find out which building is the tallest in the world."}]
    calls, done = await complete_tool_call(client, "examiner", ask, [SEARCH, ANSWER],
                                           tool_name="search")
    assert [c.name for c in calls] == ["search"] and done.finish_reason == "tool_calls"
    assert isinstance(calls[0].parsed_arguments()["query"], str)
    calls, _ = await complete_tool_call(client, "examiner", ask, [SEARCH, ANSWER])
    assert calls and {c.name for c in calls} <= {"search", "answer"}


async def test_retries_reach_the_server_through_a_failing_endpoint(
        model_role: ModelRole, model_server: ServerHandle, fault_server, fake_sleep) -> None:
    fault_server.upstream = model_server.api_base  # fails twice with 500, then forwards
    role = model_role.model_copy(update={"api_base": fault_server.api_base("proxy")})
    cfg = ModelsConfig(roles={"examiner": role}, retry=RetryPolicy(max_attempts=3))
    client = ModelClient(cfg, sleep=fake_sleep)
    done = await client.complete("examiner", CAPITAL)
    assert "Paris" in done.text and fault_server.hits["proxy"] == 3
    assert client.usage()["examiner"].retries == 2 and len(fake_sleep.delays) == 2


async def test_record_then_replay_zero_calls_identical_outputs(
        model_role: ModelRole, tmp_path: Path) -> None:
    cache = tmp_path / "llm-cache.sqlite"
    recorder = make_client(model_role, cache, "read-write")
    tool_ask = [{"role": "user", "content": "Look up the population of Tokyo."}]
    recorded = [await recorder.complete("examiner", CAPITAL),
                (await complete_json(recorder, "examiner", [
                    {"role": "user", "content": "A city as JSON."}], CITY))[1],
                (await complete_tool_call(recorder, "examiner", tool_ask, [SEARCH],
                                          tool_name="search"))[1]]
    assert recorder.model_calls == 3 and not any(r.cached for r in recorded)
    # Replay with the endpoint pointed at a dead port: any real call would fail.
    dead = model_role.model_copy(update={"api_base": f"http://127.0.0.1:{free_port()}/v1"})
    replayer = make_client(dead, cache, "replay")
    replayed = [await replayer.complete("examiner", CAPITAL),
                (await complete_json(replayer, "examiner", [
                    {"role": "user", "content": "A city as JSON."}], CITY))[1],
                (await complete_tool_call(replayer, "examiner", tool_ask, [SEARCH],
                                          tool_name="search"))[1]]
    assert replayer.model_calls == 0 and all(r.cached for r in replayed)
    assert [r.content for r in replayed] == [r.content for r in recorded]
    assert [r.key for r in replayed] == [r.key for r in recorded]
