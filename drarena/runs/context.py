"""The run context: a config resolved into everything a run needs, in one place.

Why: a tournament, a single match, a placement (add-agent), a replay and a drift-run all need
the same wiring: the trees and pages loaded, a model server started (or the exact models of a
recorded run bound), the model cache and tool record opened, the run's web opened (frozen or
live: drarena.runs.webmode, which also gives the walker, the agents' retrievers and citation
checker, and the network guard), and the agents built. Written out in each command it
drifted; here it is written once, and `open_run` closes what it opened (citation checker, live
capture, tool record) however the run ends.

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
from collections.abc import Set as AbstractSet
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drarena.agents.base import Agent
from drarena.config.tournament import TournamentConfig
from drarena.corpus.records import Doc, Tree
from drarena.corpus.terms import TermStats
from drarena.corpus.treewalk import Expander, TreeWalker
from drarena.ledger.header import RunHeader
from drarena.models.client import ModelClient
from drarena.models.config import CacheMode, ModelsConfig
from drarena.runs.session import (
    bind_roles,
    build_header,
    check_components,
    load_pages,
    load_trees,
    model_endpoint,
    page_terms,
)
from drarena.runs.webmode import WebMode, web_mode
from drarena.web.warc.urls import canonicalize_url, other_scheme

if TYPE_CHECKING:
    from drarena.agents.toolrecord import ToolRecord
    from drarena.arena.tournament import Tournament
    from drarena.ledger.folder import RunDir


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
    web: WebMode  # frozen or live: asked, never branched on
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
        """A snapshot page's text by URL (or a URL that redirects to it), as written, then
        canonicalized, then under the other scheme (the page the proxy served for it, so a
        citation the check counts valid is one the judge can read); None if none."""
        doc = self._by_url.get(url)
        if doc is None:
            try:
                canonical = canonicalize_url(url)
            except ValueError:
                return None
            other = other_scheme(canonical)
            doc = self._by_url.get(canonical) or (self._by_url.get(other) if other else None)
        return None if doc is None else doc.contents

    @property
    def snapshot_text(self) -> Callable[[str], str | None] | None:
        """What a grounding judge reads of a cited page: the snapshot's (`page_text`) in a
        frozen run, none in a live one (the web's choice)."""
        return self.web.snapshot_text(self.page_text)

    @functools.cached_property
    def expander(self) -> Expander | None:
        """The web's tree expander (frozen: the snapshot's link graph, read on the first
        expansion only; live: None, each walker grows its tree from today's web)."""
        return self.web.expander

    def walker(self, tree: Tree, rng: random.Random) -> TreeWalker:
        """A fresh walk over `tree` for one match, seeded by the match's generator."""
        return self.web.walker(tree, rng, lambda: self.pages)

    def guard(self) -> contextlib.AbstractContextManager[Any]:
        """Frozen runs and offline replays of live runs reach only the model endpoints
        (and the agent endpoints the config allows by name); the web says which."""
        return self.web.guard(self.bound, self.replaying)

    def header(self, now: datetime | None = None) -> RunHeader:
        """The run header: resolved config, bound roles, fingerprints, versions."""
        return build_header(self.config, self.bound, self.trees, now, mode=self.web.name)

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
            page_text=self.snapshot_text,
        )


def check_config(config: TournamentConfig, *, web: WebMode | None = None) -> TournamentConfig:
    """`config` as a run plays it, checked before any work (the prepare stage included):
    unknown components are one line (session.check_components); a live run gets the default
    live block when it has none, and its search provider must answer a probe (not for a
    replay, which reads the captures of a finished live run). `web`: the run's (default:
    chosen from `config`)."""
    check_components(config)
    web = web or web_mode(config)
    web.check()
    return web.config


@dataclasses.dataclass(frozen=True)
class OpenOptions:
    """How `open_run` opens a config: the model cache, the models, the web and the agents.

    `cache_path`, `cache_mode`: the model cache (and the tool record beside it). `serve`: start
    a model server for `served` roles (`model`: the one it serves, default the config's).
    `fixed_roles` (a replay): the recorded run's models and endpoints, no server started.
    `web`: the run's web, chosen from the config (default: chosen by open_run, a live one
    capturing nothing); a live one opened there captures into its new snapshot folder or
    answers every read from a finished run's captures. `replay_tools` False: a run recorded
    before tool records existed re-runs retrieval. `agent_names`: build only these agents
    (None: all). `backend`: the model backend (tests inject a scripted one; default litellm).
    `on_endpoint(api_base, model)`: told which server `served` roles use. `private`: the
    run's own folders, hidden from command agents with the snapshot and its index
    (AgentContext.private_paths)."""

    cache_path: Path
    cache_mode: CacheMode
    serve: bool = True
    model: str | None = None
    fixed_roles: Mapping[str, Mapping[str, Any]] | None = None
    web: WebMode | None = None
    replay_tools: bool | None = None
    agent_names: AbstractSet[str] | None = None
    backend: Any = None
    on_endpoint: Callable[[str | None, str | None], None] | None = None
    private: Sequence[Path] = ()


@contextlib.contextmanager
def open_run(config: TournamentConfig, options: OpenOptions) -> Iterator[RunContext]:
    """Resolve `config` into a RunContext; everything opened is closed on exit.

    `config` as check_config returned it; a run that reads trees and indexes built from the
    snapshot expects the prepare stage to have run (drarena.runs.prepare): opening builds
    nothing on disk. OpenOptions says what each option does."""
    from drarena.agents.registry import AgentContext, build_agent

    o = options
    web = o.web or web_mode(config)
    config = web.config  # as check_config returns it (a live run's with its live block)
    endpoint: contextlib.AbstractContextManager[tuple[str | None, str | None]] = (
        contextlib.nullcontext((None, None))
        if o.fixed_roles is not None
        else model_endpoint(config, o.serve, o.model)
    )
    with contextlib.ExitStack() as stack:
        api_base, served = stack.enter_context(endpoint)
        if o.on_endpoint is not None:
            o.on_endpoint(api_base, served)
        models = (
            config.models if o.fixed_roles is None else fixed_models(config.models, o.fixed_roles)
        )
        bound = bind_roles(models, api_base, served, o.cache_path, o.cache_mode)
        web.open(stack)  # a live session: closed on exit (finish may close it first)
        record = web.tool_record(bound, o.replay_tools)
        if record is not None:
            stack.callback(record.close)
        client = ModelClient(bound, backend=o.backend)
        context = AgentContext(
            client=client,
            snapshot_dir=config.snapshot,
            index_root=config.index_root,
            url_checker=web.url_checker(stack),  # live: counted, not checked
            retriever_factory=web.retriever_factory(),
            tool_record=record,
            private_paths=(*o.private, config.snapshot, config.index_root / config.snapshot.name),
        )
        agents = {
            a.name: build_agent(a.spec(), context, name=a.name)
            for a in config.agents
            if o.agent_names is None or a.name in o.agent_names
        }
        yield RunContext(
            config,
            bound,
            client,
            agents,
            web,
            record,
            replaying=o.cache_mode is CacheMode.REPLAY or web.replaying,
        )
