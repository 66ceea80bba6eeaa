"""The web a run reads, frozen or live, as one object chosen once from the config.

Why: a frozen run and a live run differ in six places: how a match walks its tree (the
snapshot's pages and link graph, or today's pages crawled into a capture), where the agents'
retrievers search (the snapshot's indexes, or the live provider), whether citations are checked
(against the snapshot; live: counted only), the network guard (frozen: only the model
endpoints; live: open, unless replayed from its captures), the capture, and what run.json says
about them (the derived files' digests, or the `live` block). Asked of `config.offline` (or of
an open live session) at each place, the branches were spread over the context, execute and
the replay, and a new place had to remember every one. Here each mode is one class with the
same methods; `web_mode` picks it once, where a run is checked and opened, and the run asks it.

`FrozenMode` is here with what only frozen runs read (the replay's input check, the snapshot's
derived digests, the index traits of the prepare stage); `LiveMode` is built on
drarena.runs.live (the live session, its capture and header block).
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from drarena.config.tournament import LiveSettings, TournamentConfig
from drarena.corpus.records import Doc, Tree, TreeEdge, TreeNode
from drarena.corpus.treewalk import CONTENT_RICH_CHARS, Expander, TreeWalker
from drarena.digests import file_sha256
from drarena.errors import DrarenaError
from drarena.ledger.header import LiveBlock, RunHeader
from drarena.models.config import CacheMode, ModelsConfig
from drarena.runs.live import (
    LiveSession,
    capture_fingerprint,
    capture_path,
    finish_block,
    header_block,
    live_captures,
    preflight,
)

if TYPE_CHECKING:
    from drarena.agents.citations import UrlChecker
    from drarena.agents.toolrecord import ToolRecord
    from drarena.registry import ComponentSpec

RetrieverFactory = Callable[["ComponentSpec"], Any]


class WebMode(Protocol):
    """What a run asks of its web; FrozenMode and LiveMode answer. `config`: the run's
    config as played (a live run's with its live block); `name`: run.json's `mode`."""

    config: TournamentConfig
    name: str
    frozen_proxy: bool  # command agents reach the web through the frozen-web proxy

    @property
    def replaying(self) -> bool:
        """Reads a recorded web (a live run's captures): no network but the models'."""

    def check(self) -> None:
        """Before any work: what must answer does (a live provider's probe)."""

    def index_traits(self) -> set[str]:
        """The snapshot's indexes the agents read, for the prepare stage to build."""

    def replay(self, header: RunHeader, where: Path) -> WebMode:
        """The web a replay of the run recorded in `header` reads (checked first)."""

    def open(self, stack: contextlib.ExitStack) -> None:
        """Open what the run reads through, closed by `stack` however the run ends."""

    @property
    def expander(self) -> Expander | None:
        """What grows a tree a match walks off its edge (shared by the run's walkers)."""

    def walker(
        self, tree: Tree, rng: random.Random, pages: Callable[[], Mapping[str, Doc]]
    ) -> TreeWalker:
        """One match's walk over `tree`, seeded by the match's generator."""

    def snapshot_text(
        self, lookup: Callable[[str], str | None]
    ) -> Callable[[str], str | None] | None:
        """What a grounding judge reads of a cited page (`lookup`: the snapshot's)."""

    def url_checker(self, stack: contextlib.ExitStack) -> UrlChecker | None:
        """What tells a real citation from a fabricated one; None: counted, not checked."""

    def retriever_factory(self) -> RetrieverFactory | None:
        """What builds the agents' retrievers; None: the snapshot's indexes."""

    def tool_record(self, bound: ModelsConfig, replay_tools: bool | None) -> ToolRecord | None:
        """The record of every tool result, which a replay answers from."""

    def guard(self, bound: ModelsConfig, replaying: bool) -> contextlib.AbstractContextManager[Any]:
        """The network guard while matches play."""

    def stamp_header(self, header: RunHeader, old: RunHeader | None) -> None:
        """The header's fields of this web (`old`: the run.json a resumed run had)."""

    def check_roots(self, trees: Mapping[str, Tree]) -> None:
        """Every tree's root can be read before a match starts."""

    def finish(self, header: RunHeader, write: Callable[[RunHeader], None]) -> None:
        """After the matches, interrupted or not: what was opened is recorded in `header`."""


def web_mode(
    config: TournamentConfig,
    *,
    capture_as: str | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> WebMode:
    """The one place a run's mode is chosen from its config. `capture_as`: a live run
    captures into <live.capture_root>/<capture_as>-live-<now()>; None: it records nothing
    (`run match`, examiner-check)."""
    if config.offline:
        return FrozenMode(config)
    played = config.as_live()  # the default live block when the config has none
    assert played.live is not None
    capture = (
        None if capture_as is None else capture_path(played.live.capture_root, capture_as, now())
    )
    return LiveMode(played, capture=capture)


def model_guard(bound: ModelsConfig) -> contextlib.AbstractContextManager[Any]:
    """Only the model endpoints (and the agent endpoints the config allows by name)."""
    from drarena.models.guard import NetworkGuard, endpoint_hosts

    return NetworkGuard(
        endpoint_hosts(base for r in bound.roles.values() for base in r.endpoints())
    )


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


def index_traits(config: TournamentConfig) -> set[str]:
    """Which of the snapshot's indexes the config's retrievers read (`index:bm25`,
    `index:dense`), from the retriever registry's traits; react's default retriever is bm25."""
    from drarena.search.base import RETRIEVERS

    traits: set[str] = set()
    for agent in config.agents:
        spec = agent.args.get("retriever")
        if isinstance(spec, dict):
            traits |= RETRIEVERS.traits(str(spec.get("kind", "")))
        elif agent.kind == "react":
            traits |= RETRIEVERS.traits("bm25")
    return {t for t in traits if t.startswith("index:")}


def derived_digests(snapshot: Path) -> dict[str, str]:
    """sha256 of the files a frozen run reads besides the WARCs and trees (page text and
    links, from `drarena snapshot extract`), so a replay can check it reads the same bytes."""
    from drarena.corpus.extract import DOCS_FILE, LINKS_FILE

    return {
        name: file_sha256(snapshot / name)
        for name in (DOCS_FILE, LINKS_FILE)
        if (snapshot / name).is_file()
    }


class FrozenMode:
    """A frozen run: the snapshot answers every read, and nothing else is reached."""

    name = "offline"
    frozen_proxy = True
    replaying = False  # the snapshot is the record: a replay reads it as the run did

    def __init__(self, config: TournamentConfig) -> None:
        self.config = config

    def check(self) -> None:
        """Nothing to probe: the snapshot is checked where it is read."""

    def index_traits(self) -> set[str]:
        return index_traits(self.config)

    def replay(self, header: RunHeader, where: Path) -> FrozenMode:
        """A replay reads the snapshot's bytes the run read: checked first (one line)."""
        check_replay_inputs(header, self.config, where)
        return self

    def open(self, stack: contextlib.ExitStack) -> None:
        """Nothing opens: the snapshot's files are read as asked."""

    @functools.cached_property
    def expander(self) -> Expander | None:
        """Trees grow from the snapshot's link graph (read on the first expansion only: most
        matches never expand, and a replay that does not need it stays fast)."""
        return LazySnapshotExpander(self.config.snapshot, self.config.match.content_min_chars)

    def walker(
        self, tree: Tree, rng: random.Random, pages: Callable[[], Mapping[str, Doc]]
    ) -> TreeWalker:
        """A match's walk over the snapshot's pages (`pages`: loaded on first use)."""
        return TreeWalker(
            tree=tree,
            pages=pages(),
            rng=rng,
            expander=self.expander,
            min_chars=self.config.match.content_min_chars,
        )

    def snapshot_text(
        self, lookup: Callable[[str], str | None]
    ) -> Callable[[str], str | None] | None:
        """A grounding judge may read any snapshot page an answer cites."""
        return lookup

    def url_checker(self, stack: contextlib.ExitStack) -> UrlChecker | None:
        """A cited URL is real if the snapshot captured it (closed with the run)."""
        from drarena.agents.citations import SnapshotUrlChecker

        checker = SnapshotUrlChecker(self.config.snapshot)
        stack.callback(checker.close)
        return checker

    def retriever_factory(self) -> RetrieverFactory | None:
        return None  # the agents' default: the snapshot's indexes

    def tool_record(self, bound: ModelsConfig, replay_tools: bool | None) -> ToolRecord | None:
        """The run's tool record (with a model cache): recorded as the run goes, read back by
        a replay. `replay_tools=False`: a replay of a run recorded without one re-runs
        retrieval as before."""
        if bound.cache.mode is CacheMode.OFF or replay_tools is False:
            return None
        from drarena.agents.toolrecord import ToolRecord
        from drarena.models.cache import ToolCache

        assert bound.cache.path is not None  # validated by CacheConfig
        replaying = bound.cache.mode is CacheMode.REPLAY
        return ToolRecord(ToolCache(bound.cache.path, read_only=replaying), replaying=replaying)

    def guard(self, bound: ModelsConfig, replaying: bool) -> contextlib.AbstractContextManager[Any]:
        return model_guard(bound)

    def stamp_header(self, header: RunHeader, old: RunHeader | None) -> None:
        """The derived files' digests, which a replay checks (check_replay_inputs)."""
        header.derived_digests = derived_digests(self.config.snapshot)

    def check_roots(self, trees: Mapping[str, Tree]) -> None:
        """The snapshot's roots are there: the trees were built from them."""

    def finish(self, header: RunHeader, write: Callable[[RunHeader], None]) -> None:
        """No capture to close."""


class LiveMode:
    """A live run (or its offline replay from `replay_from`, its captures): one shared
    LiveSession serves the walker and the agents' searches and captures into `capture`."""

    name = "live"
    frozen_proxy = False

    def __init__(
        self,
        config: TournamentConfig,
        *,
        capture: Path | None = None,
        replay_from: Sequence[Path] = (),
    ) -> None:
        self.config = config
        self.replay_from = tuple(replay_from)
        self.capture = None if self.replay_from else capture
        self._session: LiveSession | None = None

    @property
    def live(self) -> LiveSettings:
        assert self.config.live is not None  # web_mode gives a live run its live block
        return self.config.live

    @property
    def replaying(self) -> bool:
        return bool(self.replay_from)

    @property
    def session(self) -> LiveSession:
        """The open session (after `open`)."""
        assert self._session is not None, "LiveMode.open first"
        return self._session

    def check(self) -> None:
        """The search provider answers a probe (not for a replay: it reads its captures)."""
        if not self.replaying:
            preflight(self.live)

    def index_traits(self) -> set[str]:
        return set()  # the live provider searches; no index is read

    def replay(self, header: RunHeader, where: Path) -> LiveMode:
        """The same run answered from its captures (run.json's live block), no network."""
        return LiveMode(self.config, replay_from=live_captures(where, header))

    def open(self, stack: contextlib.ExitStack) -> None:
        self._session = LiveSession(
            self.live, capture_to=self.capture, replay_from=self.replay_from
        )
        stack.callback(self._session.close)  # idempotent: finish may close it first

    @property
    def expander(self) -> Expander | None:
        """None: a live walker grows its tree from today's web (its own expander)."""
        return None

    def walker(
        self, tree: Tree, rng: random.Random, pages: Callable[[], Mapping[str, Doc]]
    ) -> TreeWalker:
        """Today's page texts, expansion crawling into the capture (no snapshot page read)."""
        return self.session.walker(tree, rng, self.config.match.content_min_chars)

    def snapshot_text(
        self, lookup: Callable[[str], str | None]
    ) -> Callable[[str], str | None] | None:
        """None: an answer's cited page is today's, not the snapshot's."""
        return None

    def url_checker(self, stack: contextlib.ExitStack) -> UrlChecker | None:
        return None  # counted, not checked (see drarena.runs.live)

    def retriever_factory(self) -> RetrieverFactory | None:
        return self.session.retriever_factory(self.config.snapshot, self.config.index_root)

    def tool_record(self, bound: ModelsConfig, replay_tools: bool | None) -> ToolRecord | None:
        return None  # the capture is the record of what the searches read

    def guard(self, bound: ModelsConfig, replaying: bool) -> contextlib.AbstractContextManager[Any]:
        """Open while it plays live; a replay reaches only the model endpoints."""
        return model_guard(bound) if replaying else contextlib.nullcontext()

    def stamp_header(self, header: RunHeader, old: RunHeader | None) -> None:
        """The live block: provider, fetch settings and every capture (a resumed run keeps
        the parts before; a replay lists the captures it reads)."""
        if self.replaying:
            read = [
                {"path": str(p), "fingerprint": capture_fingerprint(p)} for p in self.replay_from
            ]
            header.live = LiveBlock.model_validate(
                header_block(self.live, read, None, replayed=True)
            )
            return
        earlier = (
            [] if old is None or old.live is None else [c.as_json() for c in old.live.captures]
        )
        header.live = LiveBlock.model_validate(header_block(self.live, earlier, self.capture))

    def check_roots(self, trees: Mapping[str, Tree]) -> None:
        self.session.check_roots(list(trees.values()))

    def finish(self, header: RunHeader, write: Callable[[RunHeader], None]) -> None:
        """The capture closed (even when the run is interrupted) and written into the
        header's live block."""
        assert header.live is not None  # stamp_header wrote it
        header.live = LiveBlock.model_validate(
            finish_block(header.live.as_json(), self.session.close())
        )
        write(header)


def check_replay_inputs(header: RunHeader, config: TournamentConfig, where: Path) -> None:
    """The snapshot, its derived files (page text, links, trees) and the prompt templates must
    be the bytes the run read: otherwise a replay would ask other questions and miss its
    cache. One line naming what differs and how to rebuild it."""
    from drarena.corpus.trees import TREES_DIR
    from drarena.examiner.templates import used_hashes
    from drarena.web.warc.snapshot import Snapshot

    snap = config.snapshot
    if not (snap / "manifest.json").is_file():
        raise DrarenaError(
            f"{where}: the run's snapshot {snap} is not here (a relative path "
            "is read from the current folder: replay from the folder the run "
            "was made in, e.g. the repository root)"
        )
    with Snapshot.open(snap) as opened:
        fingerprint = opened.fingerprint
    if fingerprint != header.snapshot_fingerprint:
        raise DrarenaError(
            f"{where}: snapshot {snap} has fingerprint {fingerprint}, the run "
            f"used {header.snapshot_fingerprint}"
        )
    for name, digest in sorted(header.derived_digests.items()):
        path = snap / name
        if not path.is_file() or file_sha256(path) != digest:
            state = "missing" if not path.is_file() else "not the file the run read"
            raise DrarenaError(
                f"{where}: {path} is {state} ({digest[:23]}...); "
                f"run `drarena snapshot extract {snap}`"
            )
    trees_hint = (
        f"drarena snapshot trees {snap} --count {config.trees.built()} --seed {config.trees.seed}"
    )
    for tree, digest in sorted(header.trees.items()):
        path = snap / TREES_DIR / f"{tree}.json"
        if not path.is_file() or file_sha256(path) != digest:
            state = "missing" if not path.is_file() else "not the tree the run played"
            raise DrarenaError(f"{where}: tree {path} is {state}; run `{trees_hint}`")
    recorded = header.prompt_hashes if header.has("prompt_hashes") else None
    made = header.git_revision if header.has("git_revision") else "?"
    if recorded is not None and recorded != used_hashes(config.match.template_specs()):
        raise DrarenaError(
            f"{where}: the Examiner's prompt templates differ from the run's "
            f"(made at drarena revision {made})"
        )
