"""DocStore (drarena/search/docstore.py) on key tables: read from docs.jsonl a page at a time
(from_snapshot) or from a list, it answers every id, URL, alias and URL variant as the dicts
of every page it held before did (pinned against that code, kept here as the reference)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from drarena.corpus.records import Doc
from drarena.errors import DrarenaError
from drarena.search import lines
from drarena.search.docstore import DocStore, _url_keys, load_source_docs
from drarena.search.passages import SourceDoc, doc_id_of


def reference(docs: list[SourceDoc]) -> Callable[[str], SourceDoc | None]:
    """DocStore.get as it was: a dict by id (the last page of an id) and one by URL variant
    (indexed pages first, then by id)."""
    by_id = {d.id: d for d in docs}
    by_url: dict[str, str] = {}
    for d in sorted(docs, key=lambda d: (not d.indexed, d.id)):
        for url in (d.url, *d.aliases):
            for key in _url_keys(url):
                by_url.setdefault(key, d.id)

    def get(raw: str) -> SourceDoc | None:
        key = str(raw).strip()
        doc = by_id.get(key) or by_id.get(doc_id_of(key))
        if doc is None:
            for variant in _url_keys(key):
                if variant in by_url:
                    return by_id[by_url[variant]]
        return doc

    return get


def record(doc_id: str, url: str, text: str, **extra: object) -> Doc:
    fields: dict[str, object] = {
        "id": doc_id,
        "url": url,
        "title": f"T {doc_id}",
        "contents": text,
        "record_id": "r",
        "payload_digest": "p",
    }
    fields.update(extra)
    return Doc.from_dict(fields)


RECORDS = [
    record("b", "http://h/x", "orig text " * 50, aliases=("http://h/old-x",)),
    record("a", "http://h/x", "copy", duplicate_of="b"),  # same URL, not indexed: loses
    record("c", "http://h/dir/", "dir page", aliases=("http://h/moved#frag",)),
    record("d", "http://h/dir", "no slash page"),  # shares /dir and /dir/ with c
    record("e", "http://h/e", "first e"),
    record("e", "http://h/e2", "second e"),  # the same id again: the last wins
    record("f", "http://h/f", "", near_empty=True),
    record("g#1", "http://h/g", "an id with a separator"),
    record("z", "http://h/z?q=1#top", "z"),
]


def lookups(docs: list[SourceDoc]) -> list[str]:
    keys = ["nope", "http://h/nope", "  b  ", "b#4", "e#0", "g#1#0", ""]
    for d in docs:
        keys += [d.id, f"{d.id}#2", d.url, *d.aliases]
        for url in (d.url, *d.aliases):
            keys += [*_url_keys(url), url + "#x", url.rstrip("/"), url + "/"]
    return keys


def same_answers(store: DocStore, docs: list[SourceDoc]) -> None:
    get = reference(docs)
    for key in lookups(docs):
        expected = get(key)
        if expected is None:
            with pytest.raises(DrarenaError, match="unknown docid or URL"):
                store.get(key)
        else:
            assert store.get(key) == expected, key
    assert len(store) == len({d.id for d in docs})
    assert store.ids() == sorted({d.id for d in docs})


def records_snapshot(tmp_path: Path) -> Path:
    """A snapshot folder under `tmp_path` holding RECORDS as its docs.jsonl (shared with
    test_doctables)."""
    folder = tmp_path / "snap"
    folder.mkdir()
    (folder / "docs.jsonl").write_text("".join(r.to_json() + "\n" for r in RECORDS), "utf-8")
    return folder


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return records_snapshot(tmp_path)


def test_on_disk_and_in_memory_stores_answer_as_the_dicts_did(snapshot: Path) -> None:
    docs = load_source_docs(snapshot)
    on_disk = DocStore.from_snapshot(snapshot)
    same_answers(on_disk, docs)
    same_answers(DocStore(docs, "snap"), docs)
    assert on_disk.get("http://h/x").id == "b" and on_disk.get("http://h/dir").id == "c"
    assert on_disk.get("e").url == "http://h/e2" and on_disk.get("http://h/e").url == "http://h/e2"
    page = on_disk.open("b", 100, 50)
    assert page.text == docs[0].contents[100 : page.next_offset] and page.total == 500


def test_colliding_digests_answer_as_the_dicts_did(
    snapshot: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key with the same digest (its length mod 3): each lookup reads its candidates
    and keeps only the pages that hold the key."""
    monkeypatch.setattr(lines, "_digest", lambda raw: (len(raw) % 3).to_bytes(8, "little"))
    docs = load_source_docs(snapshot)
    same_answers(DocStore.from_snapshot(snapshot), docs)
    same_answers(DocStore(docs), docs)


def test_a_docs_file_changed_under_the_store_is_one_line_naming_it(snapshot: Path) -> None:
    store = DocStore.from_snapshot(snapshot)
    path = snapshot / "docs.jsonl"
    raw = path.read_bytes()
    with path.open("r+b") as fh:  # in place: the store's descriptor sees it
        fh.write(b"[" + raw[1:40])
    with pytest.raises(DrarenaError, match=r"docs\.jsonl at byte 0: not a JSON doc line") as err:
        store.get("b")
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    with path.open("r+b") as fh:
        fh.truncate(len(raw) // 2)
    with pytest.raises(DrarenaError, match=r"docs\.jsonl: pages file cut short while open"):
        store.get("z")


def test_a_bad_docs_file_is_refused_when_opened(snapshot: Path) -> None:
    """The line numbers load_docs names: the store checks every line as it reads them."""
    path = snapshot / "docs.jsonl"
    path.write_bytes(path.read_bytes() + b'{"id": 3}\n')
    with pytest.raises(DrarenaError, match=r"docs\.jsonl:10: bad doc record"):
        DocStore.from_snapshot(snapshot)


def test_the_committed_snapshot_reads_as_it_did(pydocs_extracted: Path) -> None:
    docs = load_source_docs(pydocs_extracted)
    store, in_memory = DocStore.from_snapshot(pydocs_extracted), DocStore(docs)
    get = reference(docs)
    assert len(docs) > 300 and len(store) == len(docs)
    for d in docs:
        for key in (d.id, d.url, *d.aliases, d.url + "#frag", f"{d.id}#0"):
            assert store.get(key) == get(key), key
        assert store.open(d.id, 0, 3000) == in_memory.open(d.id, 0, 3000)
