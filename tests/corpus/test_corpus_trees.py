"""Information Trees on the committed snapshot: traceable, navigation-free, deterministic."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from drarena.corpus.extract import ExtractResult, load_docs, load_links
from drarena.corpus.records import RELATIONS, Tree, TreeEdge, TreeNode
from drarena.corpus.trees import (
    LinkGraph,
    TreeParams,
    build_snapshot_trees,
    build_trees,
    load_tree,
    to_networkx,
    tree_from_json,
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


def _tree(nodes: str, edges: list[str], root: str = "a") -> Tree:
    """A small tree: nodes by one-letter id, edges as "ab" (a -> b)."""
    return Tree(
        id="t",
        root=root,
        nodes=tuple(TreeNode(n, f"http://x/{n}", n, "d", 0, 1) for n in nodes),
        edges=tuple(TreeEdge(e[0], e[1], "anchor", "", "see_also") for e in edges),
    )


@pytest.mark.parametrize(
    ("tree", "problem"),
    [
        (_tree("abcd", ["ab", "cd", "dc"]), "cycle through"),
        (_tree("abc", ["ab", "bc", "ca"]), "edge leads into the root 'a'"),
        (_tree("abc", ["ab", "ac", "bc"]), "node 'c' has more than one parent"),
        (_tree("ab", ["ab"], root="z"), "root 'z' is not one of its nodes"),
        (_tree("ab", ["ab", "bq"]), "unknown node 'q'"),
        (_tree("abc", ["ab"]), "node 'c' is not below the root"),
        (_tree("aba", ["ab"]), "a node id appears twice"),
    ],
)
def test_tree_files_that_are_not_trees_are_refused(tree: Tree, problem: str) -> None:
    """The walker climbs parents to the root and the views walk children from it: a cycle
    looped forever, an unknown node was a KeyError."""
    with pytest.raises(DrarenaError, match=rf"^t\.json: not a tree \(.*{problem}"):
        tree_from_json(tree_to_json(tree), "t.json")


def test_a_sound_small_tree_loads(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(tree_to_json(_tree("abcd", ["ab", "ac", "cd"])), encoding="utf-8")
    assert [n.id for n in load_tree(path).children("a")] == ["b", "c"]


def test_a_tree_file_that_is_not_utf8_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(DrarenaError, match=r"t\.json: not a drarena tree file \(not UTF-8"):
        load_tree(path)


def test_a_tree_file_over_the_limit_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree file may be someone else's (a shared snapshot, a path given to `--tree`): it
    was decoded whole, however large; now one over MAX_TREE_BYTES is one line naming it."""
    import drarena.corpus.trees as trees

    path = tmp_path / "t.json"
    path.write_text(tree_to_json(_tree("abcd", ["ab", "ac", "cd"])), encoding="utf-8")
    monkeypatch.setattr(trees, "MAX_TREE_BYTES", 64)
    with pytest.raises(DrarenaError, match=r"t\.json: larger than 64 bytes") as info:
        load_tree(path)
    assert "\n" not in str(info.value)
    with pytest.raises(DrarenaError, match="cannot read tree file"):  # as before
        load_tree(tmp_path / "missing.json")


def _trees_copy(pydocs: ExtractResult, dest: Path) -> Path:
    """The extracted snapshot without its trees, for a test that damages trees/."""
    return Path(shutil.copytree(pydocs.snapshot_dir, dest, ignore=shutil.ignore_patterns("trees")))


def test_a_damaged_trees_index_is_rebuilt(pydocs: ExtractResult, tmp_path: Path) -> None:
    snap = _trees_copy(pydocs, tmp_path / "pydocs")
    params = TreeParams(count=2, seed=1)
    first = build_snapshot_trees(snap, params, progress=False)
    index = first.out_dir / "index.json"
    good = index.read_bytes()
    for damaged in ("[]", '{"tree_version": 1, "trees": [{"id": "x"}]}', '{"trees": 3}', "{"):
        index.write_text(damaged, encoding="utf-8")
        again = build_snapshot_trees(snap, params, progress=False)
        assert not again.up_to_date and again.files == first.files
        assert index.read_bytes() == good
    # an index that names a file outside drarena's own names is not trusted either
    entry = json.loads(good)
    entry["trees"][0]["file"] = "../manifest.json"
    index.write_text(json.dumps(entry), encoding="utf-8")
    assert not build_snapshot_trees(snap, params, progress=False).up_to_date
    assert build_snapshot_trees(snap, params, progress=False).up_to_date


def test_a_trees_index_over_the_limit_is_rebuilt(
    pydocs: ExtractResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trees/index.json was decoded whole, however large: one over MAX_TREES_INDEX_BYTES is
    treated as absent, as a damaged one is (the trees are built again, the same)."""
    import drarena.corpus.trees as trees

    snap = _trees_copy(pydocs, tmp_path / "pydocs")
    params = TreeParams(count=2, seed=1)
    first = build_snapshot_trees(snap, params, progress=False)
    good = (first.out_dir / "index.json").read_bytes()
    assert build_snapshot_trees(snap, params, progress=False).up_to_date
    monkeypatch.setattr(trees, "MAX_TREES_INDEX_BYTES", 64)
    again = build_snapshot_trees(snap, params, progress=False)
    assert not again.up_to_date and again.files == first.files
    assert (first.out_dir / "index.json").read_bytes() == good


def test_rebuilding_trees_keeps_the_user_s_files(pydocs: ExtractResult, tmp_path: Path) -> None:
    snap = _trees_copy(pydocs, tmp_path / "pydocs")
    out = build_snapshot_trees(snap, TreeParams(count=3, seed=1), progress=False).out_dir
    mine = {"tree-mynotes.json": '{"my": "notes"}', "tree-1.json": "[]", "notes.txt": "x"}
    for name, text in mine.items():
        (out / name).write_text(text, encoding="utf-8")
    fewer = build_snapshot_trees(snap, TreeParams(count=2, seed=2), progress=False)
    assert sorted(p.name for p in out.glob("tree-???.json")) == ["tree-000.json", "tree-001.json"]
    assert fewer.files == (out / "tree-000.json", out / "tree-001.json")
    assert {name: (out / name).read_text(encoding="utf-8") for name in mine} == mine


def test_fewer_roots_than_asked_build_a_tree_on_each_when_at_least_allows(
    pydocs: ExtractResult, graph: LinkGraph, tmp_path: Path
) -> None:
    """A tournament asks for 10 trees whatever its own count; a small snapshot that can root
    fewer (here: hubs need many links) still plays when it can root its count (`at_least`)."""
    params = next(
        p
        for links in range(5, 200)
        if 1 <= len(graph.root_candidates(p := TreeParams(count=10, min_root_links=links))) < 10
    )
    roots = len(graph.root_candidates(params))
    snap = _trees_copy(pydocs, tmp_path / "pydocs")
    with pytest.raises(
        DrarenaError, match=rf"asked for 10 trees but the snapshot can root only {roots}"
    ):
        build_snapshot_trees(snap, params, progress=False)
    with pytest.raises(DrarenaError, match="asked for 10 trees"):
        build_snapshot_trees(snap, params, progress=False, at_least=roots + 1)
    built = build_snapshot_trees(snap, params, progress=False, at_least=1)
    assert len(built.files) == roots and not built.up_to_date
    assert build_snapshot_trees(snap, params, progress=False, at_least=1).up_to_date


def test_the_text_view_walks_a_tree_deeper_than_the_recursion_limit() -> None:
    """A tree file a user made may be a chain of thousands: `trees show` renders it (its
    recursive walk raised RecursionError), each node once, in depth-first order."""
    from drarena.corpus.treeview import render_text

    ids = [f"n{i}" for i in range(1500)]
    chain = Tree(
        id="deep",
        root=ids[0],
        nodes=tuple(TreeNode(n, f"http://x/{n}", n, "d", i, 1) for i, n in enumerate(ids)),
        edges=tuple(TreeEdge(a, b, "anchor", "", "see_also") for a, b in itertools.pairwise(ids)),
    )
    lines = render_text(tree_from_json(tree_to_json(chain))).splitlines()[1:]
    assert [line.split("  (")[0].strip().split()[-1] for line in lines] == ids
    small = render_text(_tree("abcd", ["ab", "ac", "cd"])).splitlines()[1:]
    assert [line.split("  (")[0].strip().split()[-1] for line in small] == ["a", "b", "c", "d"]
