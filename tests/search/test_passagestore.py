"""PassageStore (drarena/search/passagestore.py): passages.jsonl read by id through offsets.npy
answers exactly as the dict of every passage did, ranks the same pages, and a missing,
cut-short or damaged offsets file is one line naming it and the rebuild command."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from drarena.corpus.records import Doc
from drarena.errors import DrarenaError
from drarena.search import lines
from drarena.search.base import SearchData, rank_pages, search_pages
from drarena.search.build import build_passages, load_passages
from drarena.search.docstore import clean_query, load_source_docs
from drarena.search.manifest import MANIFEST, IndexLayout, PassagesManifest, read_manifest
from drarena.search.passages import Passage, PassageSettings
from drarena.search.passagestore import OFFSETS_FILE, PASSAGES_FILE, OffsetsWriter, PassageStore

SETTINGS = PassageSettings(words=6, stride=4)


def page(i: int, words: int, **extra: object) -> Doc:
    text = " ".join(f"w{i}x{n} common" for n in range(words))
    fields: dict[str, object] = {
        "id": f"{i:016x}",
        "url": f"http://h/{i}.html",
        "title": f"Page {i}",
        "contents": text,
        "record_id": f"r{i}",
        "payload_digest": f"p{i}",
    }
    fields.update(extra)
    return Doc.from_dict(fields)


def tiny_snapshot(folder: Path, pages: int = 12) -> Path:
    """A snapshot folder with only docs.jsonl (what the passages stage reads), pages of
    different lengths, one near-empty (kept out of the passages)."""
    folder.mkdir(parents=True)
    docs = [page(i, 3 + 5 * i) for i in range(pages)] + [page(99, 1, near_empty=True)]
    (folder / "docs.jsonl").write_text("".join(d.to_json() + "\n" for d in docs), "utf-8")
    return folder


@pytest.fixture
def layout(tmp_path: Path) -> IndexLayout:
    layout = IndexLayout(tmp_path / "index", tiny_snapshot(tmp_path / "tiny"))
    build_passages(layout, SETTINGS)
    return layout


def store_of(layout: IndexLayout) -> PassageStore:
    manifest = read_manifest(layout.passages, PassagesManifest)
    assert manifest is not None
    return PassageStore.open(layout, manifest)


def test_store_holds_the_passages_the_dict_held(layout: IndexLayout) -> None:
    old = {p.id: p for p in load_passages(layout)}
    store = store_of(layout)
    assert len(old) > 40 and len(store) == len(old)
    assert list(store) == list(old)
    for pid, passage in old.items():
        assert store[pid] == passage and pid in store
    assert dict(store.items()) == old


def test_missing_ids_are_missing(layout: IndexLayout) -> None:
    store = store_of(layout)
    some = next(iter(store))
    for pid in ("nope#0", some + "0", some.split("#")[0], "", "\ud800#1"):
        assert pid not in store and store.get(pid) is None
        with pytest.raises(KeyError):
            store[pid]
    assert store.pages_of([some, "nope#0"]) == [some.split("#")[0], None]


def test_rank_pages_over_the_store_is_the_dict_ranking(layout: IndexLayout) -> None:
    old = {p.id: p for p in load_passages(layout)}
    store = store_of(layout)
    rng = random.Random(5)
    ids = [*old, "ghost#0", "ghost#1"]
    for _ in range(200):
        scored = [(pid, float(rng.randint(0, 6))) for pid in rng.sample(ids, rng.randint(0, 30))]
        k = rng.randint(1, 12)
        assert rank_pages(scored, store, k) == rank_pages(scored, old, k)


def write_store(folder: Path, passages: list[Passage]) -> PassageStore:
    """passages.jsonl and offsets.npy as build_passages writes them, without a snapshot."""
    writer = OffsetsWriter()
    with (folder / PASSAGES_FILE).open("wb") as fh:
        for p in passages:
            line = (p.to_json() + "\n").encode("utf-8")
            fh.write(line)
            writer.add(p.id, line)
    writer.write(folder / OFFSETS_FILE)
    table = np.load(folder / OFFSETS_FILE, mmap_mode="r")
    return PassageStore(folder / PASSAGES_FILE, table, "`drarena search index x --force`")


def test_colliding_digests_still_answer_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a digest that collides all the time (the id's length), lookups read every
    candidate and compare ids, and a ranking whose best passage is an absent id with a
    present digest ranks again without it: the dict's answers."""

    def weak(raw: bytes) -> bytes:
        return len(raw).to_bytes(8, "little")

    monkeypatch.setattr(lines, "_digest", weak)
    passages = [
        Passage(f"d{d}#{n}", f"d{d}", f"http://h/{d}", f"T{d}", f"text {d} {n}", 0, 5)
        for d in range(5)
        for n in range(3)
    ]
    store = write_store(tmp_path, passages)
    old = {p.id: p for p in passages}
    assert all(store[p.id] == p for p in passages)
    assert "d9#9" not in store and store.pages_of(["d9#9"]) == ["d9"]  # a digest-only "maybe"
    scored = [("d9#9", 9.0), ("d8#1", 8.0), ("d1#2", 5.0), ("d1#0", 6.0), ("d3#1", 1.0)]
    for k in (1, 2, 5):
        assert rank_pages(scored, store, k) == rank_pages(scored, old, k)
    assert [h.docid for h in rank_pages(scored, store, 5)] == ["d1", "d3"]


def test_a_line_that_is_not_the_passage_named_is_an_error(tmp_path: Path) -> None:
    """passages.jsonl changed under its offsets: another id at the offset, a line that is not
    JSON, a file cut short; each one line naming the file."""
    passages = [Passage(f"d{d}#0", f"d{d}", "http://h", "T", "x", 0, 1) for d in range(3)]
    write_store(tmp_path, passages)
    path = tmp_path / PASSAGES_FILE
    raw = path.read_bytes()
    cases = [
        (raw.replace(b'"d1#0"', b'"d7#0"'), "d1#0", "not the 'd1#0' its offsets name"),
        (raw.replace(b'"d2#0"', b'"d2#0}'), "d2#0", "not a passage line"),
        (raw.replace(b'"doc_id": "d0"', b'"doc_id": "dx"'), "d0#0", "names page 'dx'"),
        (raw[: len(raw) // 2], "d2#0", "shorter than its offsets say"),
    ]
    for damaged, pid, says in cases:
        path.write_bytes(damaged)
        table = np.load(tmp_path / OFFSETS_FILE, mmap_mode="r")
        store = PassageStore(path, table, "HINT")
        with pytest.raises(DrarenaError, match=says) as err:
            store[pid]
        one_line_naming(err, path)


def one_line_naming(exc: pytest.ExceptionInfo[DrarenaError], path: Path) -> str:
    text = str(exc.value)
    assert "\n" not in text and str(path) in text, text
    return text


@pytest.mark.parametrize(
    "damage",
    ["truncated", "flipped", "empty", "not npy", "missing"],
)
def test_a_damaged_offsets_file_is_one_line_naming_it(layout: IndexLayout, damage: str) -> None:
    path = layout.passages / OFFSETS_FILE
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[: len(raw) - 24])
    elif damage == "flipped":
        path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "not npy":
        path.write_text("hello\n")
    else:
        path.unlink()
    with pytest.raises(DrarenaError) as err:
        SearchData.load(layout)
    text = one_line_naming(err, path)
    assert "rebuild it with `drarena search index" in text
    build_passages(layout, SETTINGS)  # the build sees the damage and writes the file again
    assert len(SearchData.load(layout).passages) == len(load_passages(layout))


def test_a_table_the_manifest_does_not_count_is_refused(layout: IndexLayout) -> None:
    """A manifest edited to match other offsets (its sha256 and count disagree)."""
    path = layout.passages / OFFSETS_FILE
    manifest_path = layout.passages / MANIFEST
    data = json.loads(manifest_path.read_text())
    data["passage_count"] += 1
    manifest_path.write_text(json.dumps(data))
    manifest = read_manifest(layout.passages, PassagesManifest)
    assert manifest is not None
    with pytest.raises(DrarenaError, match="damaged passage offsets") as err:
        PassageStore.open(layout, manifest)
    one_line_naming(err, path)


def test_passages_built_before_offsets_existed(layout: IndexLayout) -> None:
    """An index folder from before offsets.npy: the retriever names the command, and that
    command writes the offsets without touching passages.jsonl."""
    manifest_path = layout.passages / MANIFEST
    data = json.loads(manifest_path.read_text())
    del data["offsets_sha256"]
    manifest_path.write_text(json.dumps(data))
    (layout.passages / OFFSETS_FILE).unlink()
    before = (layout.passages / PASSAGES_FILE).read_bytes()
    with pytest.raises(DrarenaError, match="built by an older drarena") as err:
        SearchData.load(layout)
    one_line_naming(err, layout.passages / OFFSETS_FILE)
    result, _ = build_passages(layout, SETTINGS)
    assert result.built and (layout.passages / PASSAGES_FILE).read_bytes() == before
    again, _ = build_passages(layout, SETTINGS)
    assert not again.built
    assert len(SearchData.load(layout).passages) == result.count


def test_offsets_file_layout(layout: IndexLayout) -> None:
    """(3, n) little-endian uint64: digests sorted, then each line's offset and length."""
    table = np.load(layout.passages / OFFSETS_FILE)
    raw = (layout.passages / PASSAGES_FILE).read_bytes()
    assert table.dtype == np.dtype("<u8") and table.shape[0] == 3
    assert np.all(table[0][1:] >= table[0][:-1])
    for key, offset, length in table.T.tolist():
        line = raw[offset : offset + length]
        assert line.endswith(b"\n") and lines.key_of(json.loads(line)["id"]) == key
    assert sum(table[2].tolist()) == len(raw)


def test_passages_changed_since_built_are_refused(layout: IndexLayout) -> None:
    """passages.jsonl edited into other valid passages: offsets.npy no longer points at
    them, so the store refuses the file rather than answer from shifted lines."""
    path = layout.passages / PASSAGES_FILE
    path.write_bytes(path.read_bytes().replace(b"common", b"COMMON!", 1))
    with pytest.raises(DrarenaError, match="changed since it was built") as err:
        SearchData.load(layout)
    assert "--force`" in one_line_naming(err, path)


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_retrievers_rank_as_over_the_dict(
    kind: str, request: pytest.FixtureRequest, snapshot: Path, index_root: Path
) -> None:
    """The committed snapshot's retrievers, reading passages from disk, give the hits that
    ranking over the dict of every passage gives, on a title query of every page."""
    retriever = request.getfixturevalue(kind)
    old = {p.id: p for p in load_passages(IndexLayout(index_root, snapshot))}
    assert isinstance(retriever.data.passages, PassageStore)
    assert len(retriever.data.passages) == len(old)
    titles = [d.title for d in load_source_docs(snapshot) if d.indexed and d.title]
    assert len(titles) > 200
    total = retriever.manifest.passage_count  # what each searches (dense: a page's first)
    for title in titles:
        text = clean_query(title)
        for k in (1, 10):
            expected = search_pages(
                retriever.search_passages, text, k, retriever.args.depth, old, total
            )
            assert retriever.search(title, k) == expected, title
