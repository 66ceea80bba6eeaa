"""Faults through the real litellm backend against a local aiohttp fault server."""

from __future__ import annotations

import pytest

from drarena.models.client import ModelCallError, ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy, Sampling
from drarena.models.guard import NetworkGuard
from drarena.models.serve import free_port
from drarena.models.structured import StructuredOutputError, complete_json

ASK = [{"role": "user", "content": "hello"}]
SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def client(
    api_base: str,
    fake_sleep,
    *,
    timeout_s: float = 10.0,
    attempts: int = 3,
    model: str = "openai/fake",
) -> ModelClient:
    role = ModelRole(
        model=model, api_base=api_base, timeout_s=timeout_s, sampling=Sampling(max_tokens=16)
    )
    cfg = ModelsConfig(
        roles={"examiner": role}, retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.01)
    )
    return ModelClient(cfg, sleep=fake_sleep)


@pytest.mark.parametrize("count", [10**30, -5, None, 2**53])
async def test_a_count_that_is_no_count_is_recorded_as_none(
    fault_server, fake_sleep, count
) -> None:
    """A server's usage figure below 0 or past 2**53-1 (or none) is recorded as 0, as for a
    server that reports none; the reply itself is used. As given, 10**30 would swamp the
    run's token totals."""
    usage = {"prompt_tokens": count, "completion_tokens": count, "total_tokens": count}
    fault_server.usages["odd"] = usage
    c = client(fault_server.api_base("odd"), fake_sleep)
    result = await c.complete("examiner", ASK)
    assert '"hello"' in result.text and fault_server.hits["odd"] == 1
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)
    assert c.usage()["examiner"].prompt_tokens == 0


@pytest.mark.parametrize("count", [1.5, float("inf"), "many", [3]])
async def test_a_usage_litellm_refuses_is_one_readable_line(
    fault_server, fake_sleep, count
) -> None:
    """litellm refuses a reply whose usage is not whole numbers ("Invalid response object",
    with a traceback in its message): the call is reported, not scored, and the error says
    what was wrong without the traceback's frames or litellm's dump of the reply."""
    fault_server.usages["odd"] = {"prompt_tokens": count, "completion_tokens": 1}
    c = client(fault_server.api_base("odd"), fake_sleep)
    with pytest.raises(ModelCallError) as err:
        await c.complete("examiner", ASK)
    message = str(err.value)
    assert "\n" not in message and len(message) < 600
    assert "Invalid response object" in message and "prompt_tokens" in message
    for noise in ("Traceback", 'File "', "received_args", "For further information"):
        assert noise not in message, message


async def test_5xx_then_success_is_retried(fault_server, fake_sleep) -> None:
    c = client(fault_server.api_base("flaky"), fake_sleep)
    result = await c.complete("examiner", ASK)
    assert '"hello"' in result.text and fault_server.hits["flaky"] == 3
    assert c.usage()["examiner"].retries == 2 and len(fake_sleep.delays) == 2
    assert (result.prompt_tokens, result.completion_tokens) == (7, 3)


async def test_rate_limit_is_retried(fault_server, fake_sleep) -> None:
    result = await client(fault_server.api_base("ratelimit"), fake_sleep).complete("examiner", ASK)
    assert result.text and fault_server.hits["ratelimit"] == 2


async def test_dropped_connection_is_retried(fault_server, fake_sleep) -> None:
    result = await client(fault_server.api_base("drop"), fake_sleep).complete("examiner", ASK)
    assert result.text and fault_server.hits["drop"] == 2


async def test_persistent_500_gives_one_clear_error(fault_server, fake_sleep) -> None:
    api_base = fault_server.api_base("always500")
    with pytest.raises(ModelCallError) as info:
        await client(api_base, fake_sleep).complete("examiner", ASK)
    message = str(info.value)
    assert "role 'examiner'" in message and api_base in message
    assert "after 3 attempt(s)" in message and "InternalServerError" in message
    assert fault_server.hits["always500"] == 3


async def test_hang_times_out_and_is_retried_within_limits(fault_server, fake_sleep) -> None:
    with pytest.raises(ModelCallError, match=r"after 2 attempt\(s\).*Timeout"):
        await client(fault_server.api_base("hang"), fake_sleep, timeout_s=0.5, attempts=2).complete(
            "examiner", ASK
        )
    assert fault_server.hits["hang"] == 2


async def test_unreachable_endpoint(fake_sleep) -> None:
    api_base = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(ModelCallError, match=r"after 3 attempt\(s\).*Connection error") as info:
        await client(api_base, fake_sleep).complete("examiner", ASK)
    assert api_base in str(info.value)


async def test_unknown_model_fails_at_once_naming_it(fault_server, fake_sleep) -> None:
    with pytest.raises(ModelCallError, match=r"not retriable.*NotFoundError.*no-such-model"):
        await client(
            fault_server.api_base("unknown-model"), fake_sleep, model="openai/no-such-model"
        ).complete("examiner", ASK)
    assert fault_server.hits["unknown-model"] == 1


async def test_malformed_response_body_is_retried_then_reported(fault_server, fake_sleep) -> None:
    with pytest.raises(ModelCallError, match="after 3 attempt"):
        await client(fault_server.api_base("malformed"), fake_sleep).complete("examiner", ASK)
    assert fault_server.hits["malformed"] == 3


async def test_a_reply_without_a_choice_is_retried(fault_server, fake_sleep) -> None:
    """A 200 whose body has no choices is no answer: retried like a 5xx (it was an IndexError,
    not retriable, so one such reply failed the call)."""
    got = await client(fault_server.api_base("nochoice"), fake_sleep).complete("examiner", ASK)
    assert got.text and fault_server.hits["nochoice"] == 2


async def test_schema_violating_json_is_repaired_then_reported(fault_server, fake_sleep) -> None:
    fault_server.replies["badjson"] = ["{not json", '{"ok": "yes"}', '{"ok": 1}']
    c = client(fault_server.api_base("badjson"), fake_sleep)
    with pytest.raises(StructuredOutputError, match="role 'examiner'") as info:
        await complete_json(c, "examiner", ASK, SCHEMA, max_repairs=2)
    assert info.value.raw_text == '{"ok": 1}' and fault_server.hits["badjson"] == 3
    fault_server.replies["goodjson"] = ["{oops", '{"ok": true}']
    value, _ = await complete_json(
        client(fault_server.api_base("goodjson"), fake_sleep), "examiner", ASK, SCHEMA
    )
    assert value == {"ok": True}


async def test_model_calls_pass_the_network_guard(fault_server, fake_sleep) -> None:
    with NetworkGuard({"127.0.0.1"}) as guard:
        result = await client(fault_server.api_base("echo"), fake_sleep).complete("examiner", ASK)
    assert result.text and guard.violations == []
