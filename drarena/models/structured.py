"""Structured output: JSON under a JSON Schema, and strict tool calls, with bounded repair.

Why: small models (and sometimes large ones) emit JSON that does not parse or does not match
the schema even under constrained decoding (a token limit cuts it, a server ignores the
format). We validate every answer, re-ask a bounded number of times with the validation
error, and then fail with the raw text kept, so no bad answer flows on silently.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.types import Completion, ToolCall

log = logging.getLogger("drarena.models")


class StructuredOutputError(DrarenaError):
    """The model never produced a valid answer; `raw_text` holds its last reply."""

    def __init__(self, message: str, raw_text: str) -> None:
        super().__init__(message)
        self.raw_text = raw_text


_VALIDATORS: dict[str, Draft202012Validator] = {}


def _validator(schema: Mapping[str, Any], what: str) -> Draft202012Validator:
    """A validator for `schema`, checked once per distinct schema. Why cached: checking a
    schema against the metaschema costs about 6 ms, and every judge, task and tool call
    asks for the same few schemas (a replay of the demo spent a third of its time here)."""
    key = json.dumps(schema, default=repr)  # key order kept: it orders the errors reported
    validator = _VALIDATORS.get(key)
    if validator is None:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise DrarenaError(f"{what}: invalid JSON Schema ({exc.message})") from None
        # its own copy: a caller that edits its schema later cannot change the cached one
        validator = _VALIDATORS[key] = Draft202012Validator(copy.deepcopy(schema))
    return validator


def _first_error(validator: Draft202012Validator, value: Any) -> str | None:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    error = errors[0]
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {error.message}"


def json_schema_format(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI/vLLM response_format that asks for JSON under `schema`."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": dict(schema), "strict": True},
    }


def strict_tool(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A function tool in strict mode: every property required, no extra properties."""
    props = dict(parameters.get("properties", {}))
    required = list(parameters.get("required", list(props)))
    if sorted(required) != sorted(props):
        missing = sorted(set(props) - set(required))
        raise DrarenaError(
            f"tool {name!r}: strict tools must require every property "
            f"(not required: {', '.join(missing)})"
        )
    params = {
        **parameters,
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }
    _validator(params, f"tool {name!r}")
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": params,
            "strict": True,
        },
    }


def _fail(
    client: ModelClient, role: str, what: str, tries: int, error: str, raw: str
) -> StructuredOutputError:
    spec = client.role(role)
    # the console gets one line: a degenerate reply can be pages of JSON (the full text is
    # in the error's raw_text and at debug level)
    log.error(
        "role %s: %s invalid after %d tries; raw reply (%d chars): %.120r",
        role,
        what,
        tries,
        len(raw),
        raw,
    )
    log.debug("role %s: raw reply: %s", role, raw)
    return StructuredOutputError(
        f"role {role!r} ({spec.model} at {spec.api_base or 'default endpoint'}): no valid "
        f"{what} after {tries} tries; last problem: {error}; raw reply: {raw[:200]!r}",
        raw,
    )


async def complete_json(
    client: ModelClient,
    role: str,
    messages: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any],
    *,
    name: str = "answer",
    max_repairs: int = 2,
) -> tuple[Any, Completion]:
    """Ask for JSON matching `schema`; returns the parsed value and the final completion."""
    validator = _validator(schema, f"schema {name!r}")
    conversation = list(messages)
    response_format = json_schema_format(name, schema)
    for attempt in range(max_repairs + 1):
        completion = await client.complete(role, conversation, response_format=response_format)
        try:
            value = json.loads(completion.text)
            error = _first_error(validator, value)
        except json.JSONDecodeError as exc:
            error = f"not valid JSON ({exc.msg} at char {exc.pos})"
        except RecursionError:  # '[[[[...' past the decoder's recursion limit
            error = "not valid JSON (nested too deeply)"
        if error is None:
            return value, completion
        if attempt == max_repairs:
            raise _fail(
                client, role, f"JSON for schema {name!r}", attempt + 1, error, completion.text
            )
        conversation += [
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": f"That reply is invalid: {error}. Reply again with "
                "only a JSON value that matches the schema.",
            },
        ]
    raise AssertionError("unreachable: the loop returns or raises")


def _check_call(call: ToolCall, validators: Mapping[str, Draft202012Validator]) -> str | None:
    if call.name not in validators:
        return f"unknown tool {call.name!r} (tools: {', '.join(sorted(validators))})"
    try:
        arguments = call.parsed_arguments()
    except json.JSONDecodeError as exc:
        return f"arguments of {call.name!r} are not valid JSON ({exc.msg})"
    except RecursionError:
        return f"arguments of {call.name!r} are not valid JSON (nested too deeply)"
    error = _first_error(validators[call.name], arguments)
    return None if error is None else f"arguments of {call.name!r} {error}"


async def complete_tool_call(
    client: ModelClient,
    role: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    tool_name: str | None = None,
    max_repairs: int = 2,
) -> tuple[tuple[ToolCall, ...], Completion]:
    """Require a tool call (`tool_name` names the one to call); every call is validated."""
    validators = {
        t["function"]["name"]: _validator(
            t["function"]["parameters"], f"tool {t['function']['name']!r}"
        )
        for t in tools
    }
    if tool_name is not None and tool_name not in validators:
        raise DrarenaError(f"tool_choice names {tool_name!r}, which is not among the tools")
    choice: Any = (
        "required" if tool_name is None else {"type": "function", "function": {"name": tool_name}}
    )
    conversation = list(messages)
    for attempt in range(max_repairs + 1):
        completion = await client.complete(role, conversation, tools=tools, tool_choice=choice)
        calls = completion.tool_calls
        errors = [e for e in (_check_call(c, validators) for c in calls) if e]
        error = errors[0] if errors else (None if calls else "no tool call in the reply")
        if error is None:
            return calls, completion
        if attempt == max_repairs:
            raw = completion.text or json.dumps([c.to_dict() for c in calls])
            raise _fail(client, role, "tool call", attempt + 1, error, raw)
        conversation.append(completion.assistant_message())
        conversation += [
            {"role": "tool", "tool_call_id": c.id, "content": f"error: {error}"} for c in calls
        ]
        conversation.append(
            {
                "role": "user",
                "content": f"That tool call is invalid: {error}. Call a tool again, correctly.",
            }
        )
    raise AssertionError("unreachable: the loop returns or raises")
