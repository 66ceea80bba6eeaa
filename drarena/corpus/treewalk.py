"""The tree API the match loop uses: reasoning chain, target pages, descend, backtrack, expand.

Why a walker object: a match moves along one tree for several rounds and may grow it (a
DEPTH loss asks for a child the tree lacks, a WIDTH loss for more siblings). The walker holds
the current tree, the snapshot's pages, an injected `random.Random` for every choice, and an
`Expander`: `SnapshotExpander` grows the tree from the snapshot's link graph (frozen mode);
live mode will plug in an expander that crawls new pages into the snapshot, behind the same
protocol. When nothing can supply what is needed, `CannotExpand` says what was needed and
what was found.

Paths are tuples of node ids from the root to the current node.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from drarena.corpus.records import Doc, Tree, TreeEdge, TreeNode, TreePage
from drarena.corpus.trees import LinkGraph, load_tree, make_edge, make_node
from drarena.errors import DrarenaError

TreePath = tuple[str, ...]
CONTENT_RICH_CHARS = 500


class CannotExpand(DrarenaError):
    """The tree and its expander cannot supply the children or siblings a round needs."""

    def __init__(self, message: str, needed: int, available: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.available = available


class Expander(Protocol):
    """Supplies new children of a tree node. Frozen mode reads the snapshot's link graph;
    live mode (later) crawls the node's links into the snapshot first."""

    def expand(
        self, tree: Tree, parent: str, need: int, rng: random.Random
    ) -> list[tuple[TreeNode, TreeEdge]]:
        """Up to `need` new (child, edge) pairs under `parent`, none already in `tree`."""
        ...


@dataclass
class SnapshotExpander:
    """Frozen-mode expansion: the parent's content links to content-rich pages not yet in
    the tree, drawn with the injected generator, returned in page order."""

    graph: LinkGraph
    min_chars: int = CONTENT_RICH_CHARS

    def expand(
        self, tree: Tree, parent: str, need: int, rng: random.Random
    ) -> list[tuple[TreeNode, TreeEdge]]:
        present = {n.doc_id for n in tree.nodes}
        parent_node = tree.node(parent)
        cands = [
            lk
            for lk in self.graph.children(parent_node.doc_id)
            if lk.target not in present
            and lk.target is not None
            and self.graph.docs[lk.target].chars >= self.min_chars
        ]
        if len(cands) > need:
            keep = set(rng.sample(range(len(cands)), need))
            cands = [lk for i, lk in enumerate(cands) if i in keep]
        out = []
        for link in cands:
            assert link.target is not None
            node = make_node(
                self.graph.docs[link.target], parent_node.depth + 1, parent, expanded=True
            )
            # the edge leaves the parent node, whose id is its page's unless it repeats a page
            edge = dataclasses.replace(make_edge(link, parent_node.url), source=parent)
            out.append((node, edge))
        return out


@dataclass
class TreeWalker:
    """Moves along one tree; every random choice uses `rng`."""

    tree: Tree
    pages: Mapping[str, Doc]
    rng: random.Random
    expander: Expander | None = None
    min_chars: int = CONTENT_RICH_CHARS
    expansions: list[str] = field(default_factory=list)  # one line per expansion, for the log

    # -- paths ------------------------------------------------------------------------------

    def check_path(self, path: Sequence[str]) -> TreePath:
        path = tuple(path)
        if not path or path[0] != self.tree.root:
            raise DrarenaError(
                f"tree {self.tree.id}: a path must start at the root "
                f"{self.tree.root}, got {list(path)[:3]}"
            )
        for parent, child in itertools.pairwise(path):
            edge = self.tree.edge_to(child)
            if edge is None or edge.source != parent:
                raise DrarenaError(f"tree {self.tree.id}: no edge {parent} -> {child} in path")
        return path

    def path_to(self, node_id: str) -> TreePath:
        """Root-to-node path of a node of the tree."""
        path = [node_id]
        while (edge := self.tree.edge_to(path[-1])) is not None:
            path.append(edge.source)
        return self.check_path(tuple(reversed(path)))

    # -- pages ------------------------------------------------------------------------------

    def page(self, node_id: str) -> TreePage:
        node = self.tree.node(node_id)
        doc = self.pages.get(node.doc_id)
        if doc is None or doc.digest != node.digest:
            raise DrarenaError(
                f"tree {self.tree.id}: node {node.url} (digest {node.digest[:19]}) is not in "
                "docs.jsonl: the snapshot was re-extracted since the tree was built; "
                "rebuild the trees"
            )
        edge = self.tree.edge_to(node_id)
        return TreePage(
            id=node.id,
            url=node.url,
            title=node.title,
            text=doc.contents,
            depth=node.depth,
            relation=edge.relation if edge else "root",
            anchor=edge.anchor if edge else "",
        )

    def content_rich(self, node: TreeNode) -> bool:
        return node.chars >= self.min_chars

    def chain(self, path: Sequence[str]) -> tuple[TreePage, ...]:
        """The reasoning chain: the ancestors of the current node, root first."""
        return tuple(self.page(n) for n in self.check_path(path)[:-1])

    def targets(self, path: Sequence[str], width: int) -> tuple[TreePage, ...]:
        """The current node plus `width - 1` content-rich siblings (drawn with `rng`, in tree
        order), expanding the parent when the tree has too few."""
        path = self.check_path(path)
        if width < 1:
            raise DrarenaError(f"width must be at least 1, got {width}")
        current = path[-1]
        need = width - 1
        if need == 0:
            return (self.page(current),)
        if len(path) < 2:
            raise CannotExpand(
                f"tree {self.tree.id}: the root has no siblings; targets of "
                f"width {width} need a node at depth >= 1",
                need,
                0,
            )
        siblings = self._rich_children(path[-2], exclude={current})
        if len(siblings) < need:
            self._expand(path[-2], need - len(siblings))
            siblings = self._rich_children(path[-2], exclude={current})
        if len(siblings) < need:
            raise CannotExpand(
                f"tree {self.tree.id}: {self.tree.node(current).url} needs {need} siblings "
                f"with content (>= {self.min_chars} chars); the tree and snapshot supply "
                f"{len(siblings)}",
                need,
                len(siblings),
            )
        picked = set(self.rng.sample(range(len(siblings)), need))
        chosen = [s for i, s in enumerate(siblings) if i in picked]
        return (self.page(current), *(self.page(s.id) for s in chosen))

    # -- moves ------------------------------------------------------------------------------

    def start(self, min_depth: int = 1) -> TreePath:
        """A content-rich node at depth `min_depth` (reference: depth >= 1, width 2)."""
        nodes = [n for n in self.tree.nodes if n.depth == min_depth and self.content_rich(n)]
        if not nodes:
            frontier = [n for n in self.tree.nodes if n.depth == min_depth - 1]
            for node in frontier:
                self._expand(node.id, 1)
            nodes = [n for n in self.tree.nodes if n.depth == min_depth and self.content_rich(n)]
        if not nodes:
            raise CannotExpand(
                f"tree {self.tree.id}: no content-rich node at depth {min_depth}", 1, 0
            )
        return self.path_to(self.rng.choice(nodes).id)

    def descend(self, path: Sequence[str]) -> TreePath:
        """One level down, to a content-rich child (expanding the node if it has none).
        Children that have children of their own come first, so the walk can go on."""
        path = self.check_path(path)
        children = self._rich_children(path[-1], exclude=set(path))
        if not children:
            self._expand(path[-1], 1)
            children = self._rich_children(path[-1], exclude=set(path))
        if not children:
            raise CannotExpand(
                f"tree {self.tree.id}: {self.tree.node(path[-1]).url} has no child with "
                f"content (>= {self.min_chars} chars) in the tree or the snapshot",
                1,
                0,
            )
        onward = [c for c in children if self.tree.children(c.id)]
        return (*path, self.rng.choice(onward or children).id)

    def backtrack(self, path: Sequence[str], min_depth: int = 1) -> TreePath:
        """One level up, but never above `min_depth` (the root has no siblings to ask
        about); at `min_depth` the path comes back unchanged."""
        path = self.check_path(path)
        return path[:-1] if len(path) - 1 > min_depth else path

    # -- growth -----------------------------------------------------------------------------

    def _rich_children(self, node_id: str, exclude: set[str]) -> list[TreeNode]:
        return [
            c
            for c in self.tree.children(node_id)
            if c.id not in exclude and self.content_rich(c) and c.doc_id in self.pages
        ]

    def _expand(self, parent: str, need: int) -> int:
        if self.expander is None or need <= 0:
            return 0
        added = self.expander.expand(self.tree, parent, need, self.rng)
        if added:
            self.tree = Tree(
                id=self.tree.id,
                root=self.tree.root,
                nodes=(*self.tree.nodes, *(n for n, _ in added)),
                edges=(*self.tree.edges, *(e for _, e in added)),
                meta=self.tree.meta,
            )
            self.expansions.append(f"{parent}: +{len(added)} of {need} needed")
        return len(added)


def open_walker(
    tree_path: Path, snapshot_dir: Path, rng: random.Random, min_chars: int = CONTENT_RICH_CHARS
) -> TreeWalker:
    """A walker over a saved tree, with frozen-mode expansion from the snapshot."""
    from drarena.corpus.extract import load_docs, load_links

    docs = load_docs(snapshot_dir)
    graph = LinkGraph.build(docs, load_links(snapshot_dir))
    return TreeWalker(
        tree=load_tree(tree_path),
        pages={d.id: d for d in docs},
        rng=rng,
        expander=SnapshotExpander(graph, min_chars),
        min_chars=min_chars,
    )
