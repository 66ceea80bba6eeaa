"""Information Trees: seeded breadth-first trees over a snapshot's content links.

Why: the Examiner asks depth questions along a root-to-node path and width questions over a
node and its siblings, so a tree must be (1) made of real content links (navigation links
never become edges), (2) deterministic (same docs, seed and caps give the same bytes), and
(3) traceable: every node carries the digest of its text in docs.jsonl.

Roots are hubs: content pages with at least `min_root_links` distinct content children,
at least `min_root_chars` of text, and a link density (anchor text / text) under
`max_root_link_density`, so that index and listing pages, which have nothing to ask
about, are not roots. `count` roots are drawn from the candidates with the seeded generator;
each tree then grows breadth-first, taking up to `max_width` children per node (drawn with a
generator seeded by the run seed and the root) up to `max_depth` and `max_nodes`.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from drarena.corpus.records import Doc, Link, Tree, TreeEdge, TreeNode
from drarena.corpus.relations import classify_relation
from drarena.digests import file_sha256
from drarena.errors import DrarenaError, one_line
from drarena.files import own_folder, read_bounded, write_atomic
from drarena.records import lone_surrogate

TREES_DIR = "trees"
TREES_INDEX = "index.json"
TREE_VERSION = 1
# the names build_trees gives (tree-000.json); [0-9], not \d: \d takes any Unicode digit, and
# the stale-file sweep of a rebuild deleted a user's trees/tree-١٢٣.json
TREE_FILE = re.compile(r"tree-[0-9]{3,}\.json")
# the names `snapshot import-trees` gives: the reference's own (tree_0007.json)
IMPORTED_TREE_FILE = re.compile(r"tree_[0-9]{1,9}\.json")
# Tree files and index.json sit in a snapshot folder that may be someone else's or damaged
# (a tournament reads the files index.json names), so both are read bounded.
# Why 64 MiB for a tree: a node with its edge is at most ~2 KB as written (URL, title, digest;
# anchor and 2 x 160 characters of context, up to 3 bytes a character), and a tree's size does
# not grow with the crawl: the defaults stop at 150 nodes (~0.3 MB), and max_width 6 x
# max_depth 4 at 1,555 nodes (~3 MB) even with --max-nodes raised, so 64 MiB is 20x that.
MAX_TREE_BYTES = 64 << 20
# Why 64 MiB for index.json: an entry is ~0.5 KB (id, file, digest, root URL and title,
# stats); a snapshot of 1 million pages roots a few thousand trees at most in real use
# (`--count`, default 10; tournaments play 3), and 10,000 trees write ~5 MB: 64 MiB is >10x.
MAX_TREES_INDEX_BYTES = 64 << 20
# How deep a tree may be. Why a cap: drarena builds trees `max_depth` deep (default 4) and a
# match grows one a level per round at most, so a tree file 50,000 levels deep (a chain made
# by hand) is not drarena's; such a chain cost a tournament two minutes of CPU before it
# played (root-to-node paths, quadratic before Tree's lookups were indexed). A hand-made
# chain of a few thousand still loads and renders (`trees show`).
MAX_TREE_DEPTH = 4096
# what graph.stats must hold for summarize and render_text (older or edited files may lack it)
STATS_KEYS = ("nodes", "max_depth", "max_branching", "nodes_per_depth")


@dataclass(frozen=True, slots=True)
class TreeParams:
    count: int = 10
    seed: int = 1
    max_depth: int = 4
    max_width: int = 6
    max_nodes: int = 150
    min_root_links: int = 5
    min_root_chars: int = 1000
    max_root_link_density: float = 0.7

    def check(self) -> None:
        for name in ("count", "max_depth", "max_width", "max_nodes", "min_root_links"):
            if getattr(self, name) < 1:
                raise DrarenaError(f"trees: --{name.replace('_', '-')} must be at least 1")
        if self.max_depth > MAX_TREE_DEPTH:
            raise DrarenaError(f"trees: --max-depth must be at most {MAX_TREE_DEPTH}")


@dataclass
class LinkGraph:
    """Content pages and, per page, its content links to other content pages, deduplicated by
    target in page order (first link wins)."""

    docs: dict[str, Doc]
    out: dict[str, list[Link]] = field(default_factory=dict)

    @classmethod
    def build(cls, docs: Iterable[Doc], links: Iterable[Link]) -> LinkGraph:
        content = {d.id: d for d in docs if d.is_content}
        graph = cls(docs=content)
        seen: set[tuple[str, str]] = set()
        for link in links:
            if link.source not in content:
                continue
            if link.is_nav or link.target is None or link.target == link.source:
                continue
            if link.target not in content or (link.source, link.target) in seen:
                continue
            seen.add((link.source, link.target))
            graph.out.setdefault(link.source, []).append(link)
        for out in graph.out.values():
            out.sort(key=lambda lk: lk.ordinal)
        return graph

    def children(self, doc_id: str) -> list[Link]:
        return self.out.get(doc_id, [])

    def root_candidates(self, params: TreeParams) -> list[str]:
        """Hub pages, most content children first, ties by id."""
        cands = [
            d.id
            for d in self.docs.values()
            if len(self.children(d.id)) >= params.min_root_links
            and d.chars >= params.min_root_chars
            and d.link_chars <= params.max_root_link_density * d.chars
        ]
        return sorted(cands, key=lambda i: (-len(self.children(i)), i))


def make_node(doc: Doc, depth: int, parent: str | None, expanded: bool = False) -> TreeNode:
    return TreeNode(
        id=doc.id,
        url=doc.url,
        title=doc.title,
        digest=doc.digest,
        depth=depth,
        chars=doc.chars,
        parent=parent,
        expanded=expanded,
    )


def make_edge(link: Link, source_url: str) -> TreeEdge:
    assert link.target is not None
    return TreeEdge(
        source=link.source,
        target=link.target,
        anchor=link.anchor,
        context=link.context,
        relation=classify_relation(
            source_url,
            link.target_url,
            link.anchor,
            link.context,
            in_list=link.in_list,
            hint=link.hint,
            fragment=link.fragment,
        ),
    )


def tree_rng(seed: int, root: str) -> random.Random:
    """Per-tree generator: a tree does not depend on which other trees were built."""
    return random.Random(f"drarena-tree:{seed}:{root}")


def grow_tree(graph: LinkGraph, root: str, tree_id: str, params: TreeParams) -> Tree:
    rng = tree_rng(params.seed, root)
    nodes = [make_node(graph.docs[root], 0, None)]
    edges: list[TreeEdge] = []
    in_tree = {root}
    queue = [nodes[0]]
    head = 0
    while head < len(queue) and len(nodes) < params.max_nodes:
        node = queue[head]
        head += 1
        if node.depth >= params.max_depth:
            continue
        cands = [lk for lk in graph.children(node.id) if lk.target not in in_tree]
        if len(cands) > params.max_width:
            picked = set(rng.sample(range(len(cands)), params.max_width))
            cands = [lk for i, lk in enumerate(cands) if i in picked]
        for link in cands[: params.max_nodes - len(nodes)]:
            assert link.target is not None
            child = make_node(graph.docs[link.target], node.depth + 1, node.id)
            nodes.append(child)
            edges.append(make_edge(link, node.url))
            in_tree.add(child.id)
            queue.append(child)
    tree = Tree(id=tree_id, root=root, nodes=tuple(nodes), edges=tuple(edges))
    return Tree(
        id=tree_id, root=root, nodes=tree.nodes, edges=tree.edges, meta={"stats": tree_stats(tree)}
    )


def stats_of(tree: Tree) -> dict[str, Any]:
    """graph.stats as build_trees wrote it, or computed again. Why: a tree file is read back as
    it is on disk, and a `stats` that was not an object with STATS_KEYS made `trees show` and
    `snapshot trees` crash (AttributeError, KeyError) on a file that is otherwise a tree."""
    stats = tree.meta.get("stats")
    if isinstance(stats, dict) and all(k in stats for k in STATS_KEYS):
        return stats
    return tree_stats(tree)


def tree_stats(tree: Tree) -> dict[str, Any]:
    per_depth = Counter(n.depth for n in tree.nodes)
    kids = Counter(e.source for e in tree.edges)
    depth_of = {n.id: n.depth for n in tree.nodes}
    # Deepest node whose parent offers at least 4 children: depth 3 x width 4 questions.
    wide_depths = [depth_of[e.target] for e in tree.edges if kids[e.source] >= 4]
    return {
        "nodes": len(tree.nodes),
        "nodes_per_depth": [per_depth[d] for d in range(max(per_depth) + 1)],
        "max_depth": max(per_depth),
        "max_branching": max(kids.values(), default=0),
        "mean_branching": round(sum(kids.values()) / len(kids), 3) if kids else 0.0,
        "leaves": sum(1 for n in tree.nodes if n.id not in kids),
        "deepest_with_width4": max(wide_depths, default=0),
        "relations": dict(sorted(Counter(e.relation for e in tree.edges).items())),
    }


def build_trees(graph: LinkGraph, params: TreeParams) -> list[Tree]:
    params.check()
    cands = graph.root_candidates(params)
    if params.count > len(cands):
        raise DrarenaError(
            f"asked for {params.count} trees but the snapshot can root only {len(cands)} "
            f"(hub pages with >= {params.min_root_links} content links to other pages, "
            f">= {params.min_root_chars} chars of text and link density <= "
            f"{params.max_root_link_density})"
            + (f"; ask for --count {len(cands)} or fewer" if cands else "")
        )
    rng = random.Random(f"drarena-roots:{params.seed}")
    picked = sorted(rng.sample(range(len(cands)), params.count))
    return [grow_tree(graph, cands[i], f"tree-{k:03d}", params) for k, i in enumerate(picked)]


# --- files -----------------------------------------------------------------------------


def write_tree(path: Path, tree: Tree) -> dict[str, Any]:
    """Write `tree` to `path` (atomically) and return its trees/index.json entry (file,
    digest of the bytes written, root, stats): the one shape both built and imported trees
    are listed in."""
    write_atomic(path, tree_to_json(tree))
    root = tree.nodes[0]
    return {
        "id": tree.id,
        "file": path.name,
        "digest": file_sha256(path),
        "root": root.id,
        "root_url": root.url,
        "root_title": root.title,
        "stats": tree.meta["stats"],
    }


def tree_to_json(tree: Tree) -> str:
    """node-link JSON (networkx.node_link_graph(data, edges="links") reads it)."""
    data = {
        "directed": True,
        "multigraph": False,
        "graph": {"id": tree.id, "root": tree.root, **tree.meta},
        "nodes": [n.to_dict() for n in tree.nodes],
        "links": [e.to_dict() for e in tree.edges],
    }
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def tree_from_json(text: str, where: str = "tree") -> Tree:
    try:
        data = json.loads(text)
        if lone_surrogate(text, data):
            raise ValueError("lone surrogate in a string")
        graph = dict(data["graph"])
        tree_id, root = graph.pop("id"), graph.pop("root")
        if not isinstance(tree_id, str) or not isinstance(root, str):
            # a list root was unhashable in tree_problem, a null id broke `trees show --dot`
            raise TypeError("graph id and root must be strings")
        nodes = tuple(TreeNode.from_dict(n) for n in data["nodes"])
        edges = tuple(TreeEdge.from_dict(e) for e in data["links"])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than Python's recursion limit is still valid JSON
        raise DrarenaError(f"{where}: not a drarena tree file ({one_line(exc)})") from None
    tree = Tree(id=tree_id, root=root, nodes=nodes, edges=edges, meta=graph)
    problem = tree_problem(tree)
    if problem:
        raise DrarenaError(f"{where}: not a tree ({problem})")
    return tree


def tree_problem(tree: Tree) -> str | None:
    """What keeps `tree` from being a tree, or None: the root is a node, node ids are unique,
    edges join nodes, no node has two parents and every node hangs below the root.

    Why: the walker follows parents up to the root and the views walk children down from it;
    a file with a cycle once sent the walker into an endless loop, and an edge to an unknown
    node was a KeyError."""
    ids = [n.id for n in tree.nodes]
    known = set(ids)
    if len(known) != len(ids):
        return "a node id appears twice"
    if tree.root not in known:
        return f"root {tree.root!r} is not one of its nodes"
    parent: dict[str, str] = {}
    for edge in tree.edges:
        for end in (edge.source, edge.target):
            if end not in known:
                return f"edge {edge.source!r} -> {edge.target!r} names an unknown node {end!r}"
        if edge.target == tree.root:
            return f"an edge leads into the root {tree.root!r}"
        if edge.target in parent:
            return f"node {edge.target!r} has more than one parent"
        parent[edge.target] = edge.source
    depth = {tree.root: 0}  # each node's way up is walked once: linear in the nodes
    for node_id in ids:
        way_up: dict[str, None] = {}
        while node_id not in depth:
            if node_id in way_up:
                return f"its edges form a cycle through {node_id!r}"
            if node_id not in parent:
                return f"node {node_id!r} is not below the root {tree.root!r}"
            way_up[node_id] = None
            node_id = parent[node_id]
        below = depth[node_id]
        for up in reversed(way_up):  # nearest the known node first
            below += 1
            depth[up] = below
        if below > MAX_TREE_DEPTH:
            return (
                f"it is {below} levels deep, past the {MAX_TREE_DEPTH} a drarena tree may be "
                "(drarena builds them 4 deep by default)"
            )
    return None


def load_tree(path: Path) -> Tree:
    path = Path(path)
    try:
        text = read_bounded(path, MAX_TREE_BYTES, what="tree file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DrarenaError(f"{path}: not a drarena tree file (not UTF-8: {exc.reason})") from None
    except ValueError:
        # a name no file can have (a NUL, a lone surrogate: the tournament takes tree file
        # names from trees/index.json), which open() refuses with ValueError, not OSError
        shown = str(path).encode("utf-8", "backslashreplace").decode("utf-8")
        raise DrarenaError(f"{shown}: cannot read tree file (not a valid file name)") from None
    return tree_from_json(text, str(path))


def to_networkx(tree: Tree) -> Any:
    import networkx as nx

    return nx.node_link_graph(json.loads(tree_to_json(tree)), edges="links")


@dataclass(frozen=True, slots=True)
class TreesResult:
    out_dir: Path
    files: tuple[Path, ...]
    candidates: int
    up_to_date: bool


def build_snapshot_trees(
    snapshot_dir: Path,
    params: TreeParams,
    workers: int | None = None,
    progress: bool = True,
    at_least: int | None = None,
) -> TreesResult:
    """Extract if needed, then write trees/<id>.json and trees/index.json. Does nothing when
    index.json records the same docs/links digests and parameters.

    `at_least`: where the snapshot can root fewer than params.count trees but at least this
    many, build one on every candidate root instead of refusing. Why: a tournament asks for
    10 trees whatever its own count (so the trees do not change with it), and a small
    snapshot with 4 hub pages could then not play even `trees.count: 1`."""
    from drarena.corpus.extract import extract_snapshot, load_docs, load_links

    params.check()
    extracted = extract_snapshot(Path(snapshot_dir), workers=workers, progress=progress)
    out = extracted.snapshot_dir / TREES_DIR
    inputs = {
        "docs": file_sha256(extracted.docs_path),
        "links": file_sha256(extracted.links_path),
        "snapshot_fingerprint": extracted.fingerprint,
    }
    header = {"tree_version": TREE_VERSION, "params": _params_dict(params), "inputs": inputs}
    index_path = out / TREES_INDEX
    imported = imported_trees(out)
    if imported is not None:  # `snapshot import-trees` wrote them: never grown over
        return TreesResult(out, imported, len(imported), up_to_date=True)
    old = _read_trees_index(index_path)
    if old is not None:
        files = tuple(out / t["file"] for t in old["trees"])
        if (
            {k: old.get(k) for k in header} == header
            and files
            and all(
                f.is_file() and file_sha256(f) == t["digest"]
                for f, t in zip(files, old["trees"], strict=True)
            )
        ):
            return TreesResult(out, files, int(old.get("candidates", 0)), up_to_date=True)
    graph = LinkGraph.build(load_docs(extracted.snapshot_dir), load_links(extracted.snapshot_dir))
    roots = len(graph.root_candidates(params)) if at_least is not None else params.count
    # every candidate root; the index keeps the params asked for, so this stays up to date
    fewer = at_least is not None and at_least <= roots < params.count
    trees = build_trees(graph, replace(params, count=roots) if fewer else params)
    own_folder(out)
    for stale in out.iterdir():  # drarena's own names only: trees/ may hold the user's files
        if TREE_FILE.fullmatch(stale.name) and stale.is_file():
            stale.unlink()
    entries = []
    for tree in trees:
        tree = Tree(
            id=tree.id,
            root=tree.root,
            nodes=tree.nodes,
            edges=tree.edges,
            meta={
                **tree.meta,
                "seed": params.seed,
                "snapshot_fingerprint": extracted.fingerprint,
                "docs_digest": inputs["docs"],
            },
        )
        entries.append(write_tree(out / f"{tree.id}.json", tree))
    candidates = len(graph.root_candidates(params))
    index = {**header, "candidates": candidates, "trees": entries}
    write_atomic(index_path, json.dumps(index, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return TreesResult(out, tuple(out / e["file"] for e in entries), candidates, up_to_date=False)


def imported_trees(folder: Path) -> tuple[Path, ...] | None:
    """The tree files of trees/index.json when `snapshot import-trees` wrote it (its
    `imported` object), else None; DrarenaError when one of them is not the file it wrote.

    Why: a tournament builds a snapshot's trees when index.json does not match its
    parameters, which would replace imported trees (the paper's, whose structure is the
    point) by trees grown from the link graph; and a tree file edited since the import is
    no longer the reference's, so it is refused, not played."""
    index = _read_index_object(folder / TREES_INDEX)
    if index is None or not isinstance(index.get("imported"), dict):
        return None
    entries = index.get("trees")
    redo = "run `drarena snapshot import-trees` again"
    if not isinstance(entries, list) or not entries:
        raise DrarenaError(f"{folder / TREES_INDEX}: imported trees, but no `trees` list; {redo}")
    files = []
    for entry in entries:
        name = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not IMPORTED_TREE_FILE.fullmatch(name):
            raise DrarenaError(f"{folder / TREES_INDEX}: an entry without a tree file; {redo}")
        path = folder / name
        if not path.is_file() or file_sha256(path) != entry.get("digest"):
            raise DrarenaError(f"{path}: not the tree `snapshot import-trees` wrote; {redo}")
        files.append(path)
    return tuple(files)


def _read_index_object(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(read_bounded(path, MAX_TREES_INDEX_BYTES).decode("utf-8"))
    except (DrarenaError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _read_trees_index(path: Path) -> dict[str, Any] | None:
    """index.json as drarena wrote it, or None: absent, or not an object whose trees each
    name a file of drarena's (TREE_FILE) and its digest.

    Why None rather than an error: the index only says whether the trees are up to date, and
    a damaged one (`[]`, an entry without `file`) once blocked `snapshot trees` for good;
    treated as absent, the trees are built again and the index rewritten."""
    if not path.is_file():
        return None
    try:  # DrarenaError: larger than MAX_TREES_INDEX_BYTES, or unreadable
        old = json.loads(read_bounded(path, MAX_TREES_INDEX_BYTES).decode("utf-8"))
    except (DrarenaError, ValueError, RecursionError):  # RecursionError: nested past the limit
        return None
    if (
        not isinstance(old, dict)
        or not isinstance(old.get("trees"), list)
        or not isinstance(old.get("candidates", 0), int)
    ):
        return None
    for entry in old["trees"]:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("file"), str)
            and TREE_FILE.fullmatch(entry["file"])
            and isinstance(entry.get("digest"), str)
        ):
            return None
    return old


def _params_dict(params: TreeParams) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(params)


def summarize(trees: Sequence[Tree]) -> str:
    lines = []
    for tree in trees:
        s = stats_of(tree)
        lines.append(
            f"{tree.id}: {s['nodes']} nodes, depth {s['max_depth']}, "
            f"max branching {s['max_branching']}, per depth {s['nodes_per_depth']}  "
            f"{tree.nodes[0].url}"
        )
    return "\n".join(lines)
