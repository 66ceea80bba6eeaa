"""The run context: a config resolved into everything a run needs, in one place.

Why: a tournament, a single match, a placement (add-agent), a replay and a drift-run all need
the same wiring: the trees and pages loaded, a model server started (or the exact models of a
recorded run bound), the model cache and tool record opened, the live web session (live mode),
the agents built, and the network guard. Written out in each command it drifted; here it is
written once, and `open_run` closes what it opened (citation checker, live capture, tool
record) however the run ends.

A run is made in three steps, in this order: `check_config` (one line for a config that cannot
run, before any work), the prepare stage for a run that plays new matches
(drarena.runs.prepare: the snapshot's derived files), then `open_run`, which only opens.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drarena.agents.base import Agent
from drarena.corpus.records import Doc, Tree, TreeEdge, TreeNode
from drarena.corpus.terms import TermStats
from drarena.corpus.treewalk import CONTENT_RICH_CHARS, Expander, TreeWalker
from drarena.ledger.header import RunHeader
from drarena.models.client import ModelClient
from drarena.models.config import CacheMode, ModelsConfig
from drarena.runs.config import TournamentConfig
from drarena.runs.session import (
    bind_roles,
    build_header,
    check_components,
    load_pages,
    load_trees,
    model_endpoint,
    page_terms,
)

if TYPE_CHECKING:
    from drarena.agents.citations import SnapshotUrlChecker
    from drarena.agents.toolrecord import ToolRecord
    from drarena.arena.tournament import Tournament
    from drarena.ledger.folder import RunDir
    from drarena.runs.live import LiveSession


class LazySnapshotExpander:
    """A SnapshotExpander whose link graph (docs.jsonl and links.jsonl: tens of thousands of
    lines) is built on the first expansion, not when the run starts."""

    def __init__(self, snapshot: Path, min_chars: int = CONTENT_RICH_CHARS) -> None:
        self.snapshot = snapshot
        self.min_chars = min_chars
        self._real: Expander | None = None

    def expand(
        self, tree: Tree, parent: str, need: int, rng: random.Random
    ) -> list[tuple[TreeNode, TreeEdge]]:
        if self._real is None:
            from drarena.corpus.extract import load_docs, load_links
            from drarena.corpus.trees import LinkGraph
            from drarena.corpus.treewalk import SnapshotExpander

            self._real = SnapshotExpander(
                LinkGraph.build(load_docs(self.snapshot), load_links(self.snapshot)),
                self.min_chars,
            )
        return self._real.expand(tree, parent, need, rng)


def fixed_models(
    models: ModelsConfig, fixed_roles: Mapping[str, Mapping[str, Any]]
) -> ModelsConfig:
    """The config's roles bound to the exact models and endpoints a recorded run used."""
    return models.model_copy(
        update={
            "roles": {
                k: r.model_copy(
                    update={
                        "model": fixed_roles[k]["model"],
                        "api_base": fixed_roles[k]["api_base"],
                    }
                )
                for k, r in models.roles.items()
            }
        }
    )


@dataclasses.dataclass
class RunContext:
    """What a run is played with. Trees and pages load on first use (a drift-run asks a
    finished run's questions again and needs neither)."""

    config: TournamentConfig
    bound: ModelsConfig
    client: ModelClient
    agents: dict[str, Agent]
    live: LiveSession | None
    tool_record: ToolRecord | None
    replaying: bool  # answers come from a record: the guard stays on even for a live run

    @functools.cached_property
    def trees(self) -> dict[str, Tree]:
        return load_trees(self.config)

    @functools.cached_property
    def pages(self) -> dict[str, Doc]:
        return load_pages(self.config)

    @functools.cached_property
    def terms(self) -> TermStats:
        """The snapshot's term statistics (grounded tasks, the evidence judge), built on
        first use: a run whose judge and task generator read none never builds them."""
        return page_terms(self.pages.values())

    @functools.cached_property
    def _by_url(self) -> dict[str, Doc]:
        out: dict[str, Doc] = {}
        for doc in self.pages.values():
            for url in (doc.url, *doc.aliases):
                out.setdefault(url, doc)
        return out

    def page_text(self, url: str) -> str | None:
        """A snapshot page's text by URL (or a URL that redirects to it); None if none."""
        doc = self._by_url.get(url)
        return None if doc is None else doc.contents

    @functools.cached_property
    def expander(self) -> Expander | None:
        """Frozen runs grow trees from the snapshot's link graph (read on the first expansion
        only: most matches never expand, and a replay that does not need it stays fast);
        live runs grow them from today's web."""
        if self.live is not None:
            return None
        return LazySnapshotExpander(self.config.snapshot, self.config.match.content_min_chars)

    def walker(self, tree: Tree, rng: random.Random) -> TreeWalker:
        """A fresh walk over `tree` for one match, seeded by the match's generator."""
        min_chars = self.config.match.content_min_chars
        if self.live is not None:
            return self.live.walker(tree, rng, min_chars)
        return TreeWalker(
            tree=tree, pages=self.pages, rng=rng, expander=self.expander, min_chars=min_chars
        )

    def guard(self) -> contextlib.AbstractContextManager[Any]:
        """Frozen runs and offline replays of live runs reach only the model endpoints
        (and the agent endpoints the config allows by name)."""
        if not self.config.offline and not self.replaying:
            return contextlib.nullcontext()
        from drarena.models.guard import NetworkGuard, endpoint_hosts

        return NetworkGuard(
            endpoint_hosts(base for r in self.bound.roles.values() for base in r.endpoints())
        )

    def header(self, now: datetime | None = None) -> RunHeader:
        """The run header: resolved config, bound roles, fingerprints, versions."""
        return build_header(self.config, self.bound, self.trees, now)

    def tournament(self, run: RunDir) -> Tournament:
        from drarena.arena.tournament import Tournament

        c = self.config
        return Tournament(
            run,
            c.seed,
            self.agents,
            self.trees,
            self.pages,
            self.client,
            c.match,
            c.swiss_rounds,
            c.concurrency,
            self.expander,
            walker_factory=self.walker,
            early_start=c.early_start,
            warm_up=not self.replaying,
            terms=lambda: self.terms,
            page_text=self.page_text if self.live is None else None,
        )


def check_config(
    config: TournamentConfig, *, live_replay: Sequence[Path] | None = None
) -> TournamentConfig:
    """`config` as a run plays it, checked before any work (the prepare stage included):
    unknown components are one line (session.check_components); a live run gets the default
    live block when it has none, and its search provider must answer a probe (not for a
    replay from `live_replay`, the captures of a finished live run)."""
    check_components(config)
    if not config.offline:
        config = config.as_live()  # the default live block when the config has none
        assert config.live is not None
        if live_replay is None:
            from drarena.runs.live import preflight

            preflight(config.live)
    return config


@contextlib.contextmanager
def open_run(
    config: TournamentConfig,
    *,
    cache_path: Path,
    cache_mode: CacheMode,
    serve: bool = True,
    model: str | None = None,
    fixed_roles: Mapping[str, Mapping[str, Any]] | None = None,
    live_capture: Path | None = None,
    live_replay: Sequence[Path] | None = None,
    replay_tools: bool | None = None,
    agent_names: set[str] | None = None,
    backend: Any = None,
    on_endpoint: Callable[[str | None, str | None], None] | None = None,
    private: Sequence[Path] = (),
) -> Iterator[RunContext]:
    """Resolve `config` into a RunContext; everything opened is closed on exit.

    `config` as check_config returned it; a run that reads trees and indexes built from the
    snapshot expects the prepare stage to have run (drarena.runs.prepare): opening builds
    nothing on disk. `fixed_roles` (a replay): the recorded run's models and endpoints, no
    server started. `live_capture`: live mode captures into this new snapshot folder;
    `live_replay`: the captures of a finished live run answer every read instead.
    `replay_tools` False: a run recorded before tool records existed re-runs retrieval.
    `agent_names`: build only these agents. `on_endpoint(api_base, model)`: told which server
    `served` roles use. `private`: the run's own folders, hidden from command agents with the
    snapshot and its index (AgentContext.private_paths)."""
    from drarena.agents.citations import SnapshotUrlChecker
    from drarena.agents.registry import AgentContext, build_agent

    live_mode = not config.offline
    if live_mode:
        config = config.as_live()  # as check_config returns it (no work: a copy)
    endpoint: contextlib.AbstractContextManager[tuple[str | None, str | None]] = (
        contextlib.nullcontext((None, None))
        if fixed_roles is not None
        else model_endpoint(config, serve, model)
    )
    with contextlib.ExitStack() as stack:
        api_base, served = stack.enter_context(endpoint)
        if on_endpoint is not None:
            on_endpoint(api_base, served)
        models = config.models if fixed_roles is None else fixed_models(config.models, fixed_roles)
        bound = bind_roles(models, api_base, served, cache_path, cache_mode)
        live: LiveSession | None = None
        if live_mode:
            from drarena.runs.live import LiveSession

            assert config.live is not None
            live = LiveSession(
                config.live,
                capture_to=None if live_replay else live_capture,
                replay_from=live_replay or (),
            )
            stack.callback(live.close)  # idempotent: the caller may close it first
        record = _tool_record(config, bound, replay_tools)
        if record is not None:
            stack.callback(record.close)
        client = ModelClient(bound, backend=backend)
        hidden = (*private, config.snapshot, config.index_root / config.snapshot.name)
        checker: SnapshotUrlChecker | None = None
        if live is None:
            checker = SnapshotUrlChecker(config.snapshot)
            stack.callback(checker.close)
            context = AgentContext(
                client=client,
                snapshot_dir=config.snapshot,
                index_root=config.index_root,
                url_checker=checker,
                tool_record=record,
                private_paths=hidden,
            )
        else:  # citations counted, not checked (see drarena.runs.live)
            context = AgentContext(
                client=client,
                snapshot_dir=config.snapshot,
                index_root=config.index_root,
                url_checker=None,
                retriever_factory=live.retriever_factory(config.snapshot, config.index_root),
                private_paths=hidden,
            )
        agents = {
            a.name: build_agent(a.spec(), context, name=a.name)
            for a in config.agents
            if agent_names is None or a.name in agent_names
        }
        yield RunContext(
            config,
            bound,
            client,
            agents,
            live,
            record,
            replaying=cache_mode is CacheMode.REPLAY or bool(live_replay),
        )


def _tool_record(
    config: TournamentConfig, bound: ModelsConfig, replay_tools: bool | None
) -> ToolRecord | None:
    """The run's tool record (frozen runs with a model cache): recorded as the run goes,
    read back by a replay. `replay_tools=False`: a replay of a run recorded without one
    re-runs retrieval as before."""
    if not config.offline or bound.cache.mode is CacheMode.OFF or replay_tools is False:
        return None
    from drarena.agents.toolrecord import ToolRecord
    from drarena.models.cache import ToolCache

    assert bound.cache.path is not None  # validated by CacheConfig
    replaying = bound.cache.mode is CacheMode.REPLAY
    return ToolRecord(ToolCache(bound.cache.path, read_only=replaying), replaying=replaying)
