"""Fuzzing how drarena reads back the corpus files it wrote: docs.jsonl and links.jsonl
(load_docs, load_links, the search DocStore), extract-manifest.json (`snapshot extract`),
tree-NNN.json (load_tree, `snapshot trees show`), and trees/index.json (`snapshot trees`,
the tournament's load_trees).

Property: a damaged file (mutated bytes, a JSONL line with wrong types or missing fields,
invalid UTF-8, lone surrogates in JSON escapes, a tree with a cycle or dangling ids, huge
numbers) is refused with a DrarenaError whose message is one line naming the file (and the
line, for JSONL), or is rebuilt where drarena says it rebuilds (extract-manifest.json, the
trees index), or is read correctly; never another exception and never a hang. Nothing drarena
did not create is deleted or changed.

Defects this file found are kept at the end as plain regression tests (each failed before
its fix).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import random
import re
import shutil
import tempfile
import types
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from fuzz_inputs import mutated, text_mutated
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.cli import main
from drarena.corpus.extract import (
    DOCS_FILE,
    LINKS_FILE,
    MANIFEST_FILE,
    extract_snapshot,
    load_docs,
    load_links,
)
from drarena.corpus.records import Doc, Link, Tree, TreeEdge, TreeNode
from drarena.corpus.trees import (
    TREES_DIR,
    TREES_INDEX,
    TreeParams,
    build_snapshot_trees,
    load_tree,
    summarize,
    tree_from_json,
    tree_to_json,
)
from drarena.corpus.treeview import render_dot, render_text
from drarena.corpus.treewalk import TreeWalker
from drarena.errors import DrarenaError
from drarena.search.docstore import DocStore
from drarena.web.warc.manifest import Counts
from drarena.web.warc.writer import Exchange, SnapshotWriter

BASE = "http://example.org"
PARAMS = TreeParams(count=1, seed=1)
TREES_ARGS = ["--count", "1", "--seed", "1", "--workers", "1", "--no-progress"]
# what the corpus stage owns in a snapshot folder; everything else must keep its bytes
_OWNED = re.compile(
    r"(docs\.jsonl|links\.jsonl|extract-manifest\.json|trees/index\.json|trees/tree-[0-9]{3,}"
    r"\.json)(\.tmp)?"
)
# a user's files among drarena's (trees/ may hold them, says build_snapshot_trees)
USER_FILES = {
    "notes.txt": b"my notes\n",
    "trees/notes.json": b'{"my": "notes"}\n',
    "trees/tree-mine.json": b"[]\n",
    "trees/tree-1.json": b"{}\n",
}


# --- inputs ------------------------------------------------------------------------------


def _para(topic: str, n: int) -> str:
    return " ".join(
        f"The {topic} module handles case number {i} with care and says why it matters."
        for i in range(n)
    )


def tiny_corpus(folder: Path) -> Path:
    """A 7-page snapshot (a hub linking to 6 content pages), extracted, with one tree: the
    smallest folder on which `snapshot extract` and `snapshot trees` do all their work."""
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "tiny",
        {"name": "tiny"},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
        new_id=lambda: f"<urn:uuid:00000000-0000-0000-0000-{next(ticks):012d}>",
    )
    writer.open()
    html = (("Content-Type", "text/html; charset=utf-8"),)
    kids = [f"topic{i}" for i in range(6)]
    links = "".join(
        f'<p>Read about <a href="/{k}.html">the {k} chapter</a>. {_para(k, 2)}</p>' for k in kids
    )
    pages = {"/": ("Hub", f"<p>{_para('hub', 12)}</p>{links}")}
    pages.update({f"/{k}.html": (k, f"<p>{_para(k, 8)}</p>") for k in kids})
    for path, (title, body) in pages.items():
        entity = (
            f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>"
            f"{body}</article></body></html>"
        ).encode()
        writer.write_exchange(
            Exchange(f"{BASE}{path}", (("Host", "example.org"),), 200, "OK", html, entity)
        )
    writer.close(complete=True, counts=Counts(pages=7, responses=7))
    extract_snapshot(folder, workers=1, progress=False)
    build_snapshot_trees(folder, PARAMS, workers=1, progress=False)
    for name, data in USER_FILES.items():
        (folder / name).write_bytes(data)
    return folder


def _small_jsonl(path: Path, lines: int, cut: int = 160) -> str:
    """The first `lines` records of a committed JSONL file, long strings cut to `cut` chars
    (same shape, cheap examples), as drarena writes them."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for _, line in zip(range(lines), fh, strict=False):
            data = json.loads(line)
            data = {k: v[:cut] if isinstance(v, str) else v for k, v in data.items()}
            out.append(json.dumps(data, sort_keys=True, ensure_ascii=False) + "\n")
    return "".join(out)


@functools.cache
def _seeds() -> tuple[str, str]:
    """The first docs.jsonl and links.jsonl records of the tiny corpus, as the real extractor
    writes them (a fresh clone has no docs.jsonl of the committed snapshot before a fixture
    builds one; made once, on first use, not while tests are collected)."""
    folder = Path(tempfile.mkdtemp(prefix="drarena-fuzz-seeds-"))
    try:
        tiny_corpus(folder / "tiny")
        return (
            _small_jsonl(folder / "tiny" / DOCS_FILE, 3),
            _small_jsonl(folder / "tiny" / LINKS_FILE, 5),
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def docs_seed() -> str:
    return _seeds()[0]


def links_seed() -> str:
    return _seeds()[1]


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tiny_corpus(root / "tiny")
        yield root


def _case(work: Path) -> Path:
    folder = work / "case"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(work / "tiny", folder)
    return folder


def _foreign(folder: Path) -> dict[str, bytes]:
    """Bytes of every file under `folder` that the corpus stage does not own."""
    return {
        rel: p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not _OWNED.fullmatch(rel := p.relative_to(folder).as_posix())
    }


# JSON values a hand edit, a foreign tool or a cut write may leave in a field
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([10**400, -(10**400), 1e308, 0.5, float("nan"), float("inf")]),
    st.text(max_size=12),  # no lone surrogates: those come from _ODD_TEXT
    st.sampled_from(["", "tree-000.json", "../manifest.json", "e04dadc1f6667ef1", "sha256:"]),
)
_ODD_TEXT = st.sampled_from(["\ud800", "a\udfffb", "\x00", "\u2028", "\r", "\n", "\ufeff"])
_VALUES = st.recursive(
    st.one_of(_LEAVES, _ODD_TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


def _fuzz_fields(data: st.DataObject, record: Any, extra: bool = True) -> Any:
    """`record` (a dict) with some fields dropped or replaced, an unknown one maybe added,
    or the whole record replaced by another JSON value."""
    if not isinstance(record, dict) or data.draw(st.integers(0, 9)) == 0:
        return data.draw(_VALUES)
    record = dict(record)
    for name in data.draw(st.lists(st.sampled_from(sorted(record) or ["x"]), max_size=3)):
        if data.draw(st.booleans()):
            record[name] = data.draw(_VALUES)
        else:
            record.pop(name, None)
    if extra and data.draw(st.integers(0, 7)) == 0:
        record[data.draw(st.text(max_size=5))] = data.draw(_VALUES)
    return record


def _dumps(value: Any) -> str:
    """One JSON line; ensure_ascii writes lone surrogates as \\udXXX escapes."""
    return json.dumps(value, ensure_ascii=True)


# --- checks ------------------------------------------------------------------------------


def _one_line(exc: DrarenaError, path: Path) -> str:
    msg = str(exc)
    assert "\n" not in msg and "\r" not in msg, msg
    assert str(path) in msg, msg
    return msg


def _cli(argv: list[str]) -> tuple[int, str, str]:
    """drarena.cli.main with stdout as a terminal would take it (strict UTF-8)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, raw.getvalue().decode("utf-8"), err.getvalue()


def _cli_error(rc: int, stderr: str, path: Path) -> None:
    assert rc == 2, (rc, stderr)
    assert stderr.startswith("drarena: error: ") and stderr.count("\n") == 1, stderr
    assert str(path) in stderr, stderr


_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "bool": bool,
    "str | None": (str, type(None)),
    "tuple[str, ...]": tuple,
}


def _typed(record: Any) -> None:
    """Every field of a record loaded back has its declared type (not just any JSON value)."""
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        assert isinstance(value, _TYPES[str(f.type)]), (f.name, value)
        if isinstance(value, tuple):
            assert all(isinstance(v, str) for v in value), (f.name, value)


# --- docs.jsonl and links.jsonl ------------------------------------------------------------


def _load_jsonl(folder: Path, name: str, data: bytes) -> None:
    path = folder / name
    path.write_bytes(data)
    lines = data.split(b"\n")
    n_lines = len(lines) - (lines[-1] == b"")
    loader: Callable[[Path], list[Any]] = load_docs if name == DOCS_FILE else load_links
    try:
        records = loader(folder)
    except DrarenaError as exc:
        msg = _one_line(exc, path)
        number = re.match(rf"{re.escape(str(path))}:(\d+): ", msg)
        assert number, msg  # names the line
        assert 1 <= int(number.group(1)) <= n_lines, msg
        return
    assert len(records) == n_lines
    for record in records:
        assert isinstance(record, Doc if name == DOCS_FILE else Link)
        _typed(record)
    if name == DOCS_FILE:  # the search stage reads the same file through its DocStore
        store = DocStore.from_snapshot(folder)
        assert len(store) == len({d.id for d in records})
        for doc in records:
            assert store.get(doc.id).id == doc.id


@pytest.fixture(scope="module")
def jsonl_dir(work: Path) -> Path:
    folder = work / "jsonl"
    folder.mkdir()
    return folder


@given(st.data())
@example(None)
def test_mutated_docs_jsonl(jsonl_dir: Path, data: st.DataObject | None) -> None:
    raw = (
        docs_seed().encode()
        if data is None
        else data.draw(st.one_of(mutated(docs_seed().encode()), text_mutated(docs_seed(), 6)))
    )
    _load_jsonl(jsonl_dir, DOCS_FILE, raw)


@given(st.data())
@example(None)
def test_mutated_links_jsonl(jsonl_dir: Path, data: st.DataObject | None) -> None:
    raw = (
        links_seed().encode()
        if data is None
        else data.draw(st.one_of(mutated(links_seed().encode()), text_mutated(links_seed(), 6)))
    )
    _load_jsonl(jsonl_dir, LINKS_FILE, raw)


@given(st.data(), st.sampled_from([DOCS_FILE, LINKS_FILE]))
def test_jsonl_fields(jsonl_dir: Path, data: st.DataObject, name: str) -> None:
    """Each line well-formed JSON; its fields dropped, retyped, nested, huge, surrogates."""
    seed = docs_seed() if name == DOCS_FILE else links_seed()
    lines = [json.loads(line) for line in seed.splitlines()]
    which = data.draw(st.sets(st.integers(0, len(lines) - 1), min_size=1))
    out = [_dumps(_fuzz_fields(data, r) if i in which else r) for i, r in enumerate(lines)]
    _load_jsonl(jsonl_dir, name, "".join(line + "\n" for line in out).encode())


# --- tree files ----------------------------------------------------------------------------

_IDS = st.sampled_from("abcdefg")


@given(
    st.lists(_IDS, min_size=0, max_size=8),
    st.lists(st.tuples(_IDS, _IDS), max_size=10),
    _IDS,
)
@example(list("abcd"), [("a", "b"), ("c", "d"), ("d", "c")], "a")  # a cycle off the root
@example(list("abc"), [("a", "b"), ("b", "c"), ("c", "b")], "a")  # two parents + cycle
@example(list("ab"), [("a", "b"), ("b", "z")], "a")  # dangling id
def test_tree_structure(nodes: list[str], edges: list[tuple[str, str]], root: str) -> None:
    """Any shape of nodes and edges: refused as not a tree, or a tree every reader can walk
    (each node reached once from the root; the walker's paths end)."""
    tree = Tree(
        id="t",
        root=root,
        nodes=tuple(TreeNode(n, f"http://x/{n}", n, "d", 0, 600) for n in nodes),
        edges=tuple(TreeEdge(s, t, "anchor", "", "see_also") for s, t in edges),
    )
    try:
        loaded = tree_from_json(tree_to_json(tree), "t.json")
    except DrarenaError as exc:
        assert str(exc).startswith("t.json: not a tree (") and "\n" not in str(exc)
        return
    seen: list[str] = []
    stack = [loaded.root]
    while stack:
        node = stack.pop()
        assert node not in seen and len(seen) <= len(nodes)
        seen.append(node)
        stack.extend(c.id for c in loaded.children(node))
    assert sorted(seen) == sorted(nodes)
    walker = TreeWalker(loaded, {}, random.Random(0))
    for node in nodes:
        path = walker.path_to(node)
        assert path[0] == root and path[-1] == node
    assert render_text(loaded).count("\n") == len(nodes) + 1
    render_dot(loaded)


def _tree_path(folder: Path) -> Path:
    return folder / TREES_DIR / "tree-000.json"


def _sync_index(folder: Path) -> None:
    """Make trees/index.json vouch for tree-000.json as it now is (a self-consistent edit)."""
    from drarena.digests import file_sha256

    index_path = folder / TREES_DIR / TREES_INDEX
    index = json.loads(index_path.read_text(encoding="utf-8"))
    index["trees"][0]["digest"] = file_sha256(_tree_path(folder))
    index_path.write_text(json.dumps(index), encoding="utf-8")


def _read_tree_every_way(folder: Path, data: bytes) -> None:
    path = _tree_path(folder)
    path.write_bytes(data)
    before = _foreign(folder)
    try:
        tree = load_tree(path)
    except DrarenaError as exc:
        _one_line(exc, path)
    else:
        assert isinstance(tree, Tree) and tree.nodes
        for node in tree.nodes:
            _typed(node)
    for argv in (
        ["snapshot", "trees", "show", str(path)],
        [*["snapshot", "trees", "show"], str(path), "--dot"],
    ):
        rc, _out, err = _cli(argv)
        if rc != 0:
            _cli_error(rc, err, path)
    # `snapshot trees` when the index vouches for the damaged file: up to date, read back
    _sync_index(folder)
    rc, _out, err = _cli(["snapshot", "trees", str(folder), *TREES_ARGS])
    if rc != 0:
        _cli_error(rc, err, path)
    assert _foreign(folder) == before


@given(st.data())
@example(None)
def test_mutated_tree_file(work: Path, data: st.DataObject | None) -> None:
    folder = _case(work)
    seed = _tree_path(folder).read_bytes()
    raw = (
        seed
        if data is None
        else data.draw(st.one_of(mutated(seed), text_mutated(seed.decode(), 6)))
    )
    _read_tree_every_way(folder, raw)


@given(st.data())
def test_tree_file_fields(work: Path, data: st.DataObject) -> None:
    folder = _case(work)
    tree = json.loads(_tree_path(folder).read_text(encoding="utf-8"))
    for part in data.draw(
        st.lists(st.sampled_from(["nodes", "links", "graph", "top"]), max_size=3)
    ):
        if part == "top":
            tree = _fuzz_fields(data, tree, extra=False)
        elif not isinstance(tree, dict):
            break
        elif part == "graph":
            old = tree.get("graph")
            if not isinstance(old, dict):
                continue
            graph = _fuzz_fields(data, {k: v for k, v in old.items() if k != "stats"})
            if isinstance(graph, dict) and "stats" in old:
                graph["stats"] = old["stats"]
            tree["graph"] = graph
        elif isinstance(tree.get(part), list) and tree[part]:
            items = list(tree[part])
            i = data.draw(st.integers(0, len(items) - 1))
            items[i] = _fuzz_fields(data, items[i])
            tree[part] = items
    _read_tree_every_way(folder, _dumps(tree).encode())


# --- trees/index.json ---------------------------------------------------------------------


def _load_trees_arena(folder: Path) -> None:
    """The tournament's reader of the trees index (drarena.runs.session.load_trees)."""
    from drarena.runs.session import load_trees

    config: Any = types.SimpleNamespace(
        snapshot=folder, trees=types.SimpleNamespace(ids=(), count=1)
    )
    try:
        trees = load_trees(config)
    except DrarenaError as exc:
        msg = str(exc)
        assert "\n" not in msg and str(folder / TREES_DIR) in msg, msg
        return
    assert all(isinstance(t, Tree) for t in trees.values())


def _rebuilds_index(folder: Path, data: bytes) -> None:
    index = folder / TREES_DIR / TREES_INDEX
    good = index.read_bytes()
    tree_bytes = _tree_path(folder).read_bytes()
    index.write_bytes(data)
    before = _foreign(folder)
    _load_trees_arena(folder)
    rc, out, err = _cli(["snapshot", "trees", str(folder), *TREES_ARGS])
    assert rc == 0, err  # a damaged index is rebuilt, never an error
    assert "1 trees" in out
    if "written" in out:
        assert index.read_bytes() == good
    assert _tree_path(folder).read_bytes() == tree_bytes
    assert _foreign(folder) == before
    rc, out, err = _cli(["snapshot", "trees", str(folder), *TREES_ARGS])
    assert rc == 0 and "up to date" in out, (out, err)


@given(st.data())
@example(None)
def test_mutated_trees_index(work: Path, data: st.DataObject | None) -> None:
    folder = _case(work)
    seed = (folder / TREES_DIR / TREES_INDEX).read_bytes()
    raw = (
        seed
        if data is None
        else data.draw(st.one_of(mutated(seed), text_mutated(seed.decode(), 6)))
    )
    _rebuilds_index(folder, raw)


@given(st.data())
def test_trees_index_fields(work: Path, data: st.DataObject) -> None:
    folder = _case(work)
    index = json.loads((folder / TREES_DIR / TREES_INDEX).read_text(encoding="utf-8"))
    if data.draw(st.booleans()):
        index["trees"] = [_fuzz_fields(data, e) for e in index["trees"]]
    else:
        index = _fuzz_fields(data, index)
    _rebuilds_index(folder, _dumps(index).encode())


# --- extract-manifest.json ---------------------------------------------------------------


def _rebuilds_manifest(folder: Path, data: bytes) -> None:
    path = folder / MANIFEST_FILE
    path.write_bytes(data)
    before = _foreign(folder)
    rc, _out, err = _cli(["snapshot", "extract", str(folder), "--workers", "1", "--no-progress"])
    if rc != 0:
        _cli_error(rc, err, path)
    else:
        assert load_docs(folder) and load_links(folder)  # what it wrote or kept reads back
        manifest = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(manifest, dict)
    assert _foreign(folder) == before


@given(st.data())
@example(None)
def test_mutated_extract_manifest(work: Path, data: st.DataObject | None) -> None:
    folder = _case(work)
    seed = (folder / MANIFEST_FILE).read_bytes()
    raw = (
        seed
        if data is None
        else data.draw(st.one_of(mutated(seed), text_mutated(seed.decode(), 6)))
    )
    _rebuilds_manifest(folder, raw)


@given(st.data())
def test_extract_manifest_fields(work: Path, data: st.DataObject) -> None:
    folder = _case(work)
    manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    part = data.draw(st.sampled_from(["top", "counts", "outputs", "params"]))
    if part == "top":
        manifest = _fuzz_fields(data, manifest)
    else:
        manifest[part] = _fuzz_fields(data, manifest[part])
    _rebuilds_manifest(folder, _dumps(manifest).encode())


# --- regressions: one per defect ---------------------------------------------------------


def _doc_line(**change: Any) -> str:
    data = json.loads(docs_seed().splitlines()[0])
    data.update(change)
    return _dumps(data) + "\n"


@pytest.mark.parametrize("which", ["docs", "links", "tree"])
def test_validation_errors_are_one_line(tmp_path: Path, which: str) -> None:
    if which == "docs":
        (tmp_path / DOCS_FILE).write_text(_doc_line(chars="many"), encoding="utf-8")
        reader: Callable[[], Any] = lambda: load_docs(tmp_path)  # noqa: E731
    elif which == "links":
        link = json.loads(links_seed().splitlines()[0]) | {"ordinal": "first"}
        (tmp_path / LINKS_FILE).write_text(_dumps(link) + "\n", encoding="utf-8")
        reader = lambda: load_links(tmp_path)  # noqa: E731
    else:
        node = TreeNode("a", "http://x/a", "a", "d", 0, 1)
        text = tree_to_json(Tree("t", "a", (node,), ())).replace('"depth": 0', '"depth": "x"')
        (tmp_path / "t.json").write_text(text, encoding="utf-8")
        reader = lambda: load_tree(tmp_path / "t.json")  # noqa: E731
    with pytest.raises(DrarenaError) as info:
        reader()
    assert "\n" not in str(info.value), str(info.value)


DEEP = '{"k": [' * 50_000 + "1" + "]}" * 50_000  # valid JSON, 100,000 levels deep


@pytest.mark.parametrize("which", ["docs", "links", "tree"])
def test_deep_nesting_is_one_error(tmp_path: Path, which: str) -> None:
    if which == "tree":
        path = tmp_path / "t.json"
        path.write_text(DEEP, encoding="utf-8")
        with pytest.raises(DrarenaError, match=r"t\.json: not a drarena tree file"):
            load_tree(path)
        return
    name = DOCS_FILE if which == "docs" else LINKS_FILE
    (tmp_path / name).write_text(DEEP + "\n", encoding="utf-8")
    with pytest.raises(DrarenaError, match=rf"{name}:1: "):
        (load_docs if which == "docs" else load_links)(tmp_path)


def test_a_deeply_nested_trees_index_is_rebuilt(work: Path) -> None:
    folder = _case(work)
    (folder / TREES_DIR / TREES_INDEX).write_text(DEEP, encoding="utf-8")
    assert not build_snapshot_trees(folder, PARAMS, workers=1, progress=False).up_to_date


def test_a_deeply_nested_extract_manifest_is_rebuilt(work: Path) -> None:
    folder = _case(work)
    (folder / MANIFEST_FILE).write_text(DEEP, encoding="utf-8")
    assert not extract_snapshot(folder, workers=1, progress=False).up_to_date


def test_show_a_tree_with_a_lone_surrogate(tmp_path: Path) -> None:
    node = TreeNode("a", "http://x/a", "\ud800", "d", 0, 1)
    path = tmp_path / "t.json"
    path.write_text(_dumps(json.loads(tree_to_json(Tree("t", "a", (node,), ())))))
    rc, _out, err = _cli(["snapshot", "trees", "show", str(path)])
    if rc:
        _cli_error(rc, err, path)


def test_trees_from_docs_with_a_lone_surrogate(work: Path) -> None:
    from drarena.digests import file_sha256

    folder = _case(work)
    shutil.rmtree(folder / TREES_DIR)
    lines = (folder / DOCS_FILE).read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    for doc in docs:
        doc["title"] = "\ud800" + doc["title"]
    (folder / DOCS_FILE).write_text("".join(_dumps(d) + "\n" for d in docs), encoding="utf-8")
    manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    manifest["outputs"][DOCS_FILE] = file_sha256(folder / DOCS_FILE)  # a consistent edit
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")
    rc, _out, err = _cli(["snapshot", "trees", str(folder), *TREES_ARGS])
    if rc:
        _cli_error(rc, err, folder / DOCS_FILE)


@pytest.mark.parametrize(
    ("stats", "command"),
    [([1], "show"), ("s", "show"), ({"x": 1}, "trees"), (5, "trees")],
)
def test_trees_with_damaged_stats_are_one_error(work: Path, stats: Any, command: str) -> None:
    folder = _case(work)
    path = _tree_path(folder)
    tree = json.loads(path.read_text(encoding="utf-8"))
    tree["graph"]["stats"] = stats
    path.write_text(json.dumps(tree), encoding="utf-8")
    _sync_index(folder)
    if command == "show":
        rc, _out, err = _cli(["snapshot", "trees", "show", str(path)])
    else:
        rc, _out, err = _cli(["snapshot", "trees", str(folder), *TREES_ARGS])
    if rc:
        _cli_error(rc, err, path)
    else:
        summarize([load_tree(path)])


@pytest.mark.parametrize(("key", "value"), [("root", ["a"]), ("id", None)])
def test_an_unhashable_root_is_one_error(tmp_path: Path, key: str, value: Any) -> None:
    node = TreeNode("a", "http://x/a", "a", "d", 0, 1)
    tree = json.loads(tree_to_json(Tree("t", "a", (node,), ())))
    tree["graph"][key] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps(tree), encoding="utf-8")
    rc, _out, err = _cli(["snapshot", "trees", "show", str(path), "--dot"])
    _cli_error(rc, err, path)


@pytest.mark.parametrize(
    "change",
    [{"counts": {}}, {"counts": []}, {"outputs": []}],
)
def test_a_damaged_extract_manifest_is_rebuilt(work: Path, change: dict[str, Any]) -> None:
    folder = _case(work)
    path = folder / MANIFEST_FILE
    manifest = json.loads(path.read_text(encoding="utf-8")) | change
    path.write_text(json.dumps(manifest), encoding="utf-8")
    rc, _out, err = _cli(["snapshot", "extract", str(folder), "--workers", "1", "--no-progress"])
    assert rc == 0, err
    assert json.loads(path.read_text(encoding="utf-8"))["counts"]["pages"] == 7


def test_a_rebuild_keeps_a_user_file_named_with_other_digits(work: Path) -> None:
    folder = _case(work)
    mine = folder / TREES_DIR / "tree-\u0661\u0662\u0663.json"
    mine.write_text("my notes", encoding="utf-8")
    (folder / TREES_DIR / TREES_INDEX).write_text("{", encoding="utf-8")  # damaged: rebuild
    assert not build_snapshot_trees(folder, PARAMS, workers=1, progress=False).up_to_date
    assert mine.read_text(encoding="utf-8") == "my notes"


@pytest.mark.parametrize(
    "entries",
    [
        [{"id": "tree-000", "file": 5}],
        [{"id": "tree-000"}],
        [{"id": 1, "file": "x"}, {"id": "a", "file": "y"}],
    ],
)
def test_arena_index_with_odd_entries_is_one_error(work: Path, entries: list[Any]) -> None:
    from drarena.runs.session import load_trees

    folder = _case(work)
    (folder / TREES_DIR / TREES_INDEX).write_text(json.dumps({"trees": entries}))
    config: Any = types.SimpleNamespace(
        snapshot=folder, trees=types.SimpleNamespace(ids=(), count=1)
    )
    with pytest.raises(DrarenaError):
        load_trees(config)


def test_drift_reads_only_drarena_s_tree_files(work: Path) -> None:
    from drarena.drift.stale import load_snapshot_trees

    folder = _case(work)  # holds trees/notes.json and trees/tree-mine.json of the user's
    assert [t.id for t in load_snapshot_trees(folder)] == ["tree-000"]


def test_user_files_survive_a_rebuild(work: Path) -> None:
    """The property the fuzz tests check per example, once plainly."""
    folder = _case(work)
    before = _foreign(folder)
    (folder / TREES_DIR / TREES_INDEX).write_text("[]", encoding="utf-8")
    (folder / MANIFEST_FILE).write_text("{", encoding="utf-8")
    assert _cli(["snapshot", "extract", str(folder), "--workers", "1", "--no-progress"])[0] == 0
    assert _cli(["snapshot", "trees", str(folder), *TREES_ARGS])[0] == 0
    assert _foreign(folder) == before


@pytest.mark.parametrize("name", ["\ud800.json", "a\x00b.json"])
def test_a_tree_file_name_no_file_can_have_is_one_error(tmp_path: Path, name: str) -> None:
    """The tournament joins trees/index.json's `file` to the folder: a lone surrogate or a NUL
    there made load_tree raise UnicodeEncodeError / ValueError (found by the index fuzz)."""
    with pytest.raises(DrarenaError, match="cannot read tree file") as info:
        load_tree(tmp_path / name)
    assert "\n" not in str(info.value) and str(tmp_path) in str(info.value)
    str(info.value).encode("utf-8")  # printable as it is
