"""Model-layer fixtures: the real CPU vLLM server (shared) and a small aiohttp fault server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from loopback_servers import start_app

from drarena.models.testing import model_role, model_server  # noqa: F401  (fixtures)


def chat_body(content: str = "", *, model: str = "fake", tool_calls: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


@dataclass
class FaultServer:
    """Scenarios by path: http://127.0.0.1:PORT/<scenario>/v1. `hits` counts requests."""

    base: str
    hits: dict[str, int] = field(default_factory=dict)
    replies: dict[str, list[str]] = field(default_factory=dict)
    usages: dict[str, Any] = field(default_factory=dict)  # a scenario's `usage` as sent
    upstream: str | None = None

    def api_base(self, scenario: str) -> str:
        return f"{self.base}/{scenario}/v1"


@pytest.fixture
async def fault_server() -> AsyncIterator[FaultServer]:
    server = FaultServer(base="")
    closing = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        scenario = request.match_info["scenario"]
        n = server.hits[scenario] = server.hits.get(scenario, 0) + 1
        body = await request.json()
        if scenario == "always500":
            return web.json_response(
                {"error": {"message": "boom", "type": "server_error"}}, status=500
            )
        if scenario == "flaky" and n <= 2:
            return web.json_response({"error": {"message": "overloaded"}}, status=503)
        if scenario == "ratelimit" and n <= 1:
            return web.json_response({"error": {"message": "slow down"}}, status=429)
        if scenario == "hang":  # until the test ends
            await asyncio.wait_for(closing.wait(), 60)
        if scenario == "unknown-model":
            return web.json_response(
                {
                    "error": {
                        "message": f"The model `{body['model']}` does not exist.",
                        "type": "NotFoundError",
                        "code": 404,
                    }
                },
                status=404,
            )
        if scenario == "malformed":
            return web.Response(text="{this is not json", content_type="application/json")
        if scenario == "nochoice" and n <= 1:  # a 200 that is no completion
            return web.json_response({**chat_body(model=body["model"]), "choices": []})
        if scenario == "drop" and n <= 1:
            assert request.transport is not None
            request.transport.close()  # a dropped connection mid-request
            await asyncio.sleep(0.1)
        if scenario == "proxy" and n > 2:
            assert server.upstream is not None
            async with (
                aiohttp.ClientSession() as session,
                session.post(f"{server.upstream}/chat/completions", json=body) as upstream,
            ):
                return web.json_response(await upstream.json(), status=upstream.status)
        if scenario == "proxy":
            return web.json_response({"error": {"message": "injected failure"}}, status=500)
        scripted = server.replies.get(scenario)
        text = scripted.pop(0) if scripted else json.dumps({"echo": body["messages"][-1]})
        reply = chat_body(text, model=body["model"])
        if scenario in server.usages:
            reply["usage"] = server.usages[scenario]
        return web.json_response(reply)

    app = web.Application()
    app.router.add_post("/{scenario}/v1/chat/completions", handle)
    runner, port = await start_app(app)
    server.base = f"http://127.0.0.1:{port}"
    yield server
    closing.set()
    await runner.cleanup()


class FakeSleep:
    """Records the backoff delays instead of waiting them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def clock() -> Any:
    """A manual monotonic clock that advances 0.25 s per reading."""
    state = {"t": 0.0}

    def now() -> float:
        state["t"] += 0.25
        return state["t"]

    return now
