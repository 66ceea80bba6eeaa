"""Structured output and strict tool calls: validation and bounded repair (scripted backend)."""

from __future__ import annotations

import json
import logging

import pytest

from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.models.structured import (
    StructuredOutputError,
    _first_error,
    _validator,
    complete_json,
    complete_tool_call,
    strict_tool,
)
from drarena.models.types import ToolCall

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "A city as JSON"}]
SEARCH = strict_tool(
    "search", "search the frozen web", {"properties": {"query": {"type": "string"}}}
)


def client_for(steps: list) -> tuple[ModelClient, ScriptedBackendForTests]:
    backend = ScriptedBackendForTests(steps)
    cfg = ModelsConfig.model_validate(
        {"roles": {"examiner": {"model": "openai/m", "api_base": "http://127.0.0.1:5/v1"}}}
    )
    return ModelClient(cfg, backend=backend), backend


async def test_valid_json_first_time_sends_json_schema_format() -> None:
    client, backend = client_for([reply('{"city": "Paris", "population": 2100000}')])
    value, completion = await complete_json(client, "examiner", ASK, SCHEMA, name="city")
    assert value == {"city": "Paris", "population": 2100000}
    sent = backend.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == SCHEMA
    assert sent["json_schema"]["strict"] is True and completion.text.startswith("{")


async def test_repairs_malformed_then_schema_violating_json() -> None:
    client, backend = client_for(
        [
            reply('{"city": "Paris", '),
            reply('{"city": "Paris", "population": "many"}'),
            reply('{"city": "Paris", "population": 3}'),
        ]
    )
    value, _ = await complete_json(client, "examiner", ASK, SCHEMA, max_repairs=2)
    assert value["population"] == 3
    second, third = backend.requests[1]["messages"], backend.requests[2]["messages"]
    assert "not valid JSON" in second[-1]["content"]
    assert (
        "at population" in third[-1]["content"] and "'many' is not of type" in third[-1]["content"]
    )


async def test_gives_up_after_bounded_repairs_keeping_raw_text(caplog) -> None:
    client, backend = client_for([reply("nope"), reply('{"city": 1}')])
    with (
        caplog.at_level(logging.ERROR, logger="drarena.models"),
        pytest.raises(StructuredOutputError) as info,
    ):
        await complete_json(client, "examiner", ASK, SCHEMA, max_repairs=1)
    assert info.value.raw_text == '{"city": 1}' and len(backend.requests) == 2
    assert "role 'examiner'" in str(info.value) and "http://127.0.0.1:5/v1" in str(info.value)
    assert '{"city": 1}' in caplog.text


async def test_invalid_schema_is_a_clear_error() -> None:
    client, _ = client_for([])
    with pytest.raises(DrarenaError, match="schema 'bad': invalid JSON Schema"):
        await complete_json(client, "examiner", ASK, {"type": "nonsense"}, name="bad")


async def test_an_invalid_schema_is_refused_every_time_it_is_asked_for() -> None:
    """The validator cache keeps only checked schemas: a bad one fails again, by its name."""
    client, _ = client_for([])
    for name in ("bad", "worse"):
        with pytest.raises(DrarenaError, match=f"schema '{name}': invalid JSON Schema"):
            await complete_json(client, "examiner", ASK, {"type": "nonsense"}, name=name)


def test_a_schema_is_checked_once_and_later_edits_to_it_change_nothing() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    first = _validator(schema, "schema 's'")
    assert _validator(dict(schema), "schema 's'") is first  # same content: same validator
    schema["properties"] = {"n": {"type": "string"}}  # the caller's dict, edited afterwards
    assert _first_error(first, {"n": 3}) is None
    assert _first_error(_validator(schema, "schema 's'"), {"n": 3}) is not None


def test_strict_tool_requires_every_property() -> None:
    assert SEARCH["function"]["strict"] is True
    assert SEARCH["function"]["parameters"]["additionalProperties"] is False
    with pytest.raises(DrarenaError, match=r"tool 'open'.*not required: page"):
        strict_tool(
            "open",
            "open a page",
            {
                "properties": {"url": {"type": "string"}, "page": {"type": "integer"}},
                "required": ["url"],
            },
        )


async def test_named_tool_call_validated_and_repaired() -> None:
    bad = ToolCall(id="c1", name="search", arguments='{"query": 5}')
    good = ToolCall(id="c2", name="search", arguments='{"query": "tallest tower"}')
    client, backend = client_for([reply("", tool_calls=(bad,)), reply("", tool_calls=(good,))])
    calls, _ = await complete_tool_call(client, "examiner", ASK, [SEARCH], tool_name="search")
    # ids are the client's (derived from the request), the call is the model's
    assert [(c.name, c.arguments) for c in calls] == [(good.name, good.arguments)]
    assert json.loads(calls[0].arguments)["query"] == "tallest tower"
    assert backend.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "search"},
    }
    repair = backend.requests[1]["messages"]
    bad_id = repair[-3]["tool_calls"][0]["id"]  # the bad call, answered by a tool message
    assert repair[-3]["tool_calls"][0]["function"]["arguments"] == bad.arguments
    assert repair[-2]["role"] == "tool" and repair[-2]["tool_call_id"] == bad_id


async def test_required_tool_call_missing_fails_after_repairs() -> None:
    client, backend = client_for([reply("I will not call tools")] * 2)
    with pytest.raises(StructuredOutputError, match="no tool call in the reply") as info:
        await complete_tool_call(client, "examiner", ASK, [SEARCH], max_repairs=1)
    assert backend.requests[0]["tool_choice"] == "required"
    assert info.value.raw_text == "I will not call tools"


async def test_tool_choice_must_name_a_known_tool() -> None:
    client, _ = client_for([])
    with pytest.raises(DrarenaError, match="'answer', which is not among the tools"):
        await complete_tool_call(client, "examiner", ASK, [SEARCH], tool_name="answer")
