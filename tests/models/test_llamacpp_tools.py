"""scripts/llamacpp_tools.py: the tool-call relay in front of llama.cpp (issue 37).

The pure rewrites are tested on their own; the relay's HTTP path against a scripted upstream
(a stdlib server that records what it is sent and answers a fixed reply: control flow only,
no model)."""

from __future__ import annotations

import http.server
import importlib.util
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "llamacpp_tools.py"
spec = importlib.util.spec_from_file_location("llamacpp_tools", SCRIPT)
assert spec is not None and spec.loader is not None
tools = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tools)

SEARCH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
OPEN: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "open_page",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
}


def ids() -> Iterator[str]:
    n = 0
    while True:
        n += 1
        yield f"call_{n}"


def test_required_sends_no_tools_but_a_schema_of_the_calls_and_the_tools_in_the_prompt() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q"}],
        "tools": [SEARCH, OPEN],
        "tool_choice": "required",
        "stream": True,
    }
    upstream, names = tools.rewrite_request(body)
    assert names == ["web_search", "open_page"]
    assert not {"tools", "tool_choice", "stream"} & upstream.keys()
    schema = upstream["response_format"]["json_schema"]["schema"]
    assert [b["properties"]["name"]["const"] for b in schema["anyOf"]] == names
    assert schema["anyOf"][0]["properties"]["arguments"] == SEARCH["function"]["parameters"]
    system = upstream["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n# Tools")
    assert json.dumps({"type": "function", "function": SEARCH["function"]}) in system["content"]
    assert "<tool_call>" in system["content"] and upstream["messages"][1:] == [
        {"role": "user", "content": "Q"}
    ]


def test_a_named_function_is_the_only_branch_and_auto_gets_no_grammar() -> None:
    choice = {"type": "function", "function": {"name": "open_page"}}
    upstream, _ = tools.rewrite_request(
        {
            "messages": [{"role": "user", "content": "Q"}],
            "tools": [SEARCH, OPEN],
            "tool_choice": choice,
        }
    )
    schema = upstream["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["name"] == {"const": "open_page"}
    upstream, names = tools.rewrite_request(
        {"messages": [{"role": "user", "content": "Q"}], "tools": [SEARCH], "tool_choice": "auto"}
    )
    assert names == ["web_search"] and "response_format" not in upstream
    assert upstream["messages"][0]["content"].startswith(tools.DEFAULT_SYSTEM)


def test_a_client_constraint_is_kept() -> None:
    own = {"type": "object"}
    body = {"messages": [], "tools": [SEARCH], "tool_choice": "required", "json_schema": own}
    upstream, names = tools.rewrite_request(body)
    assert names == ["web_search"] and upstream["json_schema"] == own
    assert "response_format" not in upstream


def test_the_tool_required_model_variant_reads_auto_as_required() -> None:
    """`<model>+tool-required`: given tools with "auto" (or no tool_choice), the reply must
    be a call; the suffix never reaches llama.cpp; "none" and tool-less requests are as for
    the plain model."""
    variant = "m" + tools.REQUIRED_SUFFIX
    messages = [{"role": "user", "content": "Q"}]
    for choice in ({"tool_choice": "auto"}, {}):
        body = {"model": variant, "messages": messages, "tools": [SEARCH, OPEN], **choice}
        upstream, names = tools.rewrite_request(body)
        assert names == ["web_search", "open_page"] and upstream["model"] == "m"
        schema = upstream["response_format"]["json_schema"]["schema"]
        assert [b["properties"]["name"]["const"] for b in schema["anyOf"]] == names
    plain, names = tools.rewrite_request({"model": "m", "messages": messages, "tools": [SEARCH]})
    assert names == ["web_search"] and "response_format" not in plain
    upstream, names = tools.rewrite_request({"model": variant, "messages": messages})
    assert (upstream, names) == ({"model": "m", "messages": messages}, [])
    upstream, names = tools.rewrite_request(
        {"model": variant, "messages": messages, "tools": [SEARCH], "tool_choice": "none"}
    )
    assert (upstream, names) == ({"model": "m", "messages": messages}, [])


def test_no_tools_or_none_passes_through() -> None:
    body = {
        "messages": [{"role": "user", "content": "Q"}],
        "response_format": {"type": "json_object"},
    }
    assert tools.rewrite_request(body) == (body, [])
    upstream, names = tools.rewrite_request({**body, "tools": [SEARCH], "tool_choice": "none"})
    assert names == [] and "tools" not in upstream and upstream["messages"] == body["messages"]


def test_earlier_calls_and_results_are_written_as_the_chat_template_writes_them() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "web_search", "arguments": '{"query": "x"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "open_page", "arguments": '{"url": "u"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "results"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "page"}]},
    ]
    plain = tools.plain_messages(messages, [SEARCH["function"]])
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "user"]
    assert plain[2]["content"] == (
        '<tool_call>\n{"name": "web_search", "arguments": {"query": "x"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "open_page", "arguments": {"url": "u"}}\n</tool_call>'
    )
    assert plain[3]["content"] == (
        "<tool_response>\nresults\n</tool_response>\n<tool_response>\npage\n</tool_response>"
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "web_search", "arguments": {"query": "argparse"}}',
        '```json\n{"name": "web_search", "arguments": {"query": "argparse"}}\n```',
        "Let me search.\n<tool_call>\n"
        '{"name": "web_search", "arguments": {"query": "argparse"}}\n</tool_call>',
        '<tool_call>{"name": "web_search", "arguments": "{\\"query\\": \\"argparse\\"}"}',
    ],
)
def test_a_call_written_as_text_becomes_tool_calls(text: str) -> None:
    reply = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ]
    }
    out = tools.rewrite_response(reply, ["web_search"], ids())
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["id"] == "call_1" and call["function"]["name"] == "web_search"
    assert json.loads(call["function"]["arguments"]) == {"query": "argparse"}


@pytest.mark.parametrize(
    "text",
    [
        "argparse parses command-line options [1].",
        '{"name": "delete_everything", "arguments": {}}',  # not a tool of the request
        '{"name": "web_search", "arguments": [1]}',
        'Here is JSON: {"name": "web_search", "arguments": {}} and more prose',
    ],
)
def test_prose_and_unknown_calls_stay_text(text: str) -> None:
    reply = {
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    }
    out = tools.rewrite_response(json.loads(json.dumps(reply)), ["web_search"], ids())
    assert out == reply


def test_a_streamed_request_gets_its_reply_as_events() -> None:
    reply = tools.rewrite_response(
        {
            "id": "x",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": '{"name": "web_search", "arguments": {"query": "q"}}',
                    },
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        },
        ["web_search"],
        ids(),
    )
    lines = [e for e in tools.as_stream(reply).decode().split("\n\n") if e]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(e.removeprefix("data: ")) for e in lines[:-1]]
    delta = events[0]["choices"][0]["delta"]
    assert (
        delta["tool_calls"][0]["index"] == 0
        and delta["tool_calls"][0]["function"]["name"] == "web_search"
    )
    assert events[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[2]["usage"] == {"prompt_tokens": 3, "completion_tokens": 2}


class ScriptedUpstream(http.server.BaseHTTPRequestHandler):
    """A scripted stand-in for llama.cpp: records each body, answers `reply` (control flow)."""

    seen: ClassVar[list[dict[str, Any]]] = []
    reply = '{"name": "web_search", "arguments": {"query": "q"}}'

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        out = json.dumps(
            {
                "id": "r",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def test_relay_end_to_end_over_http_against_a_scripted_upstream() -> None:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedUpstream)
    relay = tools.Relay(("127.0.0.1", 0), f"http://127.0.0.1:{upstream.server_address[1]}")
    for server in (upstream, relay):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{relay.server_address[1]}/v1/chat/completions"

    def post(body: dict[str, Any]) -> bytes:
        request = urllib.request.Request(
            url, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())

    try:
        out = json.loads(
            post(
                {
                    "messages": [{"role": "user", "content": "Q"}],
                    "tools": [SEARCH],
                    "tool_choice": "required",
                }
            )
        )
        assert out["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "web_search"
        assert (
            "response_format" in ScriptedUpstream.seen[-1]
            and "tools" not in ScriptedUpstream.seen[-1]
        )
        plain = {"messages": [{"role": "user", "content": "Q"}]}
        out = json.loads(post(plain))  # no tools: passed through untouched, reply as it came
        assert ScriptedUpstream.seen[-1] == plain
        assert out["choices"][0]["message"]["content"] == ScriptedUpstream.reply
        # the model variant's suffix is taken off even when nothing else is rewritten
        post({**plain, "model": "m" + tools.REQUIRED_SUFFIX})
        assert ScriptedUpstream.seen[-1] == {**plain, "model": "m"}
    finally:
        relay.shutdown()
        upstream.shutdown()


def test_the_open_deep_research_adapter_names_the_relays_variant() -> None:
    """configs/agents/open_deep_research_agent.py spells the variant suffix itself (it runs in
    its harness's venv and cannot import the relay): the two spellings must agree."""
    adapter = SCRIPT.parents[1] / "configs" / "agents" / "open_deep_research_agent.py"
    assert f'"{tools.REQUIRED_SUFFIX}"' in adapter.read_text(encoding="utf-8")


def test_hung_up_tells_a_closed_client_from_a_quiet_or_pipelining_one() -> None:
    ours, theirs = socket.socketpair()
    try:
        assert not tools.hung_up(ours)  # open, nothing sent
        theirs.sendall(b"GET / HTTP/1.1\r\n")  # a pipelined request is data, not a hang-up
        assert not tools.hung_up(ours)
        assert ours.recv(64)
        theirs.close()
        assert tools.hung_up(ours)
    finally:
        ours.close()


class HeldUpstream(http.server.BaseHTTPRequestHandler):
    """A scripted upstream that never answers (a long generation): it waits, watching its own
    connection, and records when the relay closes it (as llama.cpp cancels on a close)."""

    closed = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        for _ in range(600):  # at most 30 s
            if tools.hung_up(self.connection):
                type(self).closed.set()
                return
            time.sleep(0.05)


def test_a_client_that_hangs_up_closes_the_upstream_call() -> None:
    """A harness's own timeout abandons a call: the relay must close its upstream connection
    too, or llama.cpp computes the whole reply for nobody."""
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HeldUpstream)
    relay = tools.Relay(("127.0.0.1", 0), f"http://127.0.0.1:{upstream.server_address[1]}")
    for server in (upstream, relay):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    body = json.dumps({"messages": [{"role": "user", "content": "Q"}]}).encode()
    try:
        with socket.create_connection(relay.server_address[:2], timeout=10) as client:
            client.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            time.sleep(0.2)  # the relay has the request and is waiting on upstream
        assert HeldUpstream.closed.wait(20), "the upstream call outlived its client"
    finally:
        relay.shutdown()
        upstream.shutdown()
