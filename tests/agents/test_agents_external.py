"""External agents: the documented example command agent against the real search server
code, the faults (crash, hang, garbage, missing command), and the HTTP chat adapter through
litellm against a local OpenAI-compatible service."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from agent_helpers import PAGES, MemoryRetrieverForTests
from aiohttp import web

from drarena.agents.base import Conversation
from drarena.agents.registry import AgentContext, build_agent
from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy
from drarena.search.server import make_mcp

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "command_agent.py"


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    """drarena's search server app (the real Starlette routes) over an in-memory retriever."""
    app = make_mcp(MemoryRetrieverForTests(), "memory").streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "search server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def command_agent(command: list[str], **args: Any) -> Any:
    context = AgentContext(url_checker=set(PAGES).__contains__)
    return build_agent({"kind": "command", "args": {"command": command, **args}}, context,
                       name="ext")


async def test_example_agent_searches_the_frozen_web(search_url: str) -> None:
    agent = command_agent([sys.executable, str(EXAMPLE)], search_url=search_url)
    answer = await agent.answer(Conversation("asyncio coroutines"), (20, 60))
    assert answer.error is None, answer.error
    assert answer.report.startswith("## asyncio coroutines")
    assert [c.url for c in answer.citations] == ["http://site.test/asyncio"]
    assert answer.check.valid == 1 and answer.check.fabricated == 0
    (event,) = answer.trajectory.tool_events()
    assert event.name == "search" and event.urls == ("http://site.test/asyncio",)
    assert json.loads(event.arguments) == {"query": "asyncio coroutines"}


async def test_example_agent_without_a_search_server() -> None:
    answer = await command_agent([sys.executable, str(EXAMPLE)]).answer(
        Conversation("anything"), (1, 10))
    assert answer.error is None and "Nothing found in the archive." in answer.report
    assert answer.citations == ()


async def test_request_format_on_stdin() -> None:
    echo = ("import json,sys; r=json.load(sys.stdin); "
            "print(json.dumps({'report': json.dumps(r, sort_keys=True)}))")
    conversation = Conversation("first?").then("answer one", "second?")
    answer = await command_agent([sys.executable, "-c", echo], search_url="http://s.test"
                                 ).answer(conversation, (5, 9))
    assert json.loads(answer.report) == {
        "protocol": 1, "question": "second?", "search_url": "http://s.test",
        "history": [{"question": "first?", "answer": "answer one"}], "word_limit": [5, 9]}


@pytest.mark.parametrize(("script", "expected"), [
    ("import sys; sys.stderr.write('Traceback: boom'); sys.exit(3)",
     "exited with status 3; stderr: 'Traceback: boom'"),
    ("print('thinking...'); print('the answer is 42')", "stdout is not a JSON answer"),
    ("print(json.dumps({'answer': 'x'}))", "stdout is not a JSON answer (report: Field "),
    ("pass", "stdout is empty"),
])
async def test_crash_and_garbage_become_recorded_errors(script: str, expected: str) -> None:
    answer = await command_agent([sys.executable, "-c", f"import json\n{script}"]).answer(
        Conversation("q"), (1, 5))
    assert answer.report == "" and answer.error is not None
    assert expected in answer.error
    assert answer.trajectory.steps[0].error == answer.error


async def test_logs_before_the_answer_line_are_tolerated() -> None:
    script = "print('log line'); print('{\"report\": \"ok [1]\", \"citations\": [\"http://x.test/\"]}')"
    answer = await command_agent([sys.executable, "-c", script]).answer(Conversation("q"), (1, 5))
    assert answer.report == "ok [1]" and answer.check.fabricated_urls == ("http://x.test/",)


async def test_hanging_agent_is_killed_at_the_time_limit(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
              "time.sleep(120)")
    answer = await command_agent([sys.executable, "-c", script], timeout_s=1.5).answer(
        Conversation("q"), (1, 5))
    assert answer.error == "external agent ext: no answer within 1.5 s (killed)"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_missing_command() -> None:
    answer = await command_agent(["/nonexistent/agent-binary"]).answer(Conversation("q"), (1, 5))
    assert answer.error is not None and "No such file" in answer.error


# --- HTTP adapter ---------------------------------------------------------------------------

@pytest.fixture
async def agent_service() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A local OpenAI-compatible agent service: /good answers with references, /broken 500s,
    /empty returns an empty message."""
    seen: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        mode = request.match_info["mode"]
        if mode == "broken":
            return web.json_response({"error": {"message": "agent crashed"}}, status=500)
        text = "" if mode == "empty" else (
            "Asyncio runs coroutines [1]; see also [2].\n\n[1]: http://site.test/asyncio\n"
            "[2]: http://made-up.test/page")
        return web.json_response({
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})

    app = web.Application()
    app.router.add_post("/{mode}/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


def http_agent(base: str, mode: str) -> Any:
    config = ModelsConfig(roles={"svc": ModelRole(model="openai/deep-agent",
                                                  api_base=f"{base}/{mode}/v1")},
                          retry=RetryPolicy(max_attempts=1))
    context = AgentContext(client=ModelClient(config), url_checker=set(PAGES).__contains__)
    return build_agent({"kind": "http", "args": {"role": "svc"}}, context, name="svc")


async def test_http_agent_answer_and_citation_check(agent_service: Any) -> None:
    base, seen = agent_service
    conversation = Conversation("first?").then("one", "What is asyncio?")
    answer = await http_agent(base, "good").answer(conversation, (10, 40))
    assert answer.report == "Asyncio runs coroutines [1]; see also [2]."
    assert answer.check.valid == 1 and answer.check.fabricated_urls == (
        "http://made-up.test/page",)
    assert answer.prompt_tokens == 11 and answer.completion_tokens == 7
    assert [m["role"] for m in seen[0]["messages"]] == ["system", "user", "assistant", "user"]
    assert "tools" not in seen[0]


async def test_http_agent_faults(agent_service: Any) -> None:
    base, _ = agent_service
    broken = await http_agent(base, "broken").answer(Conversation("q"), (1, 5))
    assert broken.error is not None and "agent crashed" in broken.error
    assert broken.report == ""
    empty = await http_agent(base, "empty").answer(Conversation("q"), (1, 5))
    assert empty.error == "empty answer"
    assert empty.trajectory.steps[0].error == "the service returned an empty answer"
