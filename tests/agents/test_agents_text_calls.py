"""Tool calls a model writes as text (llama.cpp + Qwen2.5-Coder returns a forced call in a
fenced ```json block), and the null agent. Scripted backend: control flow only."""

from __future__ import annotations

import json

from agent_helpers import scripted_context, tool

from drarena.agents.base import Conversation
from drarena.agents.common import TEXT_CALL_NOTE, text_tool_calls, unwrap_text_calls
from drarena.agents.registry import build_agent
from drarena.models.scripted import reply
from drarena.models.types import Completion

ASYNCIO = "http://site.test/asyncio"
ANSWER = {"report": "asyncio runs coroutines [1].", "citations": [ASYNCIO]}
FENCED = "```json\n" + json.dumps({"name": "answer", "arguments": ANSWER}) + "\n```"


def completion(text: str) -> Completion:
    return Completion("agent", "m", text, (), "stop", 1, 1, 0.0, None, False, "k")


def test_fenced_tagged_and_string_argument_calls_are_found() -> None:
    (call,) = text_tool_calls(FENCED, {"answer"})
    assert call.name == "answer" and json.loads(call.arguments) == ANSWER
    tagged = '<tool_call>\n{"name": "search", "arguments": {"query": "zipfile"}}\n</tool_call>'
    (call,) = text_tool_calls(tagged, {"search", "answer"})
    assert (call.name, json.loads(call.arguments)) == ("search", {"query": "zipfile"})
    as_string = json.dumps({"name": "answer", "arguments": json.dumps(ANSWER)})
    assert json.loads(text_tool_calls(as_string, {"answer"})[0].arguments) == ANSWER
    two = f"first {FENCED} then " + json.dumps({"name": "answer", "parameters": ANSWER})
    assert [c.id for c in text_tool_calls(two, {"answer"})] == ["text-call-0", "text-call-1"]


def test_text_that_is_not_a_known_call_stays_text() -> None:
    assert text_tool_calls(FENCED, {"search"}) == []  # a tool not offered
    assert text_tool_calls('{"name": "answer", "arguments": [1]}', {"answer"}) == []
    assert text_tool_calls('{"name": "answer", "arguments": "not json"}', {"answer"}) == []
    assert text_tool_calls('cut {"name": "answer", "arguments": {"report": "ab', {"answer"}) == []
    assert text_tool_calls("[" * 5000 + '{"name": "answer"', {"answer"}) == []
    plain = completion("Plain words.")
    assert unwrap_text_calls(plain, {"answer"}) is plain


def test_unwrapped_completion_carries_the_call_and_no_text() -> None:
    unwrapped = unwrap_text_calls(completion(FENCED), {"answer"})
    assert unwrapped.text == "" and unwrapped.tool_calls[0].name == "answer"
    assert unwrapped.assistant_message()["tool_calls"][0]["function"]["name"] == "answer"


async def test_closed_book_answer_written_as_text_becomes_the_report() -> None:
    """Regression (issue 15 item 6): the fenced call itself used to be the report."""
    context, backend = scripted_context([reply(FENCED), reply(FENCED)])
    answer = await build_agent({"kind": "closed_book"}, context).answer(
        Conversation("What is asyncio?"), (1, 50)
    )
    assert answer.report == "asyncio runs coroutines [1]."
    assert [c.url for c in answer.citations] == [ASYNCIO]
    assert answer.error is None and len(backend.requests) == 1
    assert answer.trajectory.steps[-1].note == TEXT_CALL_NOTE


async def test_react_text_calls_drive_the_loop() -> None:
    search = '<tool_call>{"name": "search", "arguments": {"query": "asyncio"}}</tool_call>'
    context, backend = scripted_context([reply(search), reply(FENCED)])
    answer = await build_agent(
        {"kind": "react", "args": {"max_steps": 3, "forced_tools": []}}, context
    ).answer(Conversation("What is asyncio?"), (1, 50))
    assert answer.report == "asyncio runs coroutines [1]."
    tools = [t.name for s in answer.trajectory.steps for t in s.tools]
    assert tools.count("search") == 2 and tools[-1] == "answer"  # seed search + the text one
    assert len(backend.requests) == 2


async def test_null_agent_answers_without_a_model() -> None:
    context, backend = scripted_context([tool("answer", ANSWER)])
    answer = await build_agent({"kind": "null"}, context, name="null").answer(
        Conversation("What is asyncio?"), (10, 50)
    )
    assert answer.report == "I don't know." and answer.citations == ()
    assert backend.requests == [] and answer.prompt_tokens == 0 and answer.error is None
    custom = await build_agent({"kind": "null", "args": {"text": "No idea."}}, context).answer(
        Conversation("q"), (1, 5)
    )
    assert custom.report == "No idea."


def test_raw_line_breaks_inside_a_text_call_still_count() -> None:
    """Qwen2.5-Coder on llama.cpp writes the report's line breaks raw inside the JSON string
    (strict JSON refuses them); the call, whole or cut at the token limit, is still the
    answer: seen as closed_book's report in the 1.5B ladder, JSON wrapper and all."""
    from drarena.agents.common import cut_answer_in_text

    raw = (
        '```json\n{\n  "name": "answer",\n  "arguments": {\n'
        '    "report": "## Title\n\nLine one.\nLine two."\n  }\n}\n```'
    )
    (call,) = text_tool_calls(raw, {"answer"})
    assert json.loads(call.arguments) == {"report": "## Title\n\nLine one.\nLine two."}
    cut = raw[: raw.index("Line two")] + "Line tw"
    assert cut_answer_in_text(cut, "length") == "## Title\n\nLine one.\nLine tw"
    assert cut_answer_in_text(cut, "stop") is None  # only a cut at the limit is salvaged
