"""Live mode end to end on loopback, never the internet: the real `drarena serve-search`
speaks SearXNG's JSON for the committed snapshot, the real `drarena replay-snapshot` serves
its pages under their own URLs (connect_to maps 127.0.0.1:8765 to the replay's port). The
live retriever searches and opens, the live expander grows a tree, all into one capture;
with both servers stopped, a replay of the capture gives identical hits, texts and nodes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from loopback_servers import replay_snapshot, serve_search, stop

from drarena.corpus.extract import load_docs
from drarena.corpus.records import Doc, Tree, TreeNode
from drarena.corpus.trees import load_tree
from drarena.corpus.treewalk import CannotExpand, TreeWalker
from drarena.errors import DrarenaError
from drarena.live.expand import LiveExpander, doc_from_page
from drarena.live.providers import preflight
from drarena.live.web import LiveWeb, LiveWebSettings
from drarena.search.live import build as build_live
from drarena.web.warc.snapshot import Snapshot

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PYDOCS = REPO / "snapshots" / "pydocs"
ORIGIN = "127.0.0.1:8765"


@pytest.fixture(scope="module")
def servers(
    pydocs_indexed: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, object]]:
    """serve-search (SearXNG JSON) and replay-snapshot, as a user starts them."""
    snapshot, index_root = pydocs_indexed
    logs = tmp_path_factory.mktemp("live-servers")
    with (
        serve_search(snapshot, index_root, logs / "search.log") as (base, search),
        replay_snapshot(PYDOCS, f"http://{ORIGIN}") as (replay_port, replay),
    ):
        yield {
            "search": base,
            "replay_port": replay_port,
            "snapshot": snapshot,
            "procs": (search, replay),
        }


def live_settings(replay_port: int) -> LiveWebSettings:
    return LiveWebSettings(
        allow_private_addresses=True,
        per_host_delay_s=0.0,
        per_host_concurrency=4,
        connect_to={ORIGIN: f"127.0.0.1:{replay_port}"},
    )


def small_tree(snapshot: Path) -> Tree:
    """Root and one depth-1 node of a committed tree, its other nodes cut: the walk needs
    children and siblings the tree lacks."""
    full = load_tree(snapshot / "trees" / "tree-000.json")
    first = full.children(full.root)[0]
    root = full.node(full.root)
    edge = full.edge_to(first.id)
    assert edge is not None
    return Tree(id=full.id, root=full.root, nodes=(root, first), edges=(edge,))


def walk(web: LiveWeb, docs: list[Doc], snapshot: Path) -> tuple[tuple[str, ...], list[str]]:
    """A descent and a width-3 target set from the small tree, expanding live."""
    pages = {d.id: d for d in docs}
    tree = small_tree(snapshot)
    walker = TreeWalker(
        tree=tree, pages=pages, rng=random.Random(7), expander=LiveExpander(web, pages)
    )
    path = walker.descend((tree.root, tree.nodes[1].id))
    targets = walker.targets(path[:2], 3)
    return path, [t.id for t in targets] + [t.text[:200] for t in targets]


def test_live_search_open_expand_then_replay(servers: dict[str, object], tmp_path: Path) -> None:
    base = str(servers["search"])
    snapshot = Path(str(servers["snapshot"]))
    settings = live_settings(int(str(servers["replay_port"])))
    provider = {"kind": "searxng", "args": {"url": base}}
    docs = load_docs(snapshot)  # the fixture copy's trees' pages
    by_url = {d.url: d for d in docs}
    capture = tmp_path / "capture"

    with LiveWeb(settings, capture_dir=capture, name="pydocs-live") as web:
        assert preflight(provider, web) is None
        retriever = build_live(snapshot, snapshot, web=web, provider=provider)
        hits = retriever.search("tarfile archive", 12)  # two SearXNG result pages
        native = httpx.get(base + "/search", params={"q": "tarfile archive", "k": 12}).json()
        assert [h.url for h in hits] == [h["url"] for h in native["hits"]]
        assert [h.rank for h in hits] == list(range(1, 13))
        assert hits[0].docid == hits[0].url and hits[0].url.endswith("/tarfile.html")
        first = retriever.open(hits[0].docid, 0, 1500)
        parts, offset = [first.text], first.next_offset
        while offset is not None:
            part = retriever.open(hits[0].url, offset, 5000)
            parts.append(part.text)
            offset = part.next_offset
        # the live page reads exactly as the frozen corpus extracted it
        assert "".join(parts) == by_url[hits[0].url].contents and len(parts) > 2
        opened = [retriever.open(h.url, 0, 3000).text for h in hits[:4]]
        with pytest.raises(DrarenaError, match="HTTP 404"):
            retriever.open(f"http://{ORIGIN}/library/no-such-page.html")
        path, walked = walk(web, docs, snapshot)
        assert len(path) == 3 and len(walked) == 6
        by_id = {d.id: d for d in docs}
        live_child = doc_from_page(web.page(by_id[path[-1]].url))
        assert live_child.id == path[-1] and live_child.digest == by_id[path[-1]].digest
        gone = Tree(
            id="t",
            root="r",
            nodes=(TreeNode("r", f"http://{ORIGIN}/gone.html", "Gone", "sha256:0", 0, 0),),
            edges=(),
        )
        with pytest.raises(CannotExpand, match="HTTP 404"):
            LiveExpander(web, {}).expand(gone, "r", 1, random.Random(1))
    for proc in servers["procs"]:  # type: ignore[attr-defined]
        stop(proc)

    with Snapshot.open(capture) as snap:
        assert snap.verify().ok and snap.manifest.complete
        assert snap.manifest.spec["providers"] == [
            {
                "kind": "searxng",
                "args": {
                    "url": base,
                    "engines": [],
                    "categories": [],
                    "language": "",
                    "safesearch": None,
                    "max_pages": 3,
                },
            }
        ]
        assert snap.manifest.counts.pages >= 10

    with LiveWeb(settings, replay_from=capture) as replay:
        again = build_live(snapshot, snapshot, web=replay, provider=provider)
        assert again.search("tarfile archive", 12) == hits
        assert again.open(hits[0].docid, 0, 1500) == first
        assert [again.open(h.url, 0, 3000).text for h in hits[:4]] == opened
        assert walk(replay, docs, snapshot) == (path, walked)
        with pytest.raises(DrarenaError, match="not in the capture"):
            again.search("a query never asked", 5)
