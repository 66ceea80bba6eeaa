"""Pytest fixtures for tests that need a real model server (any area may import them).

Usage in a conftest.py:  `from drarena.models.testing import model_server, model_role  # noqa`
The server is started once per test process, whichever conftests import these fixtures, and
stopped when the session ends (or reused, never stopped, if DRARENA_MODEL_API_BASE is set).
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator

import pytest

from drarena.models.config import ModelRole, Sampling
from drarena.models.serve import ServerHandle
from drarena.models.serve import model_server as _model_server

_shared: dict[str, object] = {}


def shared_server() -> ServerHandle:
    """The process-wide server, started on first use."""
    handle = _shared.get("handle")
    if isinstance(handle, ServerHandle):
        return handle
    context = _model_server()
    handle = context.__enter__()
    _shared["handle"], _shared["context"] = handle, context
    atexit.register(stop_shared_server)
    return handle


def stop_shared_server() -> None:
    context = _shared.pop("context", None)
    _shared.pop("handle", None)
    if context is not None:
        context.__exit__(None, None, None)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def model_server() -> Iterator[ServerHandle]:
    """A running OpenAI-compatible vLLM server on loopback (the CPU one by default)."""
    yield shared_server()
    stop_shared_server()


@pytest.fixture(scope="session")
def model_role(model_server: ServerHandle) -> ModelRole:
    """A greedy role on that server, short timeouts, small completions."""
    return ModelRole(
        model=model_server.litellm_model,
        api_base=model_server.api_base,
        sampling=Sampling(temperature=0.0, max_tokens=128, seed=0),
        timeout_s=120.0,
    )
