"""Information Trees on the committed snapshot: traceable, navigation-free, deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drarena.corpus.extract import ExtractResult, load_docs, load_links
from drarena.corpus.records import RELATIONS
from drarena.corpus.trees import (
    LinkGraph,
    TreeParams,
    build_snapshot_trees,
    build_trees,
    load_tree,
    to_networkx,
    tree_to_json,
)
from drarena.errors import DrarenaError


@pytest.fixture(scope="module")
def graph(pydocs: ExtractResult) -> LinkGraph:
    return LinkGraph.build(load_docs(pydocs.snapshot_dir), load_links(pydocs.snapshot_dir))


def test_snapshot_trees_are_traceable_and_navigation_free(pydocs: ExtractResult) -> None:
    result = build_snapshot_trees(pydocs.snapshot_dir, TreeParams(count=10, seed=1), progress=False)
    assert len(result.files) == 10 and not result.up_to_date
    docs = {d.id: d for d in load_docs(pydocs.snapshot_dir)}
    digests = {d.digest for d in docs.values()}
    links = load_links(pydocs.snapshot_dir)
    content = {(lk.source, lk.target, lk.anchor) for lk in links if not lk.is_nav}
    nav_only = {(lk.source, lk.target) for lk in links if lk.is_nav} - {
        (s, t) for s, t, _ in content
    }
    deep_and_wide = 0
    for path in result.files:
        tree = load_tree(path)
        assert len({n.id for n in tree.nodes}) == len(tree.nodes)  # a tree, not a graph
        for node in tree.nodes:
            assert node.digest in digests
            assert docs[node.id].digest == node.digest and docs[node.id].is_content
        for edge in tree.edges:
            assert (edge.source, edge.target, edge.anchor) in content
            assert (edge.source, edge.target) not in nav_only
            assert edge.relation in RELATIONS
        stats = tree.meta["stats"]
        assert stats["nodes"] == len(tree.nodes) == len(tree.edges) + 1
        if stats["max_depth"] >= 3 and stats["deepest_with_width4"] >= 3:
            deep_and_wide += 1
        assert to_networkx(tree).number_of_nodes() == len(tree.nodes)
    assert deep_and_wide >= 8  # "most trees": depth 3 with 4 siblings reachable
    index = json.loads((result.out_dir / "index.json").read_text(encoding="utf-8"))
    assert [t["file"] for t in index["trees"]] == [p.name for p in result.files]
    # Rerun: up to date, the same bytes.
    before = {p: p.read_bytes() for p in result.files}
    again = build_snapshot_trees(pydocs.snapshot_dir, TreeParams(count=10, seed=1), progress=False)
    assert again.up_to_date and {p: p.read_bytes() for p in again.files} == before
    # Fewer trees: stale files go.
    fewer = build_snapshot_trees(pydocs.snapshot_dir, TreeParams(count=3, seed=1), progress=False)
    assert sorted(result.out_dir.glob("tree-*.json")) == sorted(fewer.files)


def test_same_seed_same_bytes_other_seed_other_trees(graph: LinkGraph) -> None:
    params = TreeParams(count=5, seed=7)
    first = [tree_to_json(t) for t in build_trees(graph, params)]
    second = [tree_to_json(t) for t in build_trees(graph, params)]
    assert first == second
    other = [tree_to_json(t) for t in build_trees(graph, TreeParams(count=5, seed=8))]
    assert other != first


def test_caps_are_respected(graph: LinkGraph) -> None:
    for tree in build_trees(graph, TreeParams(count=4, seed=3, max_depth=2, max_width=3)):
        assert max(n.depth for n in tree.nodes) <= 2
        assert max(len(tree.children(n.id)) for n in tree.nodes) <= 3


def test_too_many_trees_says_how_many(graph: LinkGraph) -> None:
    n = len(graph.root_candidates(TreeParams()))
    assert 10 <= n < 10_000
    with pytest.raises(DrarenaError, match=f"can root only {n} .*--count {n} or fewer"):
        build_trees(graph, TreeParams(count=10_000))
    with pytest.raises(DrarenaError, match="--count must be at least 1"):
        build_trees(graph, TreeParams(count=0))


def test_bad_tree_file(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text('{"nodes": []}')
    with pytest.raises(DrarenaError, match="not a drarena tree file"):
        load_tree(bad)
    with pytest.raises(DrarenaError, match="cannot read tree file"):
        load_tree(tmp_path / "missing.json")
