"""Limits a config or a received snapshot could lift (issue 38, item 11): `timeout_s: .inf`
was accepted for command agents and model roles (a hang never ended), and a crawl spec's
`max_bytes`, which is also where decoding a body stops, had no upper bound (nor had a live
run's, nor the value a snapshot reader takes from a manifest). Each test failed before."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from drarena.agents.external import MAX_AGENT_TIMEOUT_S, CommandArgs
from drarena.errors import DrarenaError
from drarena.live.web import LiveWebSettings
from drarena.models.config import MAX_WAIT_S, ModelRole, RetryPolicy
from drarena.web.crawling.spec import load_spec
from drarena.web.warc.snapshot import spec_max_bytes
from drarena.web.warc.warcfile import MAX_BODY_BYTES


@pytest.mark.parametrize("value", [float("inf"), float("nan"), MAX_AGENT_TIMEOUT_S + 1, 0.0])
def test_a_command_agents_timeout_is_finite_and_bounded(value: float) -> None:
    with pytest.raises(ValidationError, match="timeout_s"):
        CommandArgs(command=["agent"], timeout_s=value)
    assert CommandArgs(command=["agent"], timeout_s=MAX_AGENT_TIMEOUT_S).timeout_s > 0


@pytest.mark.parametrize("value", [float("inf"), float("nan"), MAX_WAIT_S + 1])
def test_a_model_roles_timeout_and_retry_pauses_are_finite(value: float) -> None:
    with pytest.raises(ValidationError, match="timeout_s"):
        ModelRole(model="openai/m", timeout_s=value)
    with pytest.raises(ValidationError, match="max_delay_s"):
        RetryPolicy(max_delay_s=value)
    assert ModelRole(model="openai/m", timeout_s=MAX_WAIT_S).timeout_s == MAX_WAIT_S


@pytest.mark.parametrize("value", [str(MAX_BODY_BYTES + 1), "1000000000000000"])
def test_a_crawl_specs_max_bytes_is_bounded(tmp_path: Path, value: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: x\nseeds: [http://a.example/]\nmax_bytes: {value}\n")
    with pytest.raises(DrarenaError) as info:
        load_spec(path)
    assert str(info.value).startswith(f"{path}: field max_bytes: ")
    with pytest.raises(ValidationError, match="max_bytes"):
        LiveWebSettings(max_bytes=int(value))


def test_a_manifest_cannot_lift_the_readers_decode_cap() -> None:
    assert spec_max_bytes({"max_bytes": 10**15}) == MAX_BODY_BYTES
    assert spec_max_bytes({"settings": {"max_bytes": 10**15}}) == MAX_BODY_BYTES
    assert spec_max_bytes({"max_bytes": 5_000_000}) == 5_000_000
