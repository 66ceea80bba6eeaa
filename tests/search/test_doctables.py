"""DocStore's tables kept in the index folder (drarena/search/doctables.py): written by the
first open, memory-mapped by the next without parsing docs.jsonl, answering exactly as the
store built in memory; a docs.jsonl that changed (other size, or the same size with other
bytes), a damaged table file or record, and a folder that cannot be written all read
docs.jsonl through as before."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_docstore import RECORDS, lookups, record, records_snapshot, same_answers
from test_stamps import rewrite_in_place

from drarena.corpus import extract
from drarena.errors import DrarenaError
from drarena.search import doctables
from drarena.search.docstore import DocStore, load_source_docs
from drarena.search.doctables import ARRAYS, TABLES_FILE

NAMES = [f"{name}.npy" for name in ARRAYS]


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return records_snapshot(tmp_path)


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    return tmp_path / "index" / "snap" / "doctables"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The snapshots whose docs.jsonl was read through (extract.doc_lines' calls)."""
    calls: list[Path] = []
    real = extract.doc_lines

    def counting(snapshot_dir: Path, *args: object) -> Iterator[tuple[int, int, object]]:
        calls.append(Path(snapshot_dir))
        return real(snapshot_dir, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(extract, "doc_lines", counting)
    return calls


def no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("docs.jsonl read through")

    monkeypatch.setattr(extract, "doc_lines", refuse)


def docs_sha256(snapshot: Path) -> str:
    return hashlib.sha256((snapshot / "docs.jsonl").read_bytes()).hexdigest()


def test_tables_are_written_once_and_mapped_after(
    snapshot: Path, tables: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = load_source_docs(snapshot)
    first = DocStore.from_snapshot(snapshot, tables)
    same_answers(first, docs)
    assert sorted(p.name for p in tables.iterdir()) == sorted([*NAMES, TABLES_FILE])
    data = json.loads((tables / TABLES_FILE).read_text())
    assert data["docs_sha256"] == docs_sha256(snapshot) and data["format"] == doctables.FORMAT
    assert data["docs_size"] == (snapshot / "docs.jsonl").stat().st_size
    assert data["pages"] == len(RECORDS) and data["distinct_ids"] == len({d.id for d in docs})
    for name in ARRAYS:
        raw = (tables / f"{name}.npy").read_bytes()
        assert data["files"][name] == hashlib.sha256(raw).hexdigest()
    before = {n: (tables / n).stat().st_mtime_ns for n in [*NAMES, TABLES_FILE]}
    no_parse(monkeypatch)
    again = DocStore.from_snapshot(snapshot, tables, docs_sha256(snapshot))
    assert isinstance(again._ids.keys, np.memmap) and isinstance(again._urls.rows, np.memmap)
    same_answers(again, docs)
    assert again.open("b", 100, 50) == first.open("b", 100, 50)
    assert {n: (tables / n).stat().st_mtime_ns for n in before} == before  # not rewritten


def test_lookups_are_the_in_memory_stores(snapshot: Path, tables: Path) -> None:
    """Every lookup (found or not) answers as DocStore over the list of pages does."""
    docs = load_source_docs(snapshot)
    DocStore.from_snapshot(snapshot, tables)
    mapped, in_memory = DocStore.from_snapshot(snapshot, tables), DocStore(docs, "snap")
    for key in lookups(docs):
        try:
            expected = in_memory.get(key)
        except DrarenaError as exc:
            with pytest.raises(DrarenaError) as err:
                mapped.get(key)
            assert str(err.value) == str(exc)
        else:
            assert mapped.get(key) == expected, key
    assert len(mapped) == len(in_memory) and mapped.ids() == in_memory.ids()


def test_the_committed_snapshot_through_kept_tables(
    pydocs_extracted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = load_source_docs(pydocs_extracted)
    folder = tmp_path / "doctables"
    DocStore.from_snapshot(pydocs_extracted, folder)
    no_parse(monkeypatch)
    mapped, in_memory = DocStore.from_snapshot(pydocs_extracted, folder), DocStore(docs)
    assert len(mapped) == len(in_memory) and len(docs) > 300
    for d in docs:
        for key in (d.id, d.url, *d.aliases, d.url + "#frag", f"{d.id}#0"):
            assert mapped.get(key) == in_memory.get(key), key
        assert mapped.open(d.id, 0, 3000) == in_memory.open(d.id, 0, 3000)


def test_new_docs_are_read_through_and_the_tables_rebuilt(
    snapshot: Path, tables: Path, parses: list[Path]
) -> None:
    DocStore.from_snapshot(snapshot, tables)
    path = snapshot / "docs.jsonl"
    more = [*RECORDS, record("n", "http://h/new", "a new page")]
    path.write_text("".join(r.to_json() + "\n" for r in more), "utf-8")
    store = DocStore.from_snapshot(snapshot, tables)
    assert store.get("http://h/new").id == "n" and parses == [snapshot, snapshot]
    assert json.loads((tables / TABLES_FILE).read_text())["docs_sha256"] == docs_sha256(snapshot)
    DocStore.from_snapshot(snapshot, tables, docs_sha256(snapshot))
    assert parses == [snapshot, snapshot]


def test_the_same_size_with_other_bytes_is_read_through(
    snapshot: Path, tables: Path, parses: list[Path]
) -> None:
    """docs.jsonl edited in place, its size kept: the sha256 differs, so the tables are built
    again (whether the caller gives the sha256 or the stamps find the file changed)."""
    DocStore.from_snapshot(snapshot, tables)
    path = snapshot / "docs.jsonl"
    raw = path.read_bytes()
    edited = raw.replace(b"http://h/e2", b"http://h/e3")
    assert len(edited) == len(raw) and edited != raw
    rewrite_in_place(path, edited)
    store = DocStore.from_snapshot(snapshot, tables, docs_sha256(snapshot))
    assert store.get("http://h/e3").url == "http://h/e3" and len(parses) == 2
    with pytest.raises(DrarenaError, match="unknown docid or URL"):
        store.get("http://h/e2")
    rewrite_in_place(path, raw)
    assert DocStore.from_snapshot(snapshot, tables).get("http://h/e2").id == "e"
    assert len(parses) == 3


def test_a_bad_docs_file_is_still_refused_when_opened(snapshot: Path, tables: Path) -> None:
    DocStore.from_snapshot(snapshot, tables)
    path = snapshot / "docs.jsonl"
    path.write_bytes(path.read_bytes() + b'{"id": 3}\n')
    with pytest.raises(DrarenaError, match=r"docs\.jsonl:10: bad doc record"):
        DocStore.from_snapshot(snapshot, tables)


@pytest.mark.parametrize("name", [TABLES_FILE, "url-keys.npy", "offsets.npy"])
@pytest.mark.parametrize("damage", ["garbage", "flip", "cut", "missing"])
def test_damaged_tables_are_built_again(
    snapshot: Path, tables: Path, parses: list[Path], name: str, damage: str
) -> None:
    docs = load_source_docs(snapshot)
    parses.clear()
    DocStore.from_snapshot(snapshot, tables)
    path = tables / name
    raw = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x00garbage{[")
    elif damage == "flip":
        path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    elif damage == "cut":
        path.write_bytes(raw[: len(raw) // 2])
    else:
        path.unlink()
    same_answers(DocStore.from_snapshot(snapshot, tables, docs_sha256(snapshot)), docs)
    assert len(parses) == 2
    assert path.read_bytes() == raw  # written again
    same_answers(DocStore.from_snapshot(snapshot, tables), docs)
    assert len(parses) == 2


def test_an_older_format_is_built_again(snapshot: Path, tables: Path, parses: list[Path]) -> None:
    DocStore.from_snapshot(snapshot, tables)
    data = json.loads((tables / TABLES_FILE).read_text())
    (tables / TABLES_FILE).write_text(json.dumps({**data, "format": 0}))
    DocStore.from_snapshot(snapshot, tables)
    assert len(parses) == 2 and json.loads((tables / TABLES_FILE).read_text()) == data


def test_a_folder_that_cannot_be_written_is_no_error(snapshot: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    docs = load_source_docs(snapshot)
    same_answers(DocStore.from_snapshot(snapshot, blocker / "doctables"), docs)
    assert blocker.read_text() == "not a folder"


def test_the_passages_build_keeps_the_tables(tmp_path: Path) -> None:
    """`drarena search index` writes them, so a tournament's first open maps them too."""
    from test_passagestore import SETTINGS, tiny_snapshot

    from drarena.search.build import build_passages
    from drarena.search.manifest import IndexLayout

    layout = IndexLayout(tmp_path / "index", tiny_snapshot(tmp_path / "tiny"))
    _, state = build_passages(layout, SETTINGS)
    data = json.loads((layout.doctables / TABLES_FILE).read_text())
    assert data["docs_sha256"] == state.docs_sha256 and data["pages"] == 13
    assert layout.doctables.parent == layout.passages.parent
    assert not any(p.name == "doctables" for p in layout.snapshot_dir.iterdir())
    assert os.path.commonpath([layout.doctables, layout.root]) == str(layout.root)
