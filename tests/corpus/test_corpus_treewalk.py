"""The tree API: chain, targets, descend, backtrack, expansion from the snapshot."""

from __future__ import annotations

import random

import pytest

from drarena.corpus.extract import ExtractResult, load_docs, load_links
from drarena.corpus.records import Doc, Tree
from drarena.corpus.trees import LinkGraph, TreeParams, build_trees
from drarena.corpus.treewalk import CannotExpand, SnapshotExpander, TreeWalker
from drarena.errors import DrarenaError


@pytest.fixture(scope="module")
def world(pydocs: ExtractResult) -> tuple[LinkGraph, dict[str, Doc]]:
    docs = load_docs(pydocs.snapshot_dir)
    return LinkGraph.build(docs, load_links(pydocs.snapshot_dir)), {d.id: d for d in docs}


def walker(
    world: tuple[LinkGraph, dict[str, Doc]], tree: Tree, seed: int = 0, expand: bool = True
) -> TreeWalker:
    graph, pages = world
    return TreeWalker(
        tree=tree,
        pages=pages,
        rng=random.Random(seed),
        expander=SnapshotExpander(graph) if expand else None,
    )


def test_chain_targets_descend_backtrack(world: tuple[LinkGraph, dict[str, Doc]]) -> None:
    graph, pages = world
    tree = build_trees(graph, TreeParams(count=1, seed=1))[0]
    w = walker(world, tree)
    path = w.start()
    assert len(path) == 2 and path[0] == tree.root
    assert len(w.descend(w.descend(path))) == 4
    # A depth-3 node whose parent has at least 4 children: depth 3 x width 4.
    wide = next(n for n in tree.nodes if n.depth == 2 and len(tree.children(n.id)) >= 4)
    deeper = w.path_to(tree.children(wide.id)[0].id)
    assert len(deeper) == 4 and w.descend(deeper[:-1])[:-1] == deeper[:-1]
    chain = w.chain(deeper)
    assert [p.id for p in chain] == list(deeper[:-1])
    assert chain[0].relation == "root" and chain[0].depth == 0
    assert [p.depth for p in chain] == [0, 1, 2]
    for page in chain:
        assert page.text == pages[page.id].contents and page.url == pages[page.id].url
    targets = w.targets(deeper, 4)
    assert targets[0].id == deeper[-1] and len({t.id for t in targets}) == 4
    parent = deeper[-2]
    assert all(tree.edge_to(t.id).source == parent for t in targets)  # type: ignore[union-attr]
    assert all(len(t.text) >= w.min_chars for t in targets)
    assert w.backtrack(deeper) == deeper[:-1]
    assert w.backtrack(path) == path  # never above depth 1: the root has no siblings
    assert w.targets(deeper, 1) == (w.page(deeper[-1]),)


def test_same_rng_same_choices(world: tuple[LinkGraph, dict[str, Doc]]) -> None:
    graph, _ = world
    tree = build_trees(graph, TreeParams(count=1, seed=2))[0]

    def run(seed: int) -> list[object]:
        w = walker(world, tree, seed)
        path = w.start()
        out: list[object] = [path]
        for width in (2, 3, 2):
            try:
                out.append([t.id for t in w.targets(path, width)])
                path = w.descend(path)
            except CannotExpand as exc:  # a deterministic outcome too
                out.append(str(exc))
                path = w.backtrack(path)
        out.append(w.tree.to_json())
        return out

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_expansion_from_the_snapshot(world: tuple[LinkGraph, dict[str, Doc]]) -> None:
    graph, _ = world
    narrow = build_trees(graph, TreeParams(count=1, seed=1, max_depth=1, max_width=1))[0]
    assert len(narrow.nodes) == 2
    w = walker(world, narrow)
    path = (narrow.root, narrow.nodes[1].id)
    targets = w.targets(path, 4)  # needs 3 siblings the tree does not have
    assert len(targets) == 4 and len(w.tree.nodes) >= 5
    added = [n for n in w.tree.nodes if n.expanded]
    assert added and all(n.depth == 1 and n.parent == narrow.root for n in added)
    for node in added:
        link = next(lk for lk in graph.children(narrow.root) if lk.target == node.id)
        assert not link.is_nav and link.in_snapshot
    assert w.expansions
    deeper = w.descend(path)  # depth 2 does not exist in the tree either
    assert len(deeper) == 3 and w.tree.node(deeper[-1]).expanded
    assert w.chain(deeper)[-1].id == path[-1]
    # Without an expander the same request fails cleanly, saying what was short.
    with pytest.raises(CannotExpand) as info:
        walker(world, narrow, expand=False).targets(path, 4)
    assert info.value.needed == 3 and info.value.available == 0
    assert "needs 3 siblings" in str(info.value)


def test_snapshot_cannot_supply(world: tuple[LinkGraph, dict[str, Doc]]) -> None:
    graph, _ = world
    tree = build_trees(graph, TreeParams(count=1, seed=1))[0]
    w = walker(world, tree)
    path = w.start()
    width = len(graph.children(tree.root)) + 5
    with pytest.raises(CannotExpand, match=f"needs {width - 1} siblings") as info:
        w.targets(path, width)
    assert info.value.available < width - 1
    with pytest.raises(CannotExpand, match="root has no siblings"):
        w.targets((tree.root,), 2)


def test_bad_paths_and_stale_digests(world: tuple[LinkGraph, dict[str, Doc]]) -> None:
    graph, pages = world
    tree = build_trees(graph, TreeParams(count=1, seed=1))[0]
    w = walker(world, tree)
    with pytest.raises(DrarenaError, match="must start at the root"):
        w.chain(("nope",))
    child = tree.children(tree.root)[0].id
    with pytest.raises(DrarenaError, match="no edge"):
        w.chain((tree.root, tree.root, child))
    stale = dict(pages)
    stale[child] = Doc.from_dict(
        {**pages[child].to_dict(), "digest": "sha256:0", "aliases": list(pages[child].aliases)}
    )
    w2 = TreeWalker(tree=tree, pages=stale, rng=random.Random(0))
    with pytest.raises(DrarenaError, match="rebuild the trees"):
        w2.targets((tree.root, child), 1)
