"""The model meter of command agents (drarena.agents.meter): usage read from JSON and streamed
replies, bytes relayed unchanged, calls without usage counted as unmetered, and a command
agent's Answer carrying the tokens (recorded, and read back by a replay with nothing started).
The model server here is a scripted one (aiohttp on loopback): the meter's control flow is
what is tested, not a model."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from drarena.agents.base import Conversation
from drarena.agents.external import CommandAgent
from drarena.agents.meter import MAX_JSON_BYTES, ModelMeter, Usage, UsageReader, usage_of
from drarena.agents.registry import AgentContext, build_agent
from drarena.agents.toolrecord import ToolRecord
from drarena.models.cache import ToolCache
from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig
from tests.loopback_servers import start_app

REPLY = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
}
CHUNKS: list[dict[str, Any]] = [
    {"choices": [{"index": 0, "delta": {"content": "o"}}]},
    {"choices": [{"index": 0, "delta": {"content": "k"}}]},
    {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 2}},
]


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def test_usage_of_a_reply() -> None:
    assert usage_of(REPLY) == (120, 30)
    assert usage_of({"usage": {"prompt_tokens": 9}}) == (9, 0)  # an embeddings reply
    bad: object
    for bad in ({}, {"usage": None}, {"usage": {"prompt_tokens": "9"}}, [], {"usage": {}}):
        assert usage_of(bad) is None
    assert usage_of({"usage": {"prompt_tokens": True, "completion_tokens": 1}}) is None
    assert usage_of({"usage": {"prompt_tokens": -1, "completion_tokens": 1}}) is None


def test_usage_of_llamacpps_timings_when_a_stream_has_no_usage() -> None:
    """llama.cpp's server (checked on its 1.5B here: `"timings": {"cache_n": 29, "prompt_n":
    1, "predicted_n": 5, ...}` in the last chunk of a stream, where the JSON reply said
    prompt_tokens 30, completion_tokens 5)."""
    last = {"choices": [], "timings": {"cache_n": 29, "prompt_n": 1, "predicted_n": 5}}
    assert usage_of(last) == (30, 5)
    both = {**last, "usage": {"prompt_tokens": 31, "completion_tokens": 6}}
    assert usage_of(both) == (31, 6)  # usage, where there is one
    assert usage_of({"timings": {"prompt_n": 4, "predicted_n": 2}}) == (4, 2)
    assert usage_of({"timings": {"cache_n": 1, "predicted_n": 2}}) is None
    reader = UsageReader(streamed=True)
    reader.feed(sse([*CHUNKS[:2], last]))
    assert reader.usage() == (30, 5)


def test_reader_of_a_json_reply_in_pieces() -> None:
    body = json.dumps(REPLY).encode()
    reader = UsageReader(streamed=False)
    for i in range(0, len(body), 7):
        reader.feed(body[i : i + 7])
    assert reader.usage() == (120, 30)
    broken = UsageReader(streamed=False)
    broken.feed(body[:-1])
    assert broken.usage() is None


def test_reader_of_a_stream_takes_the_last_usage_split_anywhere() -> None:
    body = sse([{"usage": {"prompt_tokens": 1, "completion_tokens": 1}}, *CHUNKS])
    for size in (1, 5, 64, len(body)):
        reader = UsageReader(streamed=True)
        for i in range(0, len(body), size):
            reader.feed(body[i : i + size])
        assert reader.usage() == (50, 2), size
    none = UsageReader(streamed=True)
    none.feed(sse(CHUNKS[:2]))
    assert none.usage() is None


def test_reader_gives_up_on_an_oversized_or_compressed_reply() -> None:
    big = UsageReader(streamed=False)
    big.feed(b" " * (MAX_JSON_BYTES + 1))
    big.feed(json.dumps(REPLY).encode())
    assert big.usage() is None
    compressed = UsageReader(streamed=False)
    compressed.give_up()
    compressed.feed(json.dumps(REPLY).encode())
    assert compressed.usage() is None


def test_usage_from_a_record() -> None:
    assert Usage.parse(None) == Usage()
    usage = Usage().plus(3, 4).missed()
    assert Usage.parse(usage.to_dict()) == usage == Usage(2, 3, 4, 1)
    for bad, why in (
        ([1], "usage is not an object"),
        ({"calls": 1, "cost": 2}, "usage is not an object"),
        ({"calls": "1"}, "usage.calls is not a count"),
        ({"calls": -1}, "usage.calls is not a count"),
    ):
        with pytest.raises(ValueError, match=why):
            Usage.parse(bad)


@pytest.fixture
async def model_server() -> AsyncIterator[tuple[str, list[str]]]:
    """Scripted: /v1/chat/completions answers JSON, or a stream when asked; /v1/plain answers
    JSON without usage; /v1/models answers a GET (not a call)."""
    seen: list[str] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(f"{request.method} {request.path_qs} {request.headers.get('X-Key', '')}")
        if not body.get("stream"):
            return web.json_response(REPLY)
        reply = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await reply.prepare(request)
        for chunk in CHUNKS:
            await reply.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await reply.write(b"data: [DONE]\n\n")
        return reply

    async def plain(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.path_qs}")
        return web.json_response({"choices": []})

    async def models(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.path_qs}")
        return web.json_response({"data": [{"id": "m"}]})

    app = web.Application(client_max_size=16 << 20)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/plain", plain)
    app.router.add_get("/v1/models", models)
    runner, port = await start_app(app)
    yield f"http://127.0.0.1:{port}/v1", seen
    await runner.cleanup()


def post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", "X-Key": "k1"}
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        data: bytes = response.read()
        return data


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=20) as response:
        data: bytes = response.read()
        return data


async def test_the_meter_relays_unchanged_and_counts(model_server: Any) -> None:
    import asyncio

    base, seen = model_server
    meter = ModelMeter(base)
    async with meter.running():
        assert meter.base.startswith("http://127.0.0.1:") and meter.base.endswith("/v1")
        got = await asyncio.to_thread(post, meter.base + "/chat/completions?x=1", {"m": 1})
        assert json.loads(got) == REPLY
        got = await asyncio.to_thread(
            post, meter.base + "/chat/completions", {"m": 1, "stream": True}
        )
        assert got == sse(CHUNKS)  # the stream's bytes, as the server sent them
        await asyncio.to_thread(post, meter.base + "/plain", {})
        await asyncio.to_thread(get, meter.base + "/models")
    assert seen == [
        "POST /v1/chat/completions?x=1 k1",
        "POST /v1/chat/completions k1",
        "POST /v1/plain",
        "GET /v1/models",
    ]
    assert meter.usage == Usage(calls=3, prompt_tokens=170, completion_tokens=32, unmetered=1)


async def test_a_large_request_reaches_the_server_whole_and_an_oversized_one_is_a_413(
    model_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import urllib.error

    from drarena.agents import meter as meter_module

    base, seen = model_server
    monkeypatch.setattr(meter_module, "MAX_REQUEST_BYTES", 4 << 20)
    meter = ModelMeter(base)
    big: dict[str, Any] = {"m": 1, "messages": [{"role": "user", "content": "x" * (3 << 20)}]}
    async with meter.running():
        got = await asyncio.to_thread(post, meter.base + "/chat/completions", big)
        assert json.loads(got) == REPLY  # the server parsed all 3 MiB of JSON
        big["messages"][0]["content"] = "x" * (5 << 20)
        with pytest.raises(urllib.error.HTTPError) as info:
            await asyncio.to_thread(post, meter.base + "/chat/completions", big)
    assert info.value.code == 413 and len(seen) == 1
    assert meter.usage == Usage(calls=1, prompt_tokens=120, completion_tokens=30)  # not sent on


async def test_a_model_server_that_is_down_is_a_502_and_unmetered() -> None:
    import asyncio
    import urllib.error

    meter = ModelMeter("http://127.0.0.1:9/v1")  # discard port: nothing listens
    async with meter.running():
        with pytest.raises(urllib.error.HTTPError) as info:
            await asyncio.to_thread(post, meter.base + "/chat/completions", {})
    assert info.value.code == 502
    assert b"drarena model meter: model server" in info.value.read()
    assert meter.usage == Usage(calls=1, unmetered=1)


CHAT = """
import json, os, sys, urllib.request
json.load(sys.stdin)
url = os.environ["DRARENA_MODEL_API_BASE"] + "/chat/completions"
for stream in (False, True):
    body = json.dumps({"model": "m", "stream": stream}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as response:
        response.read()
print(json.dumps({"report": "done", "citations": []}))
"""


def command_agent(base: str, record: ToolRecord | None) -> CommandAgent:
    config = ModelsConfig(roles={"svc": ModelRole(model="openai/m", api_base=base)})
    context = AgentContext(client=ModelClient(config), tool_record=record)
    agent = build_agent(
        {"kind": "command", "args": {"command": [sys.executable, "-c", CHAT], "model_role": "svc"}},
        context,
        name="ext",
    )
    assert isinstance(agent, CommandAgent)
    return agent


async def test_a_command_agents_tokens_are_counted_recorded_and_replayed(
    model_server: Any, tmp_path: Path
) -> None:
    base, seen = model_server
    record = ToolRecord(ToolCache(tmp_path / "tools.sqlite"), replaying=False)
    try:
        answer = await command_agent(base, record).answer(Conversation("q"), (1, 5))
    finally:
        record.close()
    assert answer.error is None, answer.error
    assert (answer.prompt_tokens, answer.completion_tokens) == (170, 32)
    assert "model calls 2, tokens 170 in, 32 out" in answer.trajectory.steps[-1].note
    assert len(seen) == 2
    replay = ToolRecord(ToolCache(tmp_path / "tools.sqlite"), replaying=True)
    try:  # read back: an agent started now would reach no model (port 9) and fail
        agent = command_agent("http://127.0.0.1:9/v1", replay)
        again = await agent.answer(Conversation("q"), (1, 5))
    finally:
        replay.close()
    assert again.error is None and again.report == "done"
    assert (again.prompt_tokens, again.completion_tokens) == (170, 32)
    assert len(seen) == 2
