"""OpenAI tool calls for a small model on llama.cpp: a relay in front of its server.

Why: Qwen2.5-Coder-1.5B on llama.cpp (xllamacpp, `--jinja`) neither holds `tool_choice:
"required"` nor returns what the model writes as `tool_calls`: asked with one tool and
`required`, it answered prose (finish_reason length; issue 37), and a call it does make comes
back as text, fenced ```json {"name": ..., "arguments": ...}``` rather than the `<tool_call>`
tags its chat template defines (docs/models.md). An unmodified agent harness (the OpenAI
Agents SDK, smolagents' ToolCallingAgent) then sees no call and stops. This relay is the fix
on the server side, where issue 37 puts it; no agent's code changes:

- a request with `tools` and `tool_choice` "required" (or one named function) is sent on
  without them: the tools are written into the system prompt in the chat template's own words
  (the `# Tools` block with `<tools></tools>`), earlier calls and results as the template
  writes them (`<tool_call>`, `<tool_response>`), and a `json_schema` of the allowed calls
  (`{"name": <const>, "arguments": <the tool's parameters>}`, one branch a tool) makes
  llama.cpp's grammar hold the model to a call;
- with `tool_choice` "auto" (or none given) the same prompt, no grammar: the model may answer
  in prose, and a reply that is a call, in `<tool_call>` tags, fenced or bare JSON naming one
  of the tools, is returned as `tool_calls`;
- every other request (no tools, `tool_choice: "none"`, other paths) passes through as it is;
- a client that hangs up before its reply (a harness's own timeout: Open Deep Research gives
  each page summary 60 s, which a 1.5B on two cores needs about 110 s for) closes the relay's
  upstream connection too (`HangupWatch`), and llama.cpp cancels the request when its
  connection closes, so an abandoned call stops costing slot time;
- a model named `<served>+tool-required` (REQUIRED_SUFFIX) is the served model with "auto"
  read as "required": given tools, it always calls one. Why: Open Deep Research's supervisor
  and researchers bind their tools without a `tool_choice` and end when a reply has no call;
  the 1.5B answered its supervisor in prose (1 of 1 question, 6 Dec 2026), so it never
  researched. An agent opts in through its model name, a setting every harness has; the
  suffix is removed before llama.cpp sees the request.

Stdlib only: it runs in .venv-llamacpp beside xllamacpp (scripts/llamacpp_server.py), and the
tests import its pure functions from drarena's venv.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

MAX_BODY = 16 * 1024 * 1024  # a request body past this is refused (an agent's whole context)
TOOLS_HEAD = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
REQUIRED_SUFFIX = "+tool-required"  # model-name variant: tool_choice "auto" means "required"
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCED = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.S)


def tool_functions(tools: list[Any]) -> list[dict[str, Any]]:
    """The `function` objects of the request's function tools (others are ignored)."""
    out = []
    for tool in tools or []:
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            function = tool.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                out.append(function)
    return out


def forced_names(choice: Any, names: list[str]) -> list[str] | None:
    """The tools a reply must call: all for "required", one for a named function; None when
    the model may answer without a call ("auto", absent)."""
    if choice == "required":
        return names
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if name in names:
            return [name]
    return None


def call_schema(functions: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """A JSON schema that only a call of one of `names` satisfies."""
    branches = []
    for function in functions:
        if function["name"] not in names:
            continue
        params = function.get("parameters") or {"type": "object", "properties": {}}
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": function["name"]}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _text(content: Any) -> str:
    """A message's content as text (a list of parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def plain_messages(messages: list[Any], functions: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The conversation as plain system/user/assistant turns, written as the Qwen2.5 chat
    template writes a conversation with tools: the tools in the system prompt, each earlier
    call as `<tool_call>` JSON, each result as a user turn of `<tool_response>` blocks."""
    tools_block = TOOLS_HEAD
    for function in functions:
        tools_block += "\n" + json.dumps({"type": "function", "function": function})
    tools_block += TOOLS_TAIL
    out: list[dict[str, str]] = []
    rest = list(messages)
    if rest and isinstance(rest[0], dict) and rest[0].get("role") in ("system", "developer"):
        system = _text(rest.pop(0).get("content"))
    else:
        system = DEFAULT_SYSTEM
    out.append({"role": "system", "content": system + tools_block})
    for message in rest:
        role = message.get("role")
        if role == "tool":
            block = f"<tool_response>\n{_text(message.get('content'))}\n</tool_response>"
            if out[-1]["role"] == "user" and out[-1]["content"].startswith("<tool_response>"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block})
        elif role == "assistant" and message.get("tool_calls"):
            text = _text(message.get("content"))
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                arguments = function.get("arguments") or "{}"
                try:
                    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
                except ValueError:
                    parsed = arguments
                body = json.dumps({"name": function.get("name"), "arguments": parsed})
                text += f"\n<tool_call>\n{body}\n</tool_call>"
            out.append({"role": "assistant", "content": text.strip()})
        elif role in ("system", "developer"):
            out.append({"role": "system", "content": _text(message.get("content"))})
        else:
            out.append({"role": str(role or "user"), "content": _text(message.get("content"))})
    return out


def model_variant(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the request with REQUIRED_SUFFIX taken off its model name, whether it was there)."""
    model = body.get("model")
    if isinstance(model, str) and model.endswith(REQUIRED_SUFFIX):
        return {**body, "model": model.removesuffix(REQUIRED_SUFFIX)}, True
    return body, False


def rewrite_request(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The request to send llama.cpp, and the tool names a reply may call ([] = pass through:
    no tools, or tool_choice "none")."""
    body, always_call = model_variant(body)
    functions = tool_functions(body.get("tools") or [])
    choice = body.get("tool_choice")
    if always_call and choice in (None, "auto"):
        choice = "required"
    if not functions or choice == "none":
        if choice == "none":
            body = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
        return body, []
    names = [f["name"] for f in functions]
    upstream = {
        k: v
        for k, v in body.items()
        if k not in ("tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options")
    }
    upstream["messages"] = plain_messages(body.get("messages") or [], functions)
    forced = forced_names(choice, names)
    if forced and not {"json_schema", "grammar", "response_format"} & body.keys():
        # (a client that constrains the output itself, as drarena's smolagents adapter
        # does with llama.cpp's `json_schema`, keeps its own constraint)
        upstream["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "tool_call", "schema": call_schema(functions, forced)},
        }
    return upstream, names


def _call(candidate: str, names: list[str]) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return {"name": value["name"], "arguments": arguments}


def parse_calls(text: str, names: list[str]) -> list[dict[str, Any]]:
    """The tool calls a reply's text holds: `<tool_call>` blocks, else the whole reply (or
    its one fenced block) as one JSON call naming a known tool; [] when it is prose."""
    tagged = [c for c in (_call(m, names) for m in _TAGGED.findall(text)) if c]
    if tagged:
        return tagged
    stripped = text.strip()
    fenced = _FENCED.fullmatch(stripped)
    call = _call(fenced.group(1) if fenced else stripped, names)
    return [call] if call else []


def rewrite_response(reply: dict[str, Any], names: list[str], ids: Iterator[str]) -> dict[str, Any]:
    """llama.cpp's reply with a call written as text turned into `tool_calls`."""
    for choice in reply.get("choices") or []:
        message = choice.get("message") or {}
        calls = parse_calls(_text(message.get("content")), names)
        if not calls:
            continue
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": next(ids),
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in calls
        ]
        choice["message"] = message
        choice["finish_reason"] = "tool_calls"
    return reply


def as_stream(reply: dict[str, Any]) -> bytes:
    """A whole reply as the server-sent events of a streamed one (one delta, then the end),
    for a client that asked to stream a request with tools."""
    events = []
    base = {k: reply.get(k) for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    for choice in reply.get("choices") or []:
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
        index = choice.get("index", 0)
        events.append({**base, "choices": [{"index": index, "delta": delta}]})
        end = {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
        events.append({**base, "choices": [end]})
    if reply.get("usage"):
        events.append({**base, "choices": [], "usage": reply["usage"]})
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


def hung_up(client: socket.socket) -> bool:
    """Whether the client closed its end: readable with nothing to read, or reset. A request
    it pipelined behind this one is data, not a hang-up."""
    try:
        readable, _, _ = select.select([client], [], [], 0)
        return bool(readable) and client.recv(1, socket.MSG_PEEK) == b""
    except OSError:  # reset by the peer, or already closed
        return True


class HangupWatch:
    """While an upstream call runs, checks the client each `interval` seconds; on a hang-up it
    shuts the upstream socket, so the server upstream sees the close and cancels the work.
    Why: a harness's timeout abandons the call at the client, but without this the relay
    (and llama.cpp behind it) computes the whole reply for nobody (issue 37).
    Use: `with HangupWatch(client, lambda: connection.sock) as watch:`; `watch.fired` says
    whether it shut the upstream."""

    def __init__(
        self,
        client: socket.socket,
        upstream: Callable[[], socket.socket | None],
        interval: float = 1.0,
    ) -> None:
        self.client, self.upstream, self.interval = client, upstream, interval
        self.fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            if hung_up(self.client):
                sock = self.upstream()
                if sock is not None:
                    self.fired = True
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                return

    def __enter__(self) -> HangupWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def _ids() -> Iterator[str]:
    n = 0
    while True:
        n += 1
        yield f"call_{int(time.time() * 1000)}_{n}"


class Relay(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], upstream: str) -> None:
        super().__init__(address, RelayHandler)
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.ids = _ids()
        self.lock = threading.Lock()

    def next_id(self) -> str:
        with self.lock:
            return next(self.ids)


class RelayHandler(http.server.BaseHTTPRequestHandler):
    server: Relay
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, b'{"error": {"message": "request body over 16 MiB"}}')
            return
        self._forward(self.rfile.read(length))

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self, body: bytes | None) -> None:
        names: list[str] = []
        stream = False
        if body is not None and self.path.rstrip("/").endswith("/chat/completions"):
            try:
                request = json.loads(body)
            except ValueError:
                request = None
            if isinstance(request, dict):
                upstream, names = rewrite_request(request)
                if names:
                    stream = bool(request.get("stream"))
                if upstream != request:  # rewritten, or only the model variant's suffix off
                    body = json.dumps(upstream).encode()
        connection = http.client.HTTPConnection(*self.server.upstream, timeout=3600)
        watch = HangupWatch(self.connection, lambda: connection.sock)
        try:
            with watch:
                self._relay(connection, body, names, stream)
        except (OSError, ValueError) as exc:
            if watch.fired or isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                return  # the client is gone: nobody to answer
            message = json.dumps({"error": {"message": f"llama.cpp relay: {exc}"}})
            self._send(502, message.encode())
        finally:
            connection.close()

    def _relay(
        self,
        connection: http.client.HTTPConnection,
        body: bytes | None,
        names: list[str],
        stream: bool,
    ) -> None:
        headers = {"Content-Type": "application/json"}
        if self.headers.get("Authorization"):
            headers["Authorization"] = self.headers["Authorization"]
        connection.request("POST" if body is not None else "GET", self.path, body, headers)
        response = connection.getresponse()
        if not names:  # as it is, streamed or not
            self.send_response(response.status)
            kind = response.getheader("Content-Type") or "application/json"
            self.send_header("Content-Type", kind)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while chunk := response.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        data = response.read()
        if response.status != 200:
            self._send(response.status, data)
            return
        reply = rewrite_response(json.loads(data), names, iter(self.server.next_id, None))
        if stream:
            self._send(200, as_stream(reply), "text/event-stream")
        else:
            self._send(200, json.dumps(reply).encode())
