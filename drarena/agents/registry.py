"""Agent kinds named in config as {kind, args}, and what every agent is built with.

Why a context object: agents need the model client, the snapshot (for citation checks and
retrievers) and a clock; passing them the same way to every kind keeps configs to the agent's
own knobs, and one retriever per {kind, args} is shared by all agents of a process.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from drarena.agents.base import Agent
from drarena.agents.citations import UrlChecker
from drarena.errors import DrarenaError
from drarena.registry import ComponentSpec, M, Registry, RegistryError, parse_args

if TYPE_CHECKING:
    from drarena.agents.toolrecord import ToolRecord
    from drarena.models.client import ModelClient
    from drarena.search.base import Retriever

AGENTS: Registry[Agent] = Registry("agent", group="drarena.agents")
AGENTS.register("react", "drarena.agents.react:build")
AGENTS.register("closed_book", "drarena.agents.baselines:build_closed_book")
AGENTS.register("rag", "drarena.agents.baselines:build_rag")
AGENTS.register("oracle", "drarena.agents.baselines:build_oracle")
AGENTS.register("null", "drarena.agents.baselines:build_null")
AGENTS.register("command", "drarena.agents.external:build_command")
AGENTS.register("http", "drarena.agents.external:build_http")


@dataclasses.dataclass
class AgentContext:
    """Shared by the agents of one run: model client, snapshot, index, clock.

    `url_checker` flags fabricated citations (None: not checked, e.g. live mode).
    `retriever_factory` builds retrievers; tests inject one, the default opens the index.
    `tool_record`: every search and open result goes through the run's record; replaying,
    retrievers answer from it alone and neither the factory nor the index is ever used.
    `private_paths`: drarena's folders that command agents must not read (the run folder,
    the snapshot, its index), hidden from them where the sandbox can (drarena.agents.sandbox).
    """

    client: ModelClient | None = None
    snapshot_dir: Path | None = None
    index_root: Path = Path("index")
    url_checker: UrlChecker | None = None
    search_url: str | None = None
    clock: Callable[[], float] = time.monotonic
    retriever_factory: Callable[[ComponentSpec], Retriever] | None = None
    tool_record: ToolRecord | None = None
    private_paths: tuple[Path, ...] = ()
    _retrievers: dict[str, Retriever] = dataclasses.field(default_factory=dict)

    def model_client(self, kind: str) -> ModelClient:
        if self.client is None:
            raise DrarenaError(f"agent {kind}: no model client configured")
        return self.client

    def retriever(self, spec: ComponentSpec) -> Retriever:
        key = spec.model_dump_json()
        if key not in self._retrievers:
            if self.tool_record is None:
                self._retrievers[key] = self._build_retriever(spec)
            else:
                self._retrievers[key] = self.tool_record.retriever(
                    spec, lambda: self._build_retriever(spec)
                )
        return self._retrievers[key]

    def _build_retriever(self, spec: ComponentSpec) -> Retriever:
        if self.retriever_factory is not None:
            return self.retriever_factory(spec)
        if self.snapshot_dir is None:
            raise DrarenaError(f"retriever {spec.kind}: no snapshot configured")
        from drarena.search.base import build_retriever

        return build_retriever(spec, self.snapshot_dir, self.index_root)


def parse_agent_args(model: type[M], args: dict[str, Any], kind: str) -> M:
    return parse_args(model, args, f"agent {kind}")


# The args model of each built-in kind, so a whole config is checked before anything is built
# or written into a run folder (a plugin kind's args are checked when it is built).
AGENT_ARGS = {
    "react": "drarena.agents.react:ReactArgs",
    "closed_book": "drarena.agents.baselines:ClosedBookArgs",
    "rag": "drarena.agents.baselines:RagArgs",
    "oracle": "drarena.agents.baselines:OracleArgs",
    "null": "drarena.agents.baselines:NullArgs",
    "command": "drarena.agents.external:CommandArgs",
    "http": "drarena.agents.external:HttpArgs",
}


def check_agent_args(kind: str, args: dict[str, Any], where: str) -> None:
    """`args` validated by the args model of `kind`, as its factory will validate them; the
    first problem as one line naming `where` (e.g. "agents.rag-dense") and the field."""
    target = AGENT_ARGS.get(kind)
    if target is None:
        return
    module, _, attr = target.partition(":")
    parse_args(getattr(importlib.import_module(module), attr), args, f"{where} ({kind})")


def build_agent(
    spec: ComponentSpec | dict[str, Any], context: AgentContext, name: str | None = None
) -> Agent:
    """An agent from {kind, args}; `name` (default: the kind) labels its answers."""
    try:
        parsed = spec if isinstance(spec, ComponentSpec) else ComponentSpec.model_validate(spec)
        factory = AGENTS.factory(parsed.kind)
        AGENTS.check_args(parsed, ("context", "name"))
    except (RegistryError, ValidationError) as exc:
        raise DrarenaError(f"agent config: {str(exc).splitlines()[0]}") from None
    return factory(context=context, name=name or parsed.kind, **parsed.args)
