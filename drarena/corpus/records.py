"""Typed records of the corpus stage: pages, links, trees and what the tree API hands out.

Why: docs.jsonl, links.jsonl and the tree files are read by other stages (search, examiner,
match loop); frozen records make those contracts explicit and checked.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Any, ClassVar

from drarena.records import Record

# Relation types of tree edges (see drarena/corpus/relations.py for the rules).
RELATIONS: tuple[str, ...] = (
    "see_also",
    "example",
    "sequel",
    "broader",
    "subtopic",
    "reference",
    "mentions",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Doc(Record):
    """One HTML page of a snapshot, as written to docs.jsonl (pyserini JsonCollection: id +
    contents). `digest` is sha256 of `contents`; `payload_digest` and `record_id` name the WARC
    bytes it came from. Flags report quality instead of dropping pages."""

    _tuple_fields: ClassVar[tuple[str, ...]] = ("aliases",)

    id: str
    url: str
    title: str
    contents: str
    record_id: str
    payload_digest: str
    digest: str = ""
    chars: int = 0
    link_chars: int = 0  # anchor text of its content links: link_chars / chars = link density
    description: str = ""
    lang: str = ""
    warc_date: str = ""
    encoding: str = ""
    extractor: str = "trafilatura"  # trafilatura | fallback | text | none
    near_empty: bool = False
    duplicate_of: str | None = None
    truncated: bool = False
    aliases: tuple[str, ...] = ()  # canonical URLs that redirect here

    @property
    def is_content(self) -> bool:
        """Usable as a tree node: real text, and the first of its duplicates."""
        return not self.near_empty and self.duplicate_of is None


@dataclasses.dataclass(frozen=True, slots=True)
class Link(Record):
    """One outgoing link of a page, as written to links.jsonl. `target` is the doc id when the
    (redirect-resolved) target is in the snapshot, else None."""

    source: str
    source_url: str
    target_url: str
    target: str | None
    anchor: str
    context: str
    ordinal: int
    in_snapshot: bool
    is_nav: bool
    nav_reason: str = ""  # "" | furniture:<what> | repeated
    fragment: str = ""
    in_list: bool = False
    hint: str = ""  # "see_also" | "example" from the enclosing block's class names


@dataclasses.dataclass(frozen=True, slots=True)
class TreeNode(Record):
    """A page in an Information Tree; `digest` must match the doc's digest in docs.jsonl.

    `doc`: the docs.jsonl id of the node's page when it is not the node's own id. Why: a
    tree drarena builds holds a page once, so a node's id is its page's; the DR-Arena
    paper's released trees hold the same URL at several places of one tree (tree_0009: 94
    repeats in 160 nodes), each its own node, so `snapshot import-trees` gives a repeat its
    own id and names its page here. Left out of the JSON while None, so tree files written
    before it existed keep their bytes (and the digests runs recorded)."""

    _omit_if_none: ClassVar[tuple[str, ...]] = ("doc",)

    id: str
    url: str
    title: str
    digest: str
    depth: int
    chars: int
    parent: str | None = None
    expanded: bool = False  # added after building, by expansion from the link graph
    doc: str | None = None

    @property
    def doc_id(self) -> str:
        """The docs.jsonl id of the node's page."""
        return self.doc or self.id


@dataclasses.dataclass(frozen=True, slots=True)
class TreeEdge(Record):
    """Parent -> child: the page `source` talks about the page `target`."""

    source: str
    target: str
    anchor: str
    context: str
    relation: str


@dataclasses.dataclass(frozen=True, slots=True)
class Tree(Record):
    """An Information Tree: nodes in breadth-first order, edges in the order they were added."""

    id: str
    root: str
    nodes: tuple[TreeNode, ...]
    edges: tuple[TreeEdge, ...]
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def node(self, node_id: str) -> TreeNode:
        return _lookups(self).nodes[node_id]  # (KeyError for a node it lacks)

    def children(self, node_id: str) -> tuple[TreeNode, ...]:
        lookups = _lookups(self)
        return tuple(lookups.nodes[i] for i in lookups.children.get(node_id, ()))

    def edge_to(self, node_id: str) -> TreeEdge | None:
        return _lookups(self).edge_to.get(node_id)


@dataclasses.dataclass(frozen=True, slots=True)
class _TreeLookups:
    """A tree's nodes by id, the edge into each node and each node's children, built once
    per Tree object. Why: node(), edge_to() and children() scanned every node or edge on each
    call, so walking a root-to-node path was quadratic in the depth (a 50,000-node chain: two
    minutes of a tournament's CPU) and every view of a wide tree quadratic in its size."""

    nodes: dict[str, TreeNode]
    edge_to: dict[str, TreeEdge]
    children: dict[str, list[str]]


# Tree objects are frozen (a grown tree is a new object), so lookups built for one stay true;
# kept for the most recently used few, by identity (the Tree is held, so its id is not reused)
_LOOKUPS: OrderedDict[int, tuple[Tree, _TreeLookups]] = OrderedDict()
_LOOKUPS_KEPT = 64
_LOOKUPS_LOCK = threading.Lock()


def _lookups(tree: Tree) -> _TreeLookups:
    with _LOOKUPS_LOCK:
        hit = _LOOKUPS.get(id(tree))
        if hit is not None and hit[0] is tree:
            _LOOKUPS.move_to_end(id(tree))
            return hit[1]
    nodes: dict[str, TreeNode] = {}
    for node in tree.nodes:  # the first of a repeated id, as the scan found it
        nodes.setdefault(node.id, node)
    edge_to: dict[str, TreeEdge] = {}
    children: dict[str, list[str]] = {}
    for edge in tree.edges:
        edge_to.setdefault(edge.target, edge)
        children.setdefault(edge.source, []).append(edge.target)
    made = _TreeLookups(nodes, edge_to, children)
    with _LOOKUPS_LOCK:
        _LOOKUPS[id(tree)] = (tree, made)
        while len(_LOOKUPS) > _LOOKUPS_KEPT:
            _LOOKUPS.popitem(last=False)
    return made


@dataclasses.dataclass(frozen=True, slots=True)
class TreePage(Record):
    """A page handed to the Examiner: its text and where it came from in the tree."""

    id: str
    url: str
    title: str
    text: str
    depth: int
    relation: str  # relation of the edge from its parent ("root" for the root)
    anchor: str
