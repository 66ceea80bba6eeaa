"""Deep and wide tree files (issue 38, item 6): a tree rewritten as a chain root -> n1 -> ...
-> n50000 cost a tournament two minutes of CPU before it played (Tree.node and Tree.edge_to
scanned every node or edge, and a root-to-node path called them once a level). Now a tree
deeper than MAX_TREE_DEPTH is refused in one line naming the file, and the lookups are made
once per tree. Work is counted, not timed; each test failed before its fix.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from drarena.corpus.records import Tree, TreeEdge, TreeNode
from drarena.corpus.trees import MAX_TREE_DEPTH, load_tree, tree_from_json, tree_to_json
from drarena.corpus.treewalk import TreeWalker
from drarena.errors import DrarenaError


def node(i: int, depth: int, parent: str | None) -> TreeNode:
    return TreeNode(
        f"n{i}", f"http://t.test/{i}", f"page {i}", f"sha256:{i:064d}", depth, 900, parent
    )


def edge(parent: str, child: str) -> TreeEdge:
    return TreeEdge(parent, child, "a", "", "subtopic")


def chain(length: int) -> Tree:
    nodes = [node(0, 0, None)] + [node(i, i, f"n{i - 1}") for i in range(1, length + 1)]
    edges = [edge(f"n{i - 1}", f"n{i}") for i in range(1, length + 1)]
    return Tree("chain", "n0", tuple(nodes), tuple(edges))


def wide(width: int) -> Tree:
    nodes = [node(0, 0, None)] + [node(i, 1, "n0") for i in range(1, width + 1)]
    edges = [edge("n0", f"n{i}") for i in range(1, width + 1)]
    return Tree("wide", "n0", tuple(nodes), tuple(edges))


def test_a_chain_deeper_than_the_cap_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "tree-chain.json"
    path.write_text(tree_to_json(chain(50_000)))
    with pytest.raises(DrarenaError) as err:
        load_tree(path)
    message = str(err.value)
    assert message.startswith(f"{path}: not a tree (it is {MAX_TREE_DEPTH + 1} levels deep")
    assert "\n" not in message


def test_a_chain_at_the_cap_loads_and_its_paths_are_walked(tmp_path: Path) -> None:
    tree = tree_from_json(tree_to_json(chain(MAX_TREE_DEPTH)))
    walker = TreeWalker(tree=tree, pages={}, rng=random.Random(1))
    path = walker.path_to(f"n{MAX_TREE_DEPTH}")
    assert len(path) == MAX_TREE_DEPTH + 1 and path[0] == "n0"
    with pytest.raises(DrarenaError, match="levels deep"):
        tree_from_json(tree_to_json(chain(MAX_TREE_DEPTH + 1)))


class CountedTuple(tuple[Any, ...]):
    """A tuple whose iterations are counted: what scanning a tree's nodes or edges costs."""

    walked = 0

    def __iter__(self) -> Any:
        for item in super().__iter__():
            CountedTuple.walked += 1
            yield item


def test_tree_lookups_are_made_once_per_tree() -> None:
    """Before: each node(), edge_to() and children() scanned the nodes or edges: a path to a
    node 2,000 deep walked 2,000 x 2,000 edges, and 5,000 lookups in a wide tree 5,000 x
    5,000."""
    for tree in (chain(2_000), wide(5_000)):
        counted = Tree(tree.id, tree.root, CountedTuple(tree.nodes), CountedTuple(tree.edges))
        CountedTuple.walked = 0
        walker = TreeWalker(tree=counted, pages={}, rng=random.Random(1))
        for n in counted.nodes[1:]:
            walker.path_to(n.id)
            counted.node(n.id)
            counted.children(n.id)
        size = len(tree.nodes) + len(tree.edges)
        assert CountedTuple.walked <= 2 * size + len(tree.nodes), (tree.id, CountedTuple.walked)


def test_lookups_follow_a_grown_tree() -> None:
    small = chain(3)
    assert small.edge_to("n3") == edge("n2", "n3")
    grown = Tree(
        small.id, small.root, (*small.nodes, node(4, 4, "n3")), (*small.edges, edge("n3", "n4"))
    )
    assert grown.edge_to("n4") == edge("n3", "n4") and small.edge_to("n4") is None
    assert [c.id for c in grown.children("n3")] == ["n4"] and small.children("n3") == ()
    with pytest.raises(KeyError):
        small.node("n4")


def test_the_text_view_of_a_deep_chain_is_linear_in_its_size() -> None:
    """A chain at the cap renders in lines of bounded indentation (before: the square of the
    depth in spaces: 4096 levels, 16 M characters)."""
    from drarena.corpus.treeview import MAX_INDENT, render_text

    text = render_text(chain(MAX_TREE_DEPTH))
    lines = text.splitlines()[1:]
    assert len(lines) == MAX_TREE_DEPTH + 1
    assert max(len(line) - len(line.lstrip()) for line in lines) == 2 * MAX_INDENT
    assert (
        lines[-1].lstrip().startswith(f"[depth {MAX_TREE_DEPTH}] [subtopic] page {MAX_TREE_DEPTH}")
    )
    assert len(text) < 200 * len(lines)
