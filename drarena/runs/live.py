"""Live mode of a tournament: one shared LiveWeb for everything that reads the web.

Why one: the agents' searches and page reads, the Examiner's tree pages and tree expansion
all go through the same `drarena.live.web.LiveWeb`, so every byte the run saw lands in one
capture snapshot (WARC + CDXJ + manifest) and the run can be replayed offline from it:
`drarena run replay RUN` opens the same session with `replay_from=` the run's captures, answers
every fetch from them and makes no network connection. A run opens its session through its
web mode (drarena.runs.webmode.LiveMode), which gives the rest of the run what is built here.

Citations are not checked in live mode (`url_checker=None`: counted, `checked: false`):
"found in the archive" has no stable meaning while the archive is being written, and a
check against the growing capture would differ between the run and its replay.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from drarena.config.tournament import LiveSettings
from drarena.corpus.records import Tree, TreePage
from drarena.corpus.treewalk import CONTENT_RICH_CHARS, CannotExpand, Expander, TreeWalker
from drarena.errors import DrarenaError
from drarena.ledger.header import Capture, RunHeader
from drarena.registry import ComponentSpec

STAMP = "%Y%m%dT%H%M%SZ"


def capture_path(root: Path, run_name: str, now: datetime) -> Path:
    """<root>/<run>-live-<UTC time>; a suffix keeps a second part started in the same
    second apart."""
    base = root / f"{run_name}-live-{now.astimezone(UTC).strftime(STAMP)}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def web_settings(live: LiveSettings) -> Any:
    """`live.web` checked against LiveWebSettings; a bad field is one line naming it."""
    from drarena.live.web import LiveWebSettings

    try:
        return LiveWebSettings.model_validate(live.web)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise DrarenaError(f"live.web.{field}: {err['msg']}") from None


def preflight(live: LiveSettings) -> None:
    """Before anything starts: the provider is known, its API key is set, and it answers
    a probe search (not recorded); otherwise one line."""
    from drarena.live.providers import preflight as provider_preflight
    from drarena.live.web import LiveWeb

    web = LiveWeb(web_settings(live), capture_dir=None, name="preflight")
    try:
        problem = provider_preflight(live.provider.model_dump(mode="json"), web)
    finally:
        web.close()
    if problem:
        raise DrarenaError(f"live.provider: {problem}")


def capture_fingerprint(path: Path) -> str | None:
    from drarena.web.warc.snapshot import Snapshot

    if not (path / "manifest.json").is_file():
        return None
    with Snapshot.open(path) as snap:
        return snap.fingerprint


class LivePages:
    """Tree pages as they are today, fetched once per run through the shared web (so they
    are captured) and kept by URL: every match of the run asks about the same text."""

    def __init__(self, web: Any) -> None:
        self._web = web
        self._memo: dict[str, tuple[str, str]] = {}

    def get(self, url: str) -> tuple[str, str]:
        """(title, text) of `url`; a page that cannot be fetched is a DrarenaError."""
        if url not in self._memo:
            page = self._web.page(url)
            self._memo[url] = (page.title, page.text)
        return self._memo[url]


@dataclasses.dataclass
class LiveTreeWalker(TreeWalker):
    """A TreeWalker whose page texts come from the live web, not docs.jsonl.

    The tree's shape (and the node sizes that pick content-rich nodes) stays the frozen
    one, so both modes walk the same nodes; the texts the Examiner reads are today's. A page
    the live web no longer serves makes the round void ("targets: live page ...")."""

    live: LivePages = dataclasses.field(kw_only=True)

    def page(self, node_id: str) -> TreePage:
        node = self.tree.node(node_id)
        try:
            title, text = self.live.get(node.url)
        except DrarenaError as exc:
            raise CannotExpand(f"live page {node.url}: {exc}", 1, 0) from None
        edge = self.tree.edge_to(node_id)
        return TreePage(
            id=node.id,
            url=node.url,
            title=title or node.title,
            text=text,
            depth=node.depth,
            relation=edge.relation if edge else "root",
            anchor=edge.anchor if edge else "",
        )

    def _rich_children(self, node_id: str, exclude: set[str]) -> list[Any]:
        """Children of the frozen tree's shape (no snapshot page is looked up)."""
        return [
            c for c in self.tree.children(node_id) if c.id not in exclude and self.content_rich(c)
        ]


class ReplayWebs:
    """Several captures answered as one (a resumed live run has one capture per part): the
    first capture, in run order, that holds a URL answers it."""

    def __init__(self, webs: Sequence[Any]) -> None:
        self._webs = list(webs)

    def _first(self, method: str, *args: Any) -> Any:
        miss: DrarenaError | None = None
        for web in self._webs:
            try:
                return getattr(web, method)(*args)
            except DrarenaError as exc:
                miss = exc
        assert miss is not None
        raise miss

    def fetch(self, url: str) -> Any:
        return self._first("fetch", url)

    def fetch_api(self, url: str, headers: Any = None, *, secret: Any = ()) -> Any:
        miss: DrarenaError | None = None
        for web in self._webs:
            try:
                return web.fetch_api(url, headers, secret=secret)
            except DrarenaError as exc:
                miss = exc
        assert miss is not None
        raise miss

    def page(self, url: str) -> Any:
        return self._first("page", url)

    def close(self) -> Path | None:
        for web in self._webs:
            web.close()
        return None

    def __getattr__(self, name: str) -> Any:  # settings and the like: the first capture's
        return getattr(self._webs[0], name)


class LiveSession:
    """The shared web of one live run (or of its offline replay) and what is built on it."""

    def __init__(
        self, live: LiveSettings, *, capture_to: Path | None, replay_from: Sequence[Path] = ()
    ) -> None:
        from drarena.live.web import LiveWeb

        self.live = live
        self.capture_to = None if replay_from else capture_to
        settings = web_settings(live)
        if replay_from:
            missing = [str(p) for p in replay_from if not (p / "manifest.json").is_file()]
            if missing:
                raise DrarenaError(
                    f"{missing[0]}: capture snapshot missing or unfinished (no "
                    "manifest.json); this live run cannot be replayed offline"
                )
            webs = [
                LiveWeb(settings, capture_dir=None, replay_from=p, name="replay")
                for p in replay_from
            ]
            self.web: Any = webs[0] if len(webs) == 1 else ReplayWebs(webs)
        else:
            # the WARC file is named after the capture folder: <run>-live-<time>-00000.warc.gz
            self.web = LiveWeb(
                settings, capture_dir=capture_to, name=capture_to.name if capture_to else "live"
            )
        self.pages = LivePages(self.web)
        self._closed = False

    @property
    def replaying(self) -> bool:
        return self.capture_to is None

    def retriever_factory(
        self, snapshot_dir: Path, index_root: Path
    ) -> Callable[[ComponentSpec], Any]:
        """Frozen retrievers (bm25, dense, hybrid) become the live one, on the shared web."""

        def build(spec: ComponentSpec) -> Any:
            from drarena.search.base import LIVE, RETRIEVERS, build_retriever, frozen_kinds

            if spec.kind not in frozen_kinds() and LIVE not in RETRIEVERS.traits(spec.kind):
                return build_retriever(spec, snapshot_dir, index_root)
            from drarena.search.live import build as build_live

            args = dict(spec.args) if spec.kind == "live" else {}
            args.setdefault("provider", self.live.provider.model_dump(mode="json"))
            args["web"] = self.web
            return build_live(snapshot_dir, index_root, **args)

        return build

    def walker(
        self, tree: Tree, rng: random.Random, min_chars: int = CONTENT_RICH_CHARS
    ) -> TreeWalker:
        """A match's walker: today's page texts, expansion crawling into the capture."""
        from drarena.live.expand import LiveExpander

        expander: Expander = LiveExpander(self.web, {}, min_chars)
        return LiveTreeWalker(
            tree=tree, pages={}, rng=rng, expander=expander, live=self.pages, min_chars=min_chars
        )

    def check_roots(self, trees: Sequence[Tree]) -> None:
        """Each tree's root page answers before any match starts (a gone root would void
        every round of every match on that tree)."""
        for tree in trees:
            url = tree.node(tree.root).url
            try:
                self.pages.get(url)
            except DrarenaError as exc:
                raise DrarenaError(f"tree {tree.id}: root page {url}: {exc}") from None

    def close(self) -> dict[str, Any] | None:
        """Finish the capture (idempotent); its entry for the run header, or None when
        replaying."""
        if self._closed:
            return None
        self._closed = True
        path = self.web.close()
        if self.capture_to is None:
            return None
        folder = Path(path) if path is not None else self.capture_to
        return {"path": str(folder), "fingerprint": capture_fingerprint(folder)}


def header_block(
    live: LiveSettings,
    earlier: Sequence[Capture | dict[str, Any]],
    current: Path | None,
    *,
    replayed: bool = False,
) -> dict[str, Any]:
    """The `live` block of run.json: provider, fetch settings, every capture of the run
    (one per part: a resumed run adds one), the current one `in progress` until closed."""
    captures = []
    for e in earlier:  # a part killed before it could close its capture stays listed
        c: dict[str, Any] = e.as_json() if isinstance(e, Capture) else e
        if c.get("status") == "in progress":
            c = {**c, "status": "unfinished", "fingerprint": capture_fingerprint(Path(c["path"]))}
        captures.append(dict(c))
    if current is not None:
        captures.append({"path": str(current), "fingerprint": None, "status": "in progress"})
    return {
        "provider": live.provider.model_dump(mode="json"),
        "web": dict(live.web),
        "captures": captures,
        "replayed": replayed,
    }


def finish_block(block: dict[str, Any], closed: dict[str, Any] | None) -> dict[str, Any]:
    """The block with the current capture's folder and fingerprint filled in."""
    if closed is None:
        return block
    captures = [c for c in block["captures"] if c.get("status") != "in progress"]
    captures.append(
        {
            "path": closed["path"],
            "fingerprint": closed["fingerprint"],
            "status": "finished" if closed["fingerprint"] else "unfinished",
        }
    )
    return {**block, "captures": captures}


def live_captures(where: Path, header: RunHeader) -> list[Path]:
    """The capture folders of a live run, in run order (one per part of a resumed run); a
    live block of the wrong shape was refused when the header was read (RunDir.header), and
    one with a capture of no path is one line naming run.json."""
    captures = [] if header.live is None else header.live.captures
    if not captures:
        raise DrarenaError(
            f"{where}: a live run with no capture snapshot recorded; it cannot be replayed offline"
        )
    if not all(c.path for c in captures):
        raise DrarenaError(
            f"{where}: live.captures is not a list of captures each with a `path` (damaged); "
            "it cannot be replayed offline"
        )
    return [Path(c.path) for c in captures]
