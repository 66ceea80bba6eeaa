"""`drarena snapshot import-trees`: the DR-Arena paper's released Information Trees as a
drarena snapshot (WARC + CDXJ + manifest, docs.jsonl, links.jsonl) with its trees in
drarena's tree format.

Why: the paper's trees (iNLP-Lab/DR-Arena, web_tree/data/dataset/trees/tree_NNNN.json) are
the only trees its tournament was played on; with them as a snapshot the same commands
(extract, search index, tournament, report, replay) run on the paper's data. The repository
has no license, so drarena ships none of it: a user clones it and runs this command.

What the import keeps and what it cannot:
- Each node becomes one page of the snapshot. The reference stores no HTML, only the text
  its crawler extracted (`content`), with `title`, `description` and the node's outgoing
  `link_contexts`; the page is stored as a `TEXT_PAGE_TYPE` JSON response holding exactly
  those, and extraction takes `content` verbatim as the page's text. The manifest's
  `spec.kind` is `paper-trees` and `spec.pages` says so.
- The tree keeps the reference's structure: every node at its place, with its depth, and
  each edge's anchor, surrounding text and relationship from the parent's `link_contexts`
  (the child's `relationship_cluster` where the parent lists no context for it).
- A URL can occur at several places of a tree and in several trees; the snapshot holds one
  page per URL (the first copy with text, in file and breadth-first order). Every place
  stays a node: a repeat gets its own node id and names its page in `TreeNode.doc`.
- The released files are the trees after the paper's live expansion (the match loop writes
  the nodes it crawled back into the tree file: core/evolvement_loop.py around line 225),
  so a match cannot start from the paper's exact starting state.
- The WARC bytes depend only on the input files (record ids and dates are derived, not
  drawn), so two imports of the same files have the same snapshot fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drarena import __version__
from drarena.corpus.page import MAX_PAGE_BYTES, TEXT_PAGE_TYPE
from drarena.corpus.records import Tree, TreeEdge, TreeNode
from drarena.corpus.trees import (
    MAX_TREE_DEPTH,
    TREE_VERSION,
    TREES_DIR,
    TREES_INDEX,
    tree_problem,
    tree_stats,
    write_tree,
)
from drarena.digests import file_sha256
from drarena.errors import DrarenaError
from drarena.files import read_bounded, write_atomic
from drarena.quoting import shown
from drarena.records import lone_surrogate
from drarena.web.warc.urls import canonicalize_url, safe_file_name

KIND = "paper-trees"
MARK = ".drarena-import-trees"  # in the snapshot folder: a folder holding it is this command's
REFERENCE = "iNLP-Lab/DR-Arena"
TREE_NAME = re.compile(r"tree_([0-9]{1,9})\.json")
# where the trees sit in a clone of the reference repository
TREES_IN_REPO = ("web_tree/data/dataset/trees", "data/dataset/trees", "trees")
SUMMARY_IN_REPO = ("web_tree/data/dataset/summary.json", "data/dataset/summary.json")
# Why 64 MiB a tree file: the largest released one (tree_0006) is 1.6 MB, the largest page
# 206,791 characters; 40x that is room for a larger release, and a file past it (or a file of
# zeros) is refused before it is decoded.
MAX_TREE_FILE_BYTES = 64 << 20
# Why 100,000 nodes: the released trees hold 22 to 379 nodes; a tree is walked and written
# whole, so a hand-made file of millions of nodes is refused, not held in memory.
MAX_NODES = 100_000
# Why 10,000 files: the paper released 30 trees; every file is parsed before writing.
MAX_TREE_FILES = 10_000
# summary.json (topics per tree): 23 KB released.
MAX_SUMMARY_BYTES = 16 << 20
# a node's depth: the released trees reach 8; drarena's own tree cap applies
MAX_DEPTH = MAX_TREE_DEPTH
# Capture date of every record when summary.json gives none (its `updated_at` otherwise):
# the reference records no crawl date per page.
UNKNOWN_DATE = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RefLink:
    """One entry of a reference node's `link_contexts`."""

    url: str  # canonical
    anchor: str
    context: str
    relationship: str


@dataclass(frozen=True, slots=True)
class RefNode:
    """One node of a reference tree, validated; `children` in the file's order."""

    url: str  # canonical
    title: str
    description: str
    content: str
    depth: int
    error: str
    cluster: str  # relationship_cluster: the relation to its parent
    links: tuple[RefLink, ...]
    children: tuple[RefNode, ...]
    where: str = ""  # its field path in the file (root.children[2]), for error lines


@dataclass(frozen=True, slots=True)
class RefTree:
    id: str
    file: str
    sha256: str
    root: RefNode
    nodes: int

    def breadth_first(self) -> Iterator[tuple[RefNode, RefNode | None]]:
        """(node, parent) in breadth-first order, children in file order."""
        queue: deque[tuple[RefNode, RefNode | None]] = deque([(self.root, None)])
        while queue:
            node, parent = queue.popleft()
            yield node, parent
            queue.extend((child, node) for child in node.children)


@dataclass(frozen=True, slots=True)
class ImportResult:
    out: Path
    trees: tuple[Path, ...]
    pages: int
    nodes: int
    repeats: int  # nodes whose page another node of the same tree already holds
    differing: int  # copies of a URL whose text differs from the page kept
    fingerprint: str


# --- reading the reference files ------------------------------------------------------------


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _text(obj: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise _Bad(f"{where}.{key}", "must be a string" + ("" if required else " or null"))
    return value


def _url(value: str, field: str) -> str:
    try:
        canonical = canonicalize_url(value)
    except ValueError as exc:
        raise _Bad(field, f"not a URL ({exc})") from None
    if not canonical.startswith(("http://", "https://")) or "\n" in value:
        raise _Bad(field, f"not an http(s) URL: {shown(value, 80)}")
    return canonical


def _links(obj: dict[str, Any], where: str) -> tuple[RefLink, ...]:
    raw = obj.get("link_contexts")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _Bad(f"{where}.link_contexts", "must be a list")
    out = []
    for i, item in enumerate(raw):
        at = f"{where}.link_contexts[{i}]"
        if not isinstance(item, dict):
            raise _Bad(at, "must be an object")
        out.append(
            RefLink(
                url=_url(_text(item, "url", at, required=True), f"{at}.url"),
                anchor=_text(item, "anchor_text", at),
                context=_text(item, "surrounding_text", at),
                relationship=_text(item, "relationship", at),
            )
        )
    return tuple(out)


def parse_reference_tree(data: Any) -> tuple[RefNode, int]:
    """The validated tree and its node count; _Bad names the first field that is wrong.
    Iterative (children are built after their subtrees), so a deep file costs no stack."""
    if not isinstance(data, dict):
        raise _Bad("root", "must be an object (a tree node)")
    # post-order without recursion: each entry is (raw node, field path, parent depth)
    order: list[tuple[dict[str, Any], str, int | None]] = []
    stack: list[tuple[Any, str, int | None]] = [(data, "root", None)]
    while stack:
        raw, where, parent_depth = stack.pop()
        if not isinstance(raw, dict):
            raise _Bad(where, "must be an object (a tree node)")
        if len(order) >= MAX_NODES:
            raise _Bad(where, f"the tree has more than {MAX_NODES} nodes")
        depth = raw.get("depth")
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise _Bad(f"{where}.depth", "must be a whole number >= 0")
        expected = 0 if parent_depth is None else parent_depth + 1
        if depth != expected:
            raise _Bad(f"{where}.depth", f"is {depth}, where its place in the tree is {expected}")
        if depth > MAX_DEPTH:
            raise _Bad(f"{where}.depth", f"is past the {MAX_DEPTH} levels a tree may have")
        children = raw.get("children")
        if children is not None and not isinstance(children, list):
            raise _Bad(f"{where}.children", "must be a list")
        order.append((raw, where, parent_depth))
        for i, child in enumerate(children or ()):
            stack.append((child, f"{where}.children[{i}]", depth))
    built: dict[int, RefNode] = {}
    for raw, where, _ in reversed(order):  # every child before its parent
        kids = tuple(built.pop(id(child)) for child in raw.get("children") or ())
        content = _text(raw, "content", where)
        if len(content.encode("utf-8", "surrogatepass")) > MAX_PAGE_BYTES // 2:
            raise _Bad(
                f"{where}.content",
                f"{len(content)} characters, past what a page may hold "
                f"({MAX_PAGE_BYTES // 2} bytes)",
            )
        built[id(raw)] = RefNode(
            url=_url(_text(raw, "url", where, required=True), f"{where}.url"),
            title=_text(raw, "title", where),
            description=_text(raw, "description", where),
            content=content,
            depth=raw["depth"],
            error=_text(raw, "error", where),
            cluster=_text(raw, "relationship_cluster", where),
            links=_links(raw, where),
            children=kids,
            where=where,
        )
    return built[id(data)], len(order)


def read_reference_tree(path: Path) -> RefTree:
    """One tree_NNNN.json, bounded and validated: DrarenaError in one line naming the file
    and the field."""
    match = TREE_NAME.fullmatch(path.name)
    if match is None:
        raise DrarenaError(f"{path}: not a reference tree file name (tree_NNNN.json)")
    raw = read_bounded(path, MAX_TREE_FILE_BYTES, what="reference tree file")
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except UnicodeDecodeError as exc:
        raise DrarenaError(f"{path}: not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DrarenaError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise DrarenaError(f"{path}: JSON nested too deep to read") from None
    if lone_surrogate(text, data):
        raise DrarenaError(f"{path}: a string holds a lone surrogate (\\ud800-\\udfff)")
    try:
        root, count = parse_reference_tree(data)
    except _Bad as bad:
        raise DrarenaError(f"{path}: field {bad.field}: {bad.message}") from None
    return RefTree(
        id=path.name.removesuffix(".json"),
        file=path.name,
        sha256="sha256:" + hashlib.sha256(raw).hexdigest(),  # the bytes read, not a 2nd read
        root=root,
        nodes=count,
    )


def tree_folder(source: Path) -> Path:
    """The folder holding tree_NNNN.json: `source` itself, or where the reference
    repository keeps them under it."""
    if not source.is_dir():
        raise DrarenaError(f"{source}: no such folder (a clone of {REFERENCE}, or its trees)")
    for sub in TREES_IN_REPO:
        if (source / sub).is_dir() and any(_tree_files(source / sub)):
            return source / sub
    if any(_tree_files(source)):
        return source
    raise DrarenaError(
        f"{source}: no tree_NNNN.json here nor under {TREES_IN_REPO[0]}/ (clone {REFERENCE}; "
        "its large files may need `git lfs pull`)"
    )


def _tree_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if TREE_NAME.fullmatch(p.name) and p.is_file())


def read_summary(source: Path, trees: Path) -> dict[str, Any]:
    """summary.json's per-tree entries by tree id and its `updated_at`, or {} without one."""
    for path in (trees.parent / "summary.json", *(source / s for s in SUMMARY_IN_REPO)):
        if path.is_file():
            break
    else:
        return {}
    raw = read_bounded(path, MAX_SUMMARY_BYTES, what="summary")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DrarenaError(f"{path}: not JSON ({shown(str(exc), 120)})") from None
    if not isinstance(data, dict):
        raise DrarenaError(f"{path}: field (top level): must be an object")
    entries = data.get("trees", [])
    if not isinstance(entries, list):
        raise DrarenaError(f"{path}: field trees: must be a list")
    out: dict[str, Any] = {"trees": {}}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("tree_id"), str):
            raise DrarenaError(f"{path}: field trees[{i}].tree_id: must be a string")
        out["trees"][entry["tree_id"]] = {
            k: entry[k] for k in ("topic", "subtopic", "root_url") if isinstance(entry.get(k), str)
        } | ({"stats": entry["stats"]} if isinstance(entry.get("stats"), dict) else {})
    info = data.get("dataset_info")
    if isinstance(info, dict) and isinstance(info.get("updated_at"), str):
        out["updated_at"] = info["updated_at"]
    out["file"], out["sha256"] = path.name, "sha256:" + hashlib.sha256(raw).hexdigest()
    return out


# --- the pages ------------------------------------------------------------------------------


def page_body(node: RefNode) -> bytes:
    """The stored page: what the reference holds of it, as one JSON object (TEXT_PAGE_TYPE)."""
    data = {
        "title": node.title,
        "description": node.description,
        "content": node.content,
        "links": [{"url": lk.url, "anchor": lk.anchor, "context": lk.context} for lk in node.links],
        "error": node.error,
    }
    return json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")


def choose_pages(trees: list[RefTree]) -> tuple[dict[str, RefNode], int]:
    """One page per URL: its first copy with text (file order, then breadth-first), else its
    first copy; and how many other copies have a text of their own that differs."""
    first: dict[str, RefNode] = {}
    for tree in trees:
        for node, _ in tree.breadth_first():
            held = first.get(node.url)
            if held is None or (not held.content and node.content):
                first[node.url] = node
    differing = 0
    for tree in trees:
        for node, _ in tree.breadth_first():
            kept = first[node.url]
            if node is not kept and node.content and node.content != kept.content:
                differing += 1
    return first, differing


def _capture_date(summary: dict[str, Any]) -> datetime:
    stamp = summary.get("updated_at")
    if isinstance(stamp, str):
        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            return UNKNOWN_DATE
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return UNKNOWN_DATE


# --- the output folder ----------------------------------------------------------------------


def _claim(out: Path) -> None:
    """Make `out` this command's: a new or empty folder gets MARK; a folder with MARK is an
    earlier import, whose files (and only those) are removed. Anything else is refused: the
    import never overwrites a file drarena did not create."""
    if out.exists() and not out.is_dir():
        raise DrarenaError(f"{out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARK).is_file():
        raise DrarenaError(
            f"{out}: folder is not empty and not made by `snapshot import-trees`; "
            "choose another --out (nothing was written)"
        )
    out.mkdir(parents=True, exist_ok=True)
    mark = out / MARK
    if mark.is_file():
        for name in _made_by_earlier(out):
            (out / name).unlink(missing_ok=True)
    write_atomic(mark, "made by `drarena snapshot import-trees`; its files may be rewritten\n")


def _made_by_earlier(out: Path) -> list[str]:
    """The files an earlier import wrote into `out` (its manifest and tree index name them)."""
    names = ["manifest.json", "index.cdxj", "docs.jsonl", "links.jsonl", "extract-manifest.json"]
    try:
        manifest = json.loads(read_bounded(out / "manifest.json", 1 << 30).decode("utf-8"))
        names += [safe_file_name(f["name"]) for f in manifest.get("warc_files", [])]
    except (DrarenaError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        pass
    names += [
        f"{TREES_DIR}/{p.name}"
        for p in (out / TREES_DIR).glob("tree_*.json")
        if TREE_NAME.fullmatch(p.name)
    ]
    names.append(f"{TREES_DIR}/{TREES_INDEX}")
    return names


# --- the import -----------------------------------------------------------------------------


def import_trees(source: Path, name: str, out: Path) -> ImportResult:
    """Read and check every tree file first (nothing is written on a bad one), then write the
    snapshot, extract it, and write the trees over its pages."""
    from drarena.corpus.extract import extract_snapshot, load_docs

    safe_file_name(name, "snapshot name")
    folder, trees = _read_trees(Path(source))
    summary = read_summary(Path(source), folder)
    pages, differing = choose_pages(trees)
    bodies = _page_bodies(folder, trees, pages)
    _claim(out)
    spec = _snapshot_spec(trees, pages, summary)
    fingerprint = _write_pages(out, name, spec, _capture_date(summary), bodies)
    extracted = extract_snapshot(out, workers=1, progress=False, force=True)
    docs = {d.url: d for d in load_docs(out)}
    inputs = {"docs": file_sha256(extracted.docs_path), "snapshot_fingerprint": fingerprint}
    written, nodes, repeats = _write_trees(out, trees, docs, summary, inputs)
    return ImportResult(out, tuple(written), len(pages), nodes, repeats, differing, fingerprint)


def _read_trees(source: Path) -> tuple[Path, list[RefTree]]:
    """The folder of the tree files and every tree in it, each read and checked: a bad one
    stops the import before anything is written."""
    folder = tree_folder(source)
    files = _tree_files(folder)
    if len(files) > MAX_TREE_FILES:
        raise DrarenaError(f"{folder}: {len(files)} tree files, past {MAX_TREE_FILES}")
    return folder, [read_reference_tree(p) for p in files]


def _page_bodies(folder: Path, trees: list[RefTree], pages: dict[str, RefNode]) -> dict[str, bytes]:
    """Each page's stored body by URL, checked against MAX_PAGE_BYTES as stored: escaped JSON
    can outgrow the text, so the node's own length is not enough."""
    bodies = {url: page_body(node) for url, node in pages.items()}
    for url, body in bodies.items():
        if len(body) > MAX_PAGE_BYTES:
            file = next(t.file for t in trees for n, _ in t.breadth_first() if n is pages[url])
            raise DrarenaError(
                f"{folder / file}: field {pages[url].where}: the page is {len(body)} bytes "
                f"as stored, past the {MAX_PAGE_BYTES} a page may be"
            )
    return bodies


def _snapshot_spec(
    trees: list[RefTree], pages: dict[str, RefNode], summary: dict[str, Any]
) -> dict[str, Any]:
    """The manifest's `spec`: what was imported from where, and that its pages are text only
    (a reader of the snapshot must not expect HTML)."""
    return {
        "kind": KIND,
        "reference": REFERENCE,
        "pages": f"text only: each page is the reference's extracted text as a "
        f"{TEXT_PAGE_TYPE} JSON object (title, description, content, links, error); the "
        "reference stores no HTML",
        "media_type": TEXT_PAGE_TYPE,
        "text_only_pages": len(pages),
        "failed_in_reference": sum(1 for p in pages.values() if p.error and not p.content),
        "trees": _tree_files_spec(trees),
        "summary": {k: summary[k] for k in ("file", "sha256") if k in summary},
    }


def _tree_files_spec(trees: list[RefTree]) -> list[dict[str, str]]:
    """The tree files imported (id, file, digest): the manifest's spec and the trees index
    both name them."""
    return [{"id": t.id, "file": t.file, "sha256": t.sha256} for t in trees]


def _write_pages(
    out: Path, name: str, spec: dict[str, Any], date: datetime, bodies: dict[str, bytes]
) -> str:
    """Write the pages as the snapshot's WARC, CDXJ and manifest; its fingerprint. Record ids
    and dates are derived, not drawn, so the same files give the same fingerprint."""
    from drarena.web.warc.manifest import Counts
    from drarena.web.warc.writer import Exchange, SnapshotWriter

    made = [0]

    def record_id() -> str:
        made[0] += 1
        return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'drarena:{name}:{made[0]}')}>"

    writer = SnapshotWriter(
        folder=out,
        name=name,
        spec=spec,
        software={"drarena": __version__},
        clock=lambda: date,
        new_id=record_id,
    )
    writer.open()
    total = 0
    done = False
    try:
        for url, body in bodies.items():
            total += len(body)
            writer.write_exchange(
                Exchange(
                    url=url,
                    request_headers=(("User-Agent", f"drarena import-trees ({REFERENCE})"),),
                    status=200,
                    reason="OK",
                    response_headers=(
                        ("Content-Type", f"{TEXT_PAGE_TYPE}; charset=utf-8"),
                        ("Content-Length", str(len(body))),
                    ),
                    entity=body,
                )
            )
        done = True
    finally:  # an interrupted import leaves an incomplete snapshot, said so in its manifest
        pages = len(bodies)
        manifest = writer.close(
            complete=done,
            counts=Counts(pages=pages, responses=pages, statuses={"200": pages}, bytes=total),
        )
    return manifest.fingerprint


def _write_trees(
    out: Path,
    trees: list[RefTree],
    docs: dict[str, Any],
    summary: dict[str, Any],
    inputs: dict[str, str],
) -> tuple[list[Path], int, int]:
    """Write each tree over the extracted pages, and the trees index; the paths written, the
    nodes and the repeated nodes. `inputs` (docs digest, snapshot fingerprint) names the
    pages they were written over, in every tree's meta and in the index, as built trees do."""
    written, nodes, repeats = [], 0, 0
    tree_dir = out / TREES_DIR
    tree_dir.mkdir(exist_ok=True)
    entries = []
    for ref in trees:
        tree, repeated = convert_tree(ref, docs, summary.get("trees", {}).get(ref.id, {}))
        tree = Tree(
            id=tree.id,
            root=tree.root,
            nodes=tree.nodes,
            edges=tree.edges,
            meta={
                **tree.meta,
                "snapshot_fingerprint": inputs["snapshot_fingerprint"],
                "docs_digest": inputs["docs"],
            },
        )
        nodes += len(tree.nodes)
        repeats += repeated
        path = tree_dir / f"{tree.id}.json"
        entries.append(write_tree(path, tree))
        written.append(path)
    index = {
        "tree_version": TREE_VERSION,
        "imported": {"kind": KIND, "reference": REFERENCE, "files": _tree_files_spec(trees)},
        "inputs": inputs,
        "candidates": len(entries),
        "trees": entries,
    }
    write_atomic(
        tree_dir / TREES_INDEX, json.dumps(index, indent=1, sort_keys=True, ensure_ascii=False)
    )
    return written, nodes, repeats


def convert_tree(ref: RefTree, docs: dict[str, Any], about: dict[str, Any]) -> tuple[Tree, int]:
    """The reference tree in drarena's format over the snapshot's pages; and how many of its
    nodes repeat a page the tree already holds."""
    ids: dict[int, str] = {}
    used: dict[str, int] = {}
    nodes: list[TreeNode] = []
    edges: list[TreeEdge] = []
    repeats = 0
    for node, parent in ref.breadth_first():
        doc = docs[node.url]
        seen = used.get(doc.id, 0)
        used[doc.id] = seen + 1
        node_id = doc.id if not seen else f"{doc.id}-{seen + 1}"
        repeats += bool(seen)
        ids[id(node)] = node_id
        parent_id = None if parent is None else ids[id(parent)]
        nodes.append(
            TreeNode(
                id=node_id,
                url=doc.url,
                title=node.title or doc.title,
                digest=doc.digest,
                depth=node.depth,
                chars=doc.chars,
                parent=parent_id,
                doc=doc.id if seen else None,
            )
        )
        if parent is not None and parent_id is not None:
            link = next((lk for lk in parent.links if lk.url == node.url), None)
            edges.append(
                TreeEdge(
                    source=parent_id,
                    target=node_id,
                    anchor=link.anchor if link else "",
                    context=link.context if link else "",
                    relation=(link.relationship if link else "") or node.cluster,
                )
            )
    tree = Tree(id=ref.id, root=nodes[0].id, nodes=tuple(nodes), edges=tuple(edges))
    problem = tree_problem(tree)
    if problem:  # cannot happen for a parsed reference tree: a bug, said plainly
        raise DrarenaError(f"{ref.file}: not a tree after import ({problem})")
    meta: dict[str, Any] = {
        "stats": tree_stats(tree),
        "source": {"reference": REFERENCE, "file": ref.file, "sha256": ref.sha256},
    }
    if about:
        meta["reference_summary"] = about
    return Tree(id=tree.id, root=tree.root, nodes=tree.nodes, edges=tree.edges, meta=meta), repeats
