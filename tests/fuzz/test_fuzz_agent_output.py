"""Fuzzing how drarena reads the answers of external agents: a command agent's stdout (one
JSON answer line, maybe after logs) and an http agent's OpenAI-compatible chat reply.

Why: an external agent is untrusted code, and whatever it prints or serves (garbage, JSON cut
off or nested without end, the wrong types, NaN, lone surrogates, control characters, 10^5
citations, a "URL" that is none) must become an Answer, never a traceback or a hang in the
middle of a tournament: `error` set (one line) for anything invalid, report and citations no
larger than what the agent was allowed to print, and the Answer still a record that
matches.jsonl can hold (to_json, as UTF-8, and back with from_json).

The command agent's parsing is fuzzed after the process (`_run` returns the fuzzed stdout:
parse_reply, citations, Recorder), its bounded readers (_read_capped, _read_tail) on fuzzed
chunks, and a few hostile payloads run end to end through a real `python -c` agent. The http
agent is fuzzed through drarena's real model path (direct HTTP, litellm's converter) against a
loopback server that serves the fuzzed body. What the fuzzing found is kept at the end as
plain regression tests (each failed before its fix).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.agents.base import Answer, Conversation
from drarena.agents.external import (
    CommandAgent,
    CommandArgs,
    ExternalReply,
    _read_capped,
    _read_tail,
    parse_reply,
)
from drarena.agents.meter import Usage
from drarena.agents.registry import AgentContext, build_agent
from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy

KNOWN = "http://site.test/known"
ERROR_CHARS = 4000  # an error is a log line, whatever the agent printed
# Line breaks as str.splitlines sees them: an error must be one line for every reader.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _context() -> AgentContext:
    return AgentContext(url_checker={KNOWN}.__contains__)


def check_answer(answer: Answer, printed: int) -> None:
    """What holds of any Answer from an external agent that printed `printed` bytes."""
    assert isinstance(answer, Answer)
    if answer.error is not None:
        assert answer.error, "an error is never empty"
        assert len(answer.error.splitlines()) == 1, answer.error[:300]
        assert len(answer.error) <= ERROR_CHARS, len(answer.error)
        assert answer.report == "" and answer.citations == ()
    # bounded by what the agent printed (the stdout cap): nothing grows from it
    assert len(answer.report.encode("utf-8", "surrogatepass")) <= printed
    assert sum(len(c.url) for c in answer.citations) <= printed
    assert len(answer.citations) <= printed
    assert [c.n for c in answer.citations] == sorted({c.n for c in answer.citations})
    assert all(c.valid is (c.url == KNOWN) for c in answer.citations)
    text = answer.to_json()  # what the match log holds, written as UTF-8
    text.encode("utf-8")
    json.loads(text)
    assert Answer.from_json(text) == answer


def check_error(exc: ValueError) -> None:
    message = str(exc)
    assert message and len(message.splitlines()) == 1, message[:300]
    assert len(message) <= ERROR_CHARS, len(message)


# --- strategies --------------------------------------------------------------------------

# Text an agent may put in a JSON string: anything but lone surrogates (json.dumps writes
# them as \ud800 escapes, which the reader refuses: test_lone_surrogate_escape_is_an_error).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
# Any text at all (lone surrogates, control characters), for garbage outside JSON strings.
ANY_TEXT = st.text(max_size=200)
URLS = st.one_of(
    st.sampled_from([KNOWN, "http://made-up.test/x", "https://a.test/p?q=1#f", "", " "]),
    st.sampled_from(["javascript:alert(1)", "not a url", "<http://b.test/>.", "[1]: http://c/"]),
    TEXT,
)
REPORTS = st.one_of(
    TEXT,
    st.lists(
        st.sampled_from(["word ", "[1]", "[2] ", "[999]", "[0]", "\n", "[1]: ", KNOWN]), min_size=1
    )
    .map("".join)
    .filter(lambda r: r.strip() != ""),
)
JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),  # NaN and +-Infinity: json.dumps writes them bare, as many agents would
    TEXT,
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
# Names of unexpected fields: any text, line breaks included (the error names the field on
# one line, cut: test_unexpected_field_name_is_one_bounded_line).
FIELD_NAMES = st.text(st.characters(exclude_categories=["Cs"]), max_size=200).filter(
    lambda k: k not in ("report", "citations", "tool_calls")
)
TOOL_CALLS = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"name": TEXT},
            optional={
                "arguments": st.dictionaries(TEXT, JSON_VALUES, max_size=3),
                "urls": st.lists(URLS, max_size=3),
            },
        ),
        JSON_VALUES,
    ),
    max_size=3,
)


@st.composite
def replies(draw: st.DrawFn) -> dict[str, Any]:
    """An answer object: valid, or with fields of the wrong type, missing or unexpected."""
    reply: dict[str, Any] = {"report": draw(REPORTS)}
    if draw(st.booleans()):
        reply["citations"] = draw(st.lists(URLS, max_size=6))
    if draw(st.booleans()):
        reply["tool_calls"] = draw(TOOL_CALLS)
    for key in draw(st.lists(st.sampled_from(["report", "citations", "tool_calls"]), max_size=2)):
        if draw(st.booleans()):
            reply[key] = draw(JSON_VALUES)
        else:
            reply.pop(key, None)
    if draw(st.integers(0, 9)) == 0:
        reply[draw(FIELD_NAMES)] = draw(JSON_VALUES)
    return reply


def _dumps(reply: Any, ascii_only: bool) -> str:
    return json.dumps(reply, ensure_ascii=ascii_only)


# Logs printed before the answer line: any text but "\n" (a log line with U+2028 or a bare
# "\r" is still one line of the protocol: test_answer_line_with_a_raw_u2028_after_logs).
LOG_LINES = st.lists(
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=30),
    max_size=3,
)


@st.composite
def stdouts(draw: st.DrawFn) -> str:
    """What a command agent prints on stdout (decoded, as drarena decodes it)."""
    reply = draw(replies())
    line = _dumps(reply, draw(st.booleans()))
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(ANY_TEXT)
    if kind == 1:  # cut off (killed, or a buffer never flushed)
        return line[: draw(st.integers(0, len(line)))]
    if kind == 2:  # logs first, then the answer line
        return "\n".join([*draw(LOG_LINES), line]) + draw(st.sampled_from(["", "\n", "\n\n"]))
    if kind == 3:  # pretty-printed
        indent = draw(st.sampled_from(["1", "2", "\t"]))
        return json.dumps(reply, indent=int(indent) if indent.isdigit() else indent)
    if kind == 4:  # any JSON value at all
        return json.dumps(draw(JSON_VALUES))
    if kind == 5:  # nested deep
        depth = draw(st.integers(100, 5000))
        return draw(st.sampled_from(["[", '{"a":', '{"report": "x", "tool_calls": ['])) * depth
    return line


# --- the command agent: parsing --------------------------------------------------------------


@given(stdouts())
@example("")
@example("\n \n\t")
@example("[" * 100_000)
@example('{"report": ' * 50_000)
@example('{"report": NaN}')
@example('{"report": "x", "citations": [Infinity]}')
@example('{"report": "x", "tool_calls": [{"name": "n", "arguments": {"a": NaN}}]}')
@example('{"report": "x", "tool_calls": [{"name": "n", "arguments": {"a": 1e999}}]}')
@example('{"report": "x", "tool_calls": [{"name": "n", "arguments": {"a": 1' + "0" * 5000 + "}}]}")
@example('{"report": "a\\ud800b"}')
@example('{"report": "x\\u0000\\u001b[31m\\u007f"}')
@example('{"report": "x", "citations": "http://a.test/"}')
@example('{"report": 5}')
@example("log line\n" + json.dumps({"report": "ok [1]", "citations": [KNOWN]}))
def test_parse_reply(stdout: str) -> None:
    try:
        reply = parse_reply(stdout)
    except ValueError as exc:
        check_error(exc)
        return
    assert isinstance(reply, ExternalReply)
    assert len(reply.report) <= len(stdout)


class PrintedAgent(CommandAgent):
    """A command agent whose process printed `stdout` (everything after the spawn is real)."""

    stdout = ""

    async def _run(self, payload: str, trace: Any = None) -> tuple[str, Usage]:
        return self.stdout, Usage()


def _printed_agent(stdout: str) -> PrintedAgent:
    agent = PrintedAgent("ext", CommandArgs(command=["unused"]), _context())
    agent.stdout = stdout
    return agent


@given(stdouts())
@example(json.dumps({"report": "see [1] and [2] [3]", "citations": [KNOWN, "not a url", ""]}))
@example(json.dumps({"report": "body [1]\n\n[1]: http://x.test/a\n[999]: " + KNOWN}))
@example(json.dumps({"report": "[1]", "citations": ["javascript:alert(1)", f"[1] <{KNOWN}>."]}))
@example(json.dumps({"report": "r", "tool_calls": [{"name": "n", "arguments": {"a": [[[1]]]}}]}))
def test_command_agent_answer(stdout: str) -> None:
    answer = asyncio.run(_printed_agent(stdout).answer(Conversation("q"), (1, 5)))
    check_answer(answer, len(stdout.encode("utf-8", "surrogatepass")))
    try:
        parse_reply(stdout)
    except ValueError:
        assert answer.error is not None and answer.error.startswith("external agent ext: ")
        assert answer.trajectory.steps[-1].error == answer.error
    else:
        assert answer.error is None


# --- the command agent: bounded readers ------------------------------------------------------


def _stream(chunks: list[bytes]) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=1 << 30)
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return reader


CHUNKS = st.lists(st.binary(min_size=1, max_size=3000), max_size=12)


@given(CHUNKS, st.integers(1, 20_000))
@example([b"x" * 70_000], 65_536)
def test_read_capped_never_holds_more_than_its_cap(chunks: list[bytes], cap: int) -> None:
    data = b"".join(chunks)

    async def read() -> bytes:
        return await _read_capped(_stream(chunks), cap)

    try:
        got = asyncio.run(read())
    except ValueError as exc:  # OutputCapError
        assert len(data) > cap
        assert f"({cap + 1} bytes read; killed)" in str(exc)  # read stopped one past the cap
        check_error(exc)
        return
    assert got == data and len(got) <= cap


@given(CHUNKS, st.integers(1, 20_000))
def test_read_tail_keeps_the_tail(chunks: list[bytes], keep: int) -> None:
    async def read() -> bytes:
        return await _read_tail(_stream(chunks), keep)

    assert asyncio.run(read()) == b"".join(chunks)[-keep:]


# --- the command agent: end to end, a real process printing the payload ----------------------


def _python(program: str) -> list[str]:
    return [sys.executable, "-c", program]


def _printer(payload: str) -> list[str]:
    """An agent that reads its request and writes the bytes `payload` (a Python expression,
    evaluated in the agent: an argument holds at most 128 KiB) to stdout as they are."""
    return _python(f"import sys; sys.stdin.read(); sys.stdout.buffer.write({payload})")


HOSTILE: list[tuple[str, str, str | None]] = [
    ("invalid UTF-8 and NUL", r"b'\xff\xfe\x00garbage\x80'", "stdout is not a JSON answer"),
    ("cut off", """b'{"report": "half an ans'""", "stdout is not a JSON answer"),
    ("nested deep", "b'[' * 200_000", "stdout is not a JSON answer"),
    ("NaN report", """b'{"report": NaN}'""", "report: Input should be a valid string"),
    ("lone surrogate escape", r"""b'{"report": "a\\udc80"}'""", "stdout is not a JSON answer"),
    (
        "wrong types",
        """b'{"report": "r", "citations": {"1": "http://a/"}}'""",
        "citations: Input",
    ),
    (
        "tool_calls not a list",
        """b'{"report": "r", "tool_calls": "search"}'""",
        "tool_calls: Input",
    ),
    (
        "logs, then the answer",
        r"""b'log: start\n\x1b[31mwarn\x1b[0m\n{"report": "ok"}\n'""",
        None,
    ),
    (
        "control characters",
        r"""b'{"report": "a\\u0000b\\u001b\\u007f\\u2028", "citations": []}'""",
        None,
    ),
    (
        "invalid UTF-8 in the report",
        r"""b'{"report": "caf\xe9 [1]", "citations": ["not a url"]}'""",
        None,
    ),
    ("a 3 MiB report", """b'{"report": "' + b'word ' * (600 << 10) + b'"}'""", None),
]


@pytest.mark.parametrize(
    ("payload", "expected"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE]
)
async def test_command_agent_printing_hostile_stdout(payload: str, expected: str | None) -> None:
    agent = build_agent({"kind": "command", "args": {"command": _printer(payload)}}, _context())
    answer = await agent.answer(Conversation("q"), (1, 5))
    check_answer(answer, len(eval(payload)))
    if expected is None:
        assert answer.error is None, answer.error
    else:
        assert answer.error is not None and expected in answer.error


async def test_command_agent_with_10_5_citations() -> None:
    """10^5 citations (about 2 MB of stdout): every one resolved, counted once per URL."""
    payload = (
        "__import__('json').dumps({'report': '[1] [999] [1000]', "
        "'citations': [f'http://a.test/{i}' for i in range(1, 100_001)]}).encode()"
    )
    agent = build_agent({"kind": "command", "args": {"command": _printer(payload)}}, _context())
    answer = await agent.answer(Conversation("q"), (1, 5))
    check_answer(answer, len(eval(payload)))
    assert answer.error is None and len(answer.citations) == 100_000
    assert answer.check.cited == 100_000 and answer.check.fabricated == 100_000
    assert [c.n for c in answer.citations if c.in_report] == [1, 999]  # markers: 1-3 digits


async def test_command_agent_flooding_stdout_is_cut_at_the_cap() -> None:
    flood = _python("import sys\nwhile True: sys.stdout.write('x' * 65536)")
    args = {"command": flood, "max_stdout_bytes": 100_000, "timeout_s": 60}
    agent = build_agent({"kind": "command", "args": args}, _context())
    answer = await agent.answer(Conversation("q"), (1, 5))
    check_answer(answer, 100_000)
    assert answer.error is not None and "passed its cap of 100000 bytes" in answer.error


# --- the http agent: a loopback OpenAI-compatible service serving the fuzzed reply -----------


class _Service:
    """A chat endpoint on loopback that answers every POST with `status` and `body`."""

    def __init__(self) -> None:
        self.status = 200
        self.body = b""
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(service.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(service.body)))
                self.end_headers()
                self.wfile.write(service.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture(scope="module")
def http_agent() -> Iterator[tuple[_Service, Any, asyncio.AbstractEventLoop]]:
    """The service, an http agent on it (one attempt, no cache), and one event loop for every
    example (the model client keeps one HTTP session per loop)."""
    service = _Service()
    config = ModelsConfig(
        roles={"svc": ModelRole(model="openai/deep-agent", api_base=service.base)},
        retry=RetryPolicy(max_attempts=1),
    )
    context = AgentContext(client=ModelClient(config), url_checker={KNOWN}.__contains__)
    agent = build_agent({"kind": "http", "args": {"role": "svc"}}, context, name="svc")
    loop = asyncio.new_event_loop()
    yield service, agent, loop
    loop.run_until_complete(loop.shutdown_asyncgens())  # the client's HTTP session
    loop.close()
    service.server.shutdown()
    service.server.server_close()


def completion(content: Any, **fields: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "deep-agent",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
    reply.update(fields)
    return reply


CONTENTS = st.one_of(
    REPORTS,
    st.tuples(REPORTS, st.lists(st.tuples(st.integers(0, 1000), URLS), max_size=5)).map(
        lambda t: t[0] + "\n\n" + "\n".join(f"[{n}]: {u}" for n, u in t[1])
    ),
    JSON_VALUES,
)


@st.composite
def service_bodies(draw: st.DrawFn) -> tuple[int, bytes]:
    """(status, body) of the service's reply: a completion with any content, fields replaced
    by any JSON value, cut off, garbage, or an error status."""
    reply = completion(draw(CONTENTS))
    for key in draw(st.lists(st.sampled_from(["choices", "usage", "model", "id"]), max_size=2)):
        reply[key] = draw(JSON_VALUES)
    body = json.dumps(reply, ensure_ascii=draw(st.booleans())).encode("utf-8")
    kind = draw(st.integers(0, 5))
    if kind == 0:
        body = body[: draw(st.integers(0, len(body)))]
    elif kind == 1:
        body = draw(st.binary(max_size=200))
    elif kind == 2:
        body = b"[" * draw(st.integers(100, 5000))
    return draw(st.sampled_from([200] * 6 + [400, 404, 500, 503])), body


@given(service_bodies())
@example((200, json.dumps(completion("ok [1]\n\n[1]: " + KNOWN)).encode()))
@example((200, json.dumps(completion(None)).encode()))
@example((200, json.dumps(completion(5)).encode()))
@example((200, json.dumps(completion("x", choices=[])).encode()))
@example((200, json.dumps(completion("x", usage={"prompt_tokens": float("nan")})).encode()))
@example((200, b"[" * 100_000))
@example((500, b'{"error": {"message": "line one\\nline two"}}'))
# found by this file: a lone surrogate escape in a reply (json.loads keeps it) reached the
# Answer, which then had no UTF-8 (matches.jsonl could not be written)
@example((200, json.dumps(completion("a\ud800b [1]\n\n[1]: http://x.test/\udc00")).encode()))
@example((400, json.dumps({"error": {"message": "bad \ud800 request"}}).encode()))
def test_http_agent_answer(
    http_agent: tuple[_Service, Any, asyncio.AbstractEventLoop], reply: tuple[int, bytes]
) -> None:
    service, agent, loop = http_agent
    service.status, service.body = reply
    answer = loop.run_until_complete(agent.answer(Conversation("q"), (1, 5)))
    check_answer(answer, len(service.body))
    if service.status >= 400:
        assert answer.error is not None and answer.error.startswith("agent service svc: ")


# --- what the fuzzing found, kept as named regression tests ----------------------------------


@pytest.mark.parametrize(
    "stdout",
    [
        '{"report": "r", "a\\nb": 1}',
        '{"report": "r", "tool_calls": [{"name": "n", "x\\ny": 1}]}',
        '{"report": "r", "' + "k" * 100_000 + '": 1}',
    ],
    ids=["newline", "newline-in-tool-call", "100k-name"],
)
def test_unexpected_field_name_is_one_bounded_line(stdout: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_reply(stdout)
    check_error(info.value)


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_answer_line_with_a_raw_u2028_after_logs(char: str) -> None:
    line = json.dumps({"report": f"one{char}two"}, ensure_ascii=False)
    assert parse_reply(line).report == f"one{char}two"  # alone it is read
    assert parse_reply("log line\n" + line).report == f"one{char}two"


def test_reference_line_with_many_spaces_is_read_in_linear_time() -> None:
    """A reference line with a run of spaces after "[1]" and no URL: `\\s*:?\\s*` in
    _REF_LINE tried every split of the run between its two `\\s*` (quadratic: 8,000 spaces
    took about 1.5 s, and the 4 MiB a command agent may print would take days, on the event
    loop, after the agent's time limit). 400,000 spaces take milliseconds now and about an
    hour before; a child process with a generous limit turns that hang into a failure (a
    guard against a hang, not a speed measurement)."""
    code = (
        "from drarena.agents import citations as cite\n"
        "line = '[1]' + ' ' * 400_000 + 'a b'\n"
        "assert cite.split_references(line) == (line.strip(), [])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_lone_surrogate_escape_is_an_error() -> None:
    """A command agent's "\\ud800" is refused by the JSON reader (an error, one line): the
    record stays writable. The http agent's: test_http_agent_answer's examples."""
    with pytest.raises(ValueError) as info:
        parse_reply('{"report": "a\\ud800b"}')
    check_error(info.value)
