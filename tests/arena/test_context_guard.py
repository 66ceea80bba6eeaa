"""The frozen-mode guard of a run lets through every endpoint of every role: replicas listed in
`api_bases` on other hosts included (a multi-node cluster), and nothing else off loopback."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

from drarena.models.config import ModelsConfig
from drarena.models.guard import NetworkGuard
from drarena.runs.context import RunContext
from drarena.runs.webmode import FrozenMode, LiveMode, WebMode


def context(offline: bool, roles: dict[str, Any]) -> RunContext:
    config: Any = SimpleNamespace(offline=offline)  # guard() reads nothing of it
    web: WebMode = FrozenMode(config) if offline else LiveMode(config)
    bound = ModelsConfig(roles=roles)
    return RunContext(config, bound, None, {}, web, None, replaying=False)  # type: ignore[arg-type]


ROLES = {
    "examiner": {
        "model": "openai/m",
        "api_bases": ["http://gpu0.cluster:8000/v1", "http://10.0.0.7:8001/v1"],
    },
    "agent": {"model": "openai/m", "api_base": "http://gpu2.cluster:8000/v1"},
}


def test_frozen_guard_allows_every_replica_of_every_role() -> None:
    guard = context(True, ROLES).guard()
    assert isinstance(guard, NetworkGuard)
    assert guard.allowed_hosts == {"gpu0.cluster", "10.0.0.7", "gpu2.cluster"}
    assert guard.allows("gpu0.cluster") and guard.allows("10.0.0.7") and guard.allows("::1")
    assert not guard.allows("gpu9.cluster") and not guard.allows("example.com")


def test_live_runs_have_no_guard() -> None:
    assert isinstance(context(False, ROLES).guard(), contextlib.nullcontext)
