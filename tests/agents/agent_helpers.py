"""Agent unit-test helpers: the scripted model backend (control flow only) and an in-memory
retriever. Results from them say nothing about any model or search engine."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from drarena.agents.registry import AgentContext
from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy
from drarena.models.scripted import ScriptedBackendForTests, Step, reply
from drarena.models.types import ToolCall
from drarena.records import Hit
from drarena.search.docstore import PageText

ADAPTERS = Path(__file__).resolve().parents[2] / "configs" / "agents"


def load_adapter(script: str) -> ModuleType:
    """configs/agents/<script> as a module, for its pure functions: the adapters run in their
    harness's own venv, so these tests never import the harness itself. The folder goes on
    sys.path, as it does for the script run directly, so `import adapter_common` resolves."""
    if str(ADAPTERS) not in sys.path:
        sys.path.insert(0, str(ADAPTERS))
    spec = importlib.util.spec_from_file_location(script.removesuffix(".py"), ADAPTERS / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Python source for a command agent's script: dials a TEST-NET-1 address (RFC 5737: never
# routed) directly, ignoring HTTP(S)_PROXY, and leaves in `dialled` what happened: an errno
# name (ENETUNREACH inside drarena's network namespace) or "connected". The script defines
# DIAL_TIMEOUT_S first. Shared by the isolation and broken-agent tournament tests.
DIAL_TEST_NET = """
import errno, socket
s = socket.socket()
s.settimeout(DIAL_TIMEOUT_S)
try:
    s.connect(("192.0.2.1", 80))
    dialled = "connected"
except OSError as exc:
    dialled = errno.errorcode.get(exc.errno, str(exc)) if exc.errno else type(exc).__name__
"""

PAGES = {
    "http://site.test/asyncio": (
        "asyncio",
        "asyncio is a library to write concurrent code using the async/await syntax. " * 60,
    ),
    "http://site.test/json": ("json", "json encodes and decodes JSON documents. " * 5),
}


def call(name: str, arguments: Any, call_id: str = "c1") -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=call_id, name=name, arguments=text)


def tool(name: str, arguments: Any, call_id: str = "c1", **kw: Any) -> Any:
    return reply(tool_calls=(call(name, arguments, call_id),), **kw)


class MemoryRetrieverForTests:
    """An in-memory Retriever over PAGES for control-flow tests (not a search engine)."""

    name = "memory"

    def __init__(
        self, pages: dict[str, tuple[str, str]] | None = None, fail_search: bool = False
    ) -> None:
        self.pages = PAGES if pages is None else pages
        self.fail_search = fail_search
        self.queries: list[str] = []

    def search(self, query: str, k: int = 10) -> list[Hit]:
        self.queries.append(query)
        if self.fail_search:
            raise DrarenaError("bm25: the index is unreadable")
        words = set(query.lower().split())
        scored = sorted(
            ((sum(w in text.lower() for w in words), url) for url, (_, text) in self.pages.items()),
            key=lambda s: (-s[0], s[1]),
        )
        return [
            Hit(
                docid=f"doc-{url.rsplit('/', 1)[1]}",
                url=url,
                title=self.pages[url][0],
                snippet=self.pages[url][1][:80],
                score=float(score),
                rank=rank,
            )
            for rank, (score, url) in enumerate(scored[:k], 1)
            if score > 0
        ]

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        for url, (title, text) in self.pages.items():
            if url_or_docid in (url, f"doc-{url.rsplit('/', 1)[1]}"):
                end = min(offset + max_chars, len(text))
                return PageText(
                    f"doc-{url.rsplit('/', 1)[1]}",
                    url,
                    title,
                    text[offset:end],
                    offset,
                    end if end < len(text) else None,
                    len(text),
                )
        raise DrarenaError(f"unknown docid or URL {url_or_docid!r} in snapshot memory")


def scripted_context(
    steps: list[Step], retriever: Any = None, known: set[str] | None = None
) -> tuple[AgentContext, ScriptedBackendForTests]:
    backend = ScriptedBackendForTests(steps)
    config = ModelsConfig(
        roles={"agent": ModelRole(model="scripted")}, retry=RetryPolicy(max_attempts=1)
    )
    client = ModelClient(config, backend=backend)
    known_urls = set(PAGES) if known is None else known
    ticks = {"t": 0.0}

    def clock() -> float:
        ticks["t"] += 0.5
        return ticks["t"]

    retriever = retriever if retriever is not None else MemoryRetrieverForTests()
    context = AgentContext(
        client=client,
        url_checker=known_urls.__contains__,
        clock=clock,
        retriever_factory=lambda spec: retriever,
    )
    return context, backend
