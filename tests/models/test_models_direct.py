"""The direct path (drarena.models.direct) against litellm's own path, on one loopback server.

Each request is sent both ways (LiteLLMBackend() and LiteLLMBackend(direct=False)); the server
records the JSON bodies it received, which must be equal, and each scripted answer (or HTTP
failure) must give the same BackendReply (or the same exception class and message)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from loopback_servers import start_app

from drarena.models import direct
from drarena.models.backend import BackendReply, LiteLLMBackend
from drarena.models.serve import free_port

RECORDED = Path(__file__).resolve().parents[1] / "arena/fixtures/recorded-run/llm-cache.sqlite"
SAMPLING = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "seed": 0}
ASK = [{"role": "user", "content": "hello"}]
ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Give the final report.",
        "parameters": {
            "type": "object",
            "properties": {
                "report": {"type": "string"},
                "citations": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["report", "citations"],
        },
    },
}
CHOICE = {"type": "function", "function": {"name": "answer"}}
SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "schema": {
            "type": "object",
            "properties": {"verdict": {"type": "string", "enum": ["A", "B", "TIE"]}},
            "required": ["verdict"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
CONVERSATION = [
    {"role": "system", "content": "You research."},
    {"role": "user", "content": "Question?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call-abc-0",
                "type": "function",
                "function": {"name": "search", "arguments": '{"query": "x"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call-abc-0", "content": "1. a page"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call-abc-1",
                "type": "function",
                "function": {"name": "open", "arguments": '{"n": 1}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call-abc-1", "content": "page text"},
]


PAGES = [
    {"role": "system", "content": "You write questions. " + '«Quote» “page” é 😀\n\t\\ "x" ' * 600},
    {"role": "user", "content": "Sources:\n" + "line with a bell \x07 and ’ quotes\r\n" * 400},
]


def recorded_requests() -> list[dict[str, Any]]:
    """The requests of the recorded run (task, judge, agents with tools), as cached."""
    with sqlite3.connect(RECORDED) as db:
        return [json.loads(r) for (r,) in db.execute("select request from calls order by key")]


REQUESTS: dict[str, dict[str, Any]] = {
    "plain": {"messages": ASK, **SAMPLING},
    "no seed, stop": {"messages": ASK, "temperature": 0.7, "max_tokens": 8, "stop": ["\n\n"]},
    "json schema": {"messages": ASK, "response_format": SCHEMA_FORMAT, **SAMPLING},
    "forced tool": {"messages": ASK, "tools": [ANSWER_TOOL], "tool_choice": CHOICE, **SAMPLING},
    "auto tool": {"messages": ASK, "tools": [ANSWER_TOOL], "tool_choice": "auto", **SAMPLING},
    "required tool": {"messages": ASK, "tools": [ANSWER_TOOL], "tool_choice": "required"},
    "tools, no choice": {"messages": CONVERSATION, "tools": [ANSWER_TOOL], **SAMPLING},
    "choice, no tools": {"messages": ASK, "tool_choice": "auto", **SAMPLING},
    "conversation": {"messages": CONVERSATION, "tools": [ANSWER_TOOL], "tool_choice": CHOICE},
    **{f"recorded {i}": r for i, r in enumerate(recorded_requests())},
    # long enough for models.jsonbytes' byte-level escaping (and, with a bell character,
    # json's own): the body must still be the same JSON as litellm's
    "long pages": {"messages": PAGES, "response_format": SCHEMA_FORMAT, **SAMPLING},
}


def chat(message: dict[str, Any], **top: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "served-name",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }
    choice = top.pop("choice", {})
    body["choices"][0].update(choice)
    body.update(top)
    return {k: v for k, v in body.items() if v is not None}


TOOL_CALL = {
    "id": "chatcmpl-tool-9f8e",
    "type": "function",
    "function": {"name": "answer", "arguments": '{"report": "r", "citations": []}'},
}
# scenario -> (HTTP status, body: a dict is sent as JSON, a str as it is)
ANSWERS: dict[str, tuple[int, dict[str, Any] | str]] = {
    "text": (200, chat({"role": "assistant", "content": "The answer."})),
    "tool call": (
        200,
        chat(
            {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
            choice={"finish_reason": "tool_calls"},
        ),
    ),
    "tool call, stop": (
        200,
        chat({"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}),
    ),
    "no arguments": (
        200,
        chat(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**TOOL_CALL, "function": {"name": "answer", "arguments": None}}],
            }
        ),
    ),
    "length": (
        200,
        chat({"role": "assistant", "content": "cut"}, choice={"finish_reason": "length"}),
    ),
    "eos": (200, chat({"role": "assistant", "content": "x"}, choice={"finish_reason": "eos"})),
    "no finish reason": (
        200,
        chat({"role": "assistant", "content": "x"}, choice={"finish_reason": None}),
    ),
    "no usage": (200, chat({"role": "assistant", "content": "x"}, usage=None)),
    "no model": (200, chat({"role": "assistant", "content": "x"}, model=None)),
    "reasoning": (
        200,
        chat({"role": "assistant", "content": "final", "reasoning_content": "I think"}),
    ),
    "think tags": (200, chat({"role": "assistant", "content": "<think>hm</think>final"})),
    "priced reply model": (200, chat({"role": "assistant", "content": "x"}, model="gpt-4o")),
    "500": (500, {"error": {"message": "boom", "type": "server_error"}}),
    "503": (503, {"error": {"message": "overloaded"}}),
    "429": (429, {"error": {"message": "slow down"}}),
    "404": (404, {"error": {"message": "The model `m` does not exist.", "code": 404}}),
    "400 detail": (400, {"detail": "bad request"}),
    "500 text": (500, "Internal Server Error"),
    "500 error string": (500, {"error": "it broke"}),
    "502 message only": (502, {"message": "bad gateway", "code": 502}),
    "500 error, no message": (500, {"error": {"code": 500, "type": "x"}}),
    "500 empty message": (500, {"error": {"message": ""}}),
    "malformed": (200, "{this is not json"),
}


@dataclass
class Recorder:
    base: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
async def server() -> AsyncIterator[Recorder]:
    recorder = Recorder()

    async def handle(request: web.Request) -> web.StreamResponse:
        recorder.bodies.append(await request.json())
        status, body = ANSWERS[request.match_info["scenario"].replace("_", " ")]
        if isinstance(body, str):
            return web.Response(text=body, status=status, content_type="application/json")
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_post("/{scenario}/v1/chat/completions", handle)
    runner, port = await start_app(app)
    recorder.base = f"http://127.0.0.1:{port}"
    yield recorder
    await runner.cleanup()


def request_for(shape: dict[str, Any], base: str, scenario: str, model: str) -> dict[str, Any]:
    return {
        **{k: v for k, v in shape.items() if k != "model"},
        "model": model,
        "timeout": 10.0,
        "api_base": f"{base}/{scenario.replace(' ', '_')}/v1",
    }


async def both(
    request: dict[str, Any], recorder: Recorder
) -> tuple[BackendReply | str, BackendReply | str]:
    """Each path's reply, or 'ExceptionClass: message'; the two bodies must be equal."""
    results: list[BackendReply | str] = []
    for backend in (LiteLLMBackend(), LiteLLMBackend(direct=False)):
        try:
            results.append(await backend.complete(request))
        except Exception as exc:
            results.append(f"{type(exc).__name__}: {exc}")
    first, second = recorder.bodies[-2:]
    assert first == second
    return results[0], results[1]


@pytest.mark.parametrize("shape", sorted(REQUESTS))
async def test_same_body_and_reply_for_every_request_shape(server: Recorder, shape: str) -> None:
    request = request_for(REQUESTS[shape], server.base, "tool call", "openai/sim-model")
    assert direct.eligible(request)
    mine, theirs = await both(request, server)
    assert mine == theirs


@pytest.mark.parametrize("scenario", sorted(ANSWERS))
async def test_same_reply_or_error_for_every_answer(server: Recorder, scenario: str) -> None:
    request = request_for(REQUESTS["forced tool"], server.base, scenario, "openai/sim-model")
    mine, theirs = await both(request, server)
    assert mine == theirs
    if scenario == "priced reply model":  # litellm prices the reply by the server's model
        assert isinstance(mine, BackendReply) and mine.cost_usd


async def test_a_reply_past_the_cap_fails_without_being_read(
    server: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint that answers more than MAX_REPLY_BYTES fails as a server error naming the
    cap (retried, then reported by ModelClient), instead of being read into memory."""
    import litellm

    monkeypatch.setattr(direct, "MAX_REPLY_BYTES", 200)
    request = request_for(REQUESTS["plain"], server.base, "text", "openai/sim-model")
    with pytest.raises(litellm.InternalServerError, match="exceeds 200 bytes"):
        await LiteLLMBackend().complete(request)
    monkeypatch.setattr(direct, "MAX_REPLY_BYTES", 1 << 20)
    assert (await LiteLLMBackend().complete(request)).text == "The answer."


async def test_unreachable_endpoint_fails_alike() -> None:
    request = request_for(REQUESTS["plain"], f"http://127.0.0.1:{free_port()}", "x", "openai/m")
    messages = []
    for backend in (LiteLLMBackend(), LiteLLMBackend(direct=False)):
        with pytest.raises(Exception) as info:
            await backend.complete(request)
        assert backend.is_retriable(info.value)
        messages.append(f"{type(info.value).__name__}: {info.value}")
    assert messages[0] == messages[1]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"model": "hosted_vllm/m"}, "another provider: litellm transforms it"),
        ({"model": "openai/gpt-4o"}, "a catalog model"),
        ({"model": "openai/o3-mini"}, "o-series: parameters renamed"),
        ({"model": "openai/gpt-5-mini"}, "GPT-5: parameters renamed"),
        ({"api_base": None}, "the provider's own endpoint"),
        ({"stream": True}, "a key the client never sends"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}, "parts"),
        (
            {"tools": [{**ANSWER_TOOL, "function": {"name": "t", "parameters": {"pattern": "x"}}}]},
            "a regex pattern litellm may drop",
        ),
    ],
)
def test_what_stays_with_litellm(change: dict[str, Any], why: str) -> None:
    request = {**request_for(REQUESTS["plain"], "http://127.0.0.1:1", "x", "openai/m"), **change}
    assert not direct.eligible(request), why


def plain_request(base: str) -> dict[str, Any]:
    """The plain request shape for the server at `base` (its /v1 route)."""
    return {**request_for(REQUESTS["plain"], base, "", "openai/m"), "api_base": f"{base}/v1"}


async def text_server() -> tuple[web.AppRunner, str]:
    """A loopback server whose /v1/chat/completions answers ANSWERS["text"]: its runner (to
    clean up) and base URL."""

    async def handle(request: web.Request) -> web.StreamResponse:
        return web.json_response(ANSWERS["text"][1])

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner, port = await start_app(app)
    return runner, f"http://127.0.0.1:{port}"


def test_one_session_per_event_loop_closed_with_it() -> None:
    """Two asyncio.run calls on one backend (the Examiner check, then the tournament): each
    loop gets its own session, closed when asyncio.run finalises the loop."""
    backend = LiteLLMBackend()
    chat_ = backend._direct
    assert chat_ is not None
    sessions: list[Any] = []

    async def one() -> None:
        runner, base = await text_server()
        request = plain_request(base)
        for _ in range(2):
            reply = await backend.complete(request)
            assert reply.text == "The answer."
        sessions.extend(chat_._sessions.values())
        await runner.cleanup()

    for _ in range(2):
        asyncio.run(one())
    assert len(sessions) == 2 and sessions[0] is not sessions[1]
    assert all(s.closed for s in sessions)


@pytest.fixture(autouse=True)
def _quiet_litellm() -> Iterator[None]:
    import logging

    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    yield


async def test_proxy_from_the_environment_read_once_per_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP_PROXY is honoured as litellm's path honours it (both reach an endpoint that only
    the proxy can: its host does not resolve) and the direct path reads the environment once
    per endpoint: a proxy named later is not used by the same backend (aiohttp's trust_env
    looked it up in a thread on every request; litellm keeps its first client too). A new
    backend reads NO_PROXY and connects itself (and fails: the host does not resolve)."""
    import litellm

    seen: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(str(request.url))
        return web.json_response(ANSWERS["text"][1])

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner, port = await start_app(app)
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    upstream = "http://drarena-upstream.invalid"
    request = request_for(REQUESTS["plain"], upstream, "x", "openai/m")
    try:
        mine = LiteLLMBackend()
        replies = [
            await mine.complete(request),
            await LiteLLMBackend(direct=False).complete(request),
        ]
        assert replies[0] == replies[1] and replies[0].text == "The answer."
        assert seen == [f"{upstream}/x/v1/chat/completions"] * 2
        assert mine._direct is not None
        assert set(mine._direct._proxies) == {f"{upstream}/x/v1/chat/completions"}

        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{free_port()}")  # nothing listens
        assert (await mine.complete(request)).text == "The answer."  # read once: same proxy
        assert len(seen) == 3

        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "drarena-upstream.invalid")
        with pytest.raises(litellm.InternalServerError, match="Connection error"):
            await LiteLLMBackend().complete(request)  # a new backend reads NO_PROXY: direct
        assert len(seen) == 3
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(("transport", "direct_path"), [("direct", True), ("litellm", False)])
async def test_models_transport_chooses_the_path(transport: str, direct_path: bool) -> None:
    """`models.transport` in a run config: 'litellm' sends even an eligible call through
    litellm (its OpenAI client's User-Agent reaches the server), 'direct' posts it from
    aiohttp; the reply is the same."""
    from drarena.models.client import ModelClient
    from drarena.models.config import ModelsConfig

    agents: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        agents.append(request.headers.get("User-Agent", ""))
        return web.json_response(ANSWERS["text"][1])

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner, port = await start_app(app)
    try:
        role = {"model": "openai/m", "api_base": f"http://127.0.0.1:{port}/v1"}
        config = ModelsConfig.model_validate({"roles": {"r": role}, "transport": transport})
        reply = await ModelClient(config).complete("r", ASK)
    finally:
        await runner.cleanup()
    assert reply.text == "The answer."
    assert len(agents) == 1 and ("aiohttp" in agents[0]) is direct_path, agents


def test_request_body_on_the_wire_before_the_loop_turns() -> None:
    """A request posted on the direct path has left (headers and body) when the call yields
    to the event loop: the next task ready in the same turn finds it at the server. Without
    eager_body_writes, Python 3.11's aiohttp wrote it one loop turn later, behind everything
    else ready (a burst of 64 requests left only once all 64 had been prepared)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    arrived = threading.Event()
    reply = json.dumps(ANSWERS["text"][1]).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the second call reuses the connection

        def do_POST(self) -> None:
            json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            arrived.set()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    request = plain_request(base)

    async def main() -> bool:
        backend = LiteLLMBackend()
        assert (await backend.complete(request)).text == "The answer."  # connection pooled
        arrived.clear()
        call = asyncio.ensure_future(backend.complete(request))

        async def probe() -> bool:  # ready in the same turn, after the call's first step
            return arrived.wait(timeout=10)  # blocks the loop: nothing else may write

        seen = await asyncio.ensure_future(probe())
        assert (await call).text == "The answer."
        return seen

    try:
        assert asyncio.run(main()), "the body had not left when the call yielded"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


async def _steps(log: list[str], wait: asyncio.Future[str] | None = None) -> str:
    log.append("first step")
    if wait is not None:
        try:
            log.append(await wait)
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
    return "done"


async def test_eager_task_runs_only_its_coroutine_early() -> None:
    """The task factory eager_body_writes installs (given another coroutine's code here, so
    it runs on every Python): that coroutine's first step runs inside create_task, a finished
    one comes back done with its result, one that waits is resumed by its task with what it
    awaited, and a cancellation reaches it; any other coroutine waits for the loop as usual."""
    import functools

    loop = asyncio.get_running_loop()
    loop.set_task_factory(functools.partial(direct._eager_task, _steps.__code__))
    try:
        log: list[str] = []
        finished = asyncio.ensure_future(_steps(log))
        assert log == ["first step"] and finished.done() and finished.result() == "done"

        wait: asyncio.Future[str] = loop.create_future()
        resumed = asyncio.ensure_future(_steps(log, wait))
        assert log == ["first step"] * 2 and not resumed.done()
        wait.set_result("awaited")
        assert await resumed == "done" and log[-1] == "awaited"

        stopped = asyncio.ensure_future(_steps(log, loop.create_future()))
        await asyncio.sleep(0)
        stopped.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopped
        assert log[-2:] == ["first step", "cancelled"]

        async def other() -> str:
            log.append("other")
            return "other"

        later = asyncio.ensure_future(other())
        assert log[-1] == "cancelled" and not later.done()  # not run early
        assert await later == "other"
    finally:
        loop.set_task_factory(None)


def test_eager_body_writes_only_where_needed_and_removed_with_the_session() -> None:
    """Python 3.11: installed on the loop with the direct path's session and removed when
    asyncio.run closes that session; a loop that has its own task factory keeps it. 3.12 and
    later: never installed (aiohttp starts its body writer eagerly itself)."""
    import sys

    factories: list[Any] = []

    async def one(own: Any) -> None:
        loop = asyncio.get_running_loop()
        if own is not None:
            loop.set_task_factory(own)

        runner, base = await text_server()
        backend = LiteLLMBackend()
        assert (await backend.complete(plain_request(base))).text == "The answer."
        factories.append(loop.get_task_factory())
        await runner.cleanup()
        assert backend._direct is not None
        keeper = backend._direct._keepers[loop]
        await keeper.aclose()  # what asyncio.run's shutdown_asyncgens does
        factories.append(loop.get_task_factory())

    def own(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        return asyncio.Task(coro, loop=loop, **kwargs)

    asyncio.run(one(None))
    asyncio.run(one(own))
    installed, removed, kept, kept_after = factories
    if sys.version_info < (3, 12):
        assert installed is not None and installed.func is direct._eager_task
    else:
        assert installed is None
    assert removed is None and kept is own and kept_after is own
