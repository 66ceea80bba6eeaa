"""A snapshot's extracted pages (docs.jsonl), looked up by docid or URL and read in pages.

Why here: agents `open` what search returned; the text must come from the same docs.jsonl the
indexes were built from, cut into pages of bounded length so a long page never floods a
model's context, with offsets the agent can follow.
"""

from __future__ import annotations

import array
import dataclasses
import hashlib
import json
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urldefrag

from drarena import digests
from drarena.errors import DrarenaError
from drarena.files import read_bounded
from drarena.records import Record
from drarena.search.passages import SourceDoc, doc_id_of
from drarena.search.stamps import verified_sha256
from drarena.web.warc.manifest import MAX_MANIFEST_BYTES

if TYPE_CHECKING:  # numpy is imported when a store is made: PageText's importers need none
    import numpy as np

    from drarena.corpus.records import Doc
    from drarena.search.lines import KeyTable, LineReader

DEFAULT_PAGE_CHARS = 4000
MAX_PAGE_CHARS = 20000
MAX_QUERY_CHARS = 1000
SNAPSHOTS_DIR = Path("snapshots")


@dataclasses.dataclass(frozen=True, slots=True)
class PageText(Record):
    """One page of a document: text[offset:next_offset]; next_offset is None at the end."""

    docid: str
    url: str
    title: str
    text: str
    offset: int
    next_offset: int | None
    total: int


def resolve_snapshot(arg: str | Path) -> Path:
    """A snapshot folder given as a path, or as a name under snapshots/."""
    path = Path(arg)
    if path.is_dir():
        return path.resolve()
    named = SNAPSHOTS_DIR / str(arg)
    if named.is_dir():
        return named.resolve()
    raise DrarenaError(f"snapshot {arg}: no such folder (nor {named})")


def docs_file(snapshot_dir: Path) -> Path:
    path = snapshot_dir / "docs.jsonl"
    if not path.is_file():
        raise DrarenaError(
            f"{path} is missing: run `drarena search index {snapshot_dir}` "
            "(it extracts the pages first)"
        )
    return path


def file_sha256(path: Path) -> str:
    """Bare hex (the search manifests' format) of drarena.digests.file_sha256."""
    return digests.file_sha256(path).removeprefix("sha256:")


def snapshot_fingerprint(snapshot_dir: Path) -> str | None:
    """The frozen web's fingerprint from its manifest; None for a folder with docs only."""
    manifest = snapshot_dir / "manifest.json"
    if not manifest.is_file():
        return None
    # bounded as `drarena snapshot` reads it (the folder may be someone else's): a larger or
    # unreadable file is read_bounded's one line naming it
    raw = read_bounded(manifest, MAX_MANIFEST_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        raise DrarenaError(f"{manifest}: unreadable snapshot manifest ({exc})") from None
    if not isinstance(data, dict):
        raise DrarenaError(f"{manifest}: unreadable snapshot manifest (not a JSON object)")
    value = data.get("fingerprint")
    return str(value) if value else None


def load_source_docs(snapshot_dir: Path) -> list[SourceDoc]:
    """The pages of docs.jsonl as `drarena snapshot extract` wrote them (bad lines: errors)."""
    from drarena.corpus.extract import load_docs

    docs_file(snapshot_dir)
    return [source_doc(d) for d in load_docs(snapshot_dir)]


def source_doc(d: Doc) -> SourceDoc:
    """What search needs of a docs.jsonl page."""
    return SourceDoc(
        id=d.id,
        url=d.url,
        title=d.title,
        contents=d.contents,
        aliases=tuple(d.aliases),
        indexed=d.is_content,
    )


def clean_query(query: str, max_chars: int = MAX_QUERY_CHARS) -> str:
    """Drops control and unpaired-surrogate characters, folds whitespace, bounds the length.

    Why: Lucene rejects queries of over 1024 clauses and the JVM bridge cannot carry lone
    surrogates; an agent's query should never turn into a stack trace.
    """
    if not isinstance(query, str):
        raise DrarenaError(f"query must be a string, not {type(query).__name__}")
    text = query.encode("utf-8", "ignore").decode("utf-8")
    text = unicodedata.normalize("NFC", text)
    text = "".join(" " if unicodedata.category(ch).startswith(("C", "Z")) else ch for ch in text)
    text = " ".join(text.split())[:max_chars].strip()
    if not any(ch.isalnum() for ch in text):
        raise DrarenaError(f"query {query[:60]!r} has no searchable words")
    return text


class DocStore:
    """All pages of one docs.jsonl, by id and by URL.

    Held as key tables (search.lines): the digests of each page's id and of its URLs'
    lookup variants, beside the page's row. A row is a page of a list (the constructor:
    tests, a few pages) or a line of docs.jsonl read again when asked (from_snapshot, whose
    tables an index folder keeps: search.doctables), so a snapshot's store costs a few words
    a page, not its text (a tournament's retrievers held every page twice over before).
    Lookups read the candidate pages and compare, so they answer exactly as dicts of every
    page did: by id the last page with that id, by URL the indexed page first, then the
    smallest id."""

    def __init__(self, docs: Sequence[SourceDoc], name: str = "snapshot") -> None:
        pages = list(docs)
        self._setup(name, *_DocKeys.of(enumerate(pages)).tables(), pages.__getitem__)

    def _setup(
        self,
        name: str,
        ids: KeyTable,
        urls: KeyTable,
        read: Callable[[int], SourceDoc],
        count: int | None = None,
    ) -> None:
        self.name = name
        self._ids, self._urls = ids, urls
        self._read = read
        if count is None:
            # distinct ids: the digests, plus the ids of a shared digest past the first
            shared = [{read(row).id for row in rows} for rows in ids.shared()]
            count = ids.distinct() + sum(len(ids) - 1 for ids in shared)
        self._count = count

    @classmethod
    def from_snapshot(
        cls, snapshot_dir: Path, tables: Path | None = None, docs_sha256: str | None = None
    ) -> DocStore:
        """docs.jsonl read once through (each line checked as load_source_docs checks it),
        keeping where each page lies; pages are read again from it when asked.

        With `tables` (index/<snapshot>/doctables: search.doctables), the tables kept there
        are memory-mapped instead when they were built from the docs.jsonl of `docs_sha256`
        (the sha256 the caller verified it has; None: taken here, through search.stamps);
        otherwise docs.jsonl is read through as without, and the tables kept for next time."""
        from drarena.search import doctables
        from drarena.search.lines import LineReader

        path = docs_file(snapshot_dir)
        store = cls.__new__(cls)
        if tables is not None:
            reader = LineReader(path, "pages file")
            if docs_sha256 is None:
                docs_sha256 = verified_sha256(path, tables.parent)
            kept = doctables.load(tables, docs_sha256, reader.size)
            if kept is not None:
                lines = _DocLines(reader, kept.offsets, kept.lengths)
                store._setup(snapshot_dir.name, kept.ids, kept.urls, lines, kept.distinct_ids)
                return store
        digest = hashlib.sha256()
        ids, urls, offsets, lengths = _read_through(snapshot_dir, digest.update)
        lines = _DocLines(LineReader(path, "pages file"), offsets, lengths)
        store._setup(snapshot_dir.name, ids, urls, lines)
        if tables is not None:
            built = doctables.DocTables(ids, urls, offsets, lengths, store._count)
            doctables.save(tables, built, digest.hexdigest(), int(lengths.sum()))
        return store

    def __len__(self) -> int:
        return self._count

    def ids(self) -> list[str]:
        """Every page id, sorted (reads every page of a store on disk)."""
        rows = self._ids.rows
        assert rows is not None
        return sorted({self._read(int(row)).id for row in rows})

    def get(self, url_or_docid: str) -> SourceDoc:
        key = str(url_or_docid).strip()
        doc = self._by_id(key) or self._by_id(doc_id_of(key))
        if doc is not None:
            return doc
        for variant in _url_keys(key):
            doc = self._by_url(variant)
            if doc is not None:
                return doc
        raise DrarenaError(f"unknown docid or URL {key[:200]!r} in snapshot {self.name}")

    def _by_id(self, doc_id: str) -> SourceDoc | None:
        """The last page with this id (as a dict of pages by id kept the last)."""
        for row in reversed(self._ids.candidates(doc_id)):
            doc = self._read(row)
            if doc.id == doc_id:
                return doc
        return None

    def _by_url(self, key: str) -> SourceDoc | None:
        """The page a URL variant names: of the pages it is a variant of a URL or alias of,
        an indexed one first, then the smallest id (then that id's page, as _by_id)."""
        best: SourceDoc | None = None
        for row in self._urls.candidates(key):
            doc = self._read(row)
            if not any(key in _url_keys(url) for url in (doc.url, *doc.aliases)):
                continue  # another key with the same digest
            if best is None or (not doc.indexed, doc.id) < (not best.indexed, best.id):
                best = doc
        return None if best is None else self._by_id(best.id)

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        doc = self.get(url_or_docid)
        total = len(doc.contents)
        if not 0 <= offset <= total:
            raise DrarenaError(f"offset {offset} outside page {doc.id} (0..{total})")
        if not 1 <= max_chars <= MAX_PAGE_CHARS:
            raise DrarenaError(f"max_chars {max_chars} outside 1..{MAX_PAGE_CHARS}")
        end = page_end(doc.contents, offset, max_chars)
        return PageText(
            doc.id,
            doc.url,
            doc.title,
            doc.contents[offset:end],
            offset,
            end if end < total else None,
            total,
        )


class _DocKeys:
    """The digests of pages' ids and URL variants with their rows, gathered a page at a time
    (a few machine words each), then sorted into key tables."""

    def __init__(self) -> None:
        self.ids, self.id_rows = array.array("Q"), array.array("Q")
        self.urls, self.url_rows = array.array("Q"), array.array("Q")

    @classmethod
    def of(cls, pages: Iterable[tuple[int, SourceDoc]]) -> _DocKeys:
        from drarena.search.lines import key_of

        keys = cls()
        for row, doc in pages:
            keys.ids.append(key_of(doc.id))
            keys.id_rows.append(row)
            variants = {k for url in (doc.url, *doc.aliases) for k in _url_keys(url)}
            for variant in sorted(variants):
                keys.urls.append(key_of(variant))
                keys.url_rows.append(row)
        return keys

    def tables(self) -> tuple[KeyTable, KeyTable]:
        from drarena.search.lines import KeyTable

        def table(keys: array.array[int], rows: array.array[int]) -> KeyTable:
            return KeyTable.build(_u64(keys), _u64(rows))

        return table(self.ids, self.id_rows), table(self.urls, self.url_rows)


def _u64(values: array.array[int]) -> np.ndarray:
    import numpy as np

    return np.frombuffer(values, dtype=np.uint64) if len(values) else np.zeros(0, np.uint64)


def _read_through(
    snapshot_dir: Path, seen: Callable[[bytes], object]
) -> tuple[KeyTable, KeyTable, np.ndarray, np.ndarray]:
    """docs.jsonl parsed line by line (`seen` given each line's bytes): the id and URL key
    tables, and each line's offset and length."""
    from drarena.corpus.extract import doc_lines

    offsets, lengths = array.array("Q"), array.array("Q")

    def rows() -> Iterator[tuple[int, SourceDoc]]:
        for row, (offset, length, doc) in enumerate(doc_lines(snapshot_dir, seen)):
            offsets.append(offset)
            lengths.append(length)
            yield row, source_doc(doc)

    ids, urls = _DocKeys.of(rows()).tables()
    return ids, urls, _u64(offsets), _u64(lengths)


class _DocLines:
    """Pages read again from docs.jsonl by row: each line's offset and length, one pread."""

    def __init__(self, file: LineReader, offsets: np.ndarray, lengths: np.ndarray) -> None:
        self.path = file.path
        self._offsets = offsets
        self._lengths = lengths
        self._file = file

    def __call__(self, row: int) -> SourceDoc:
        from drarena.corpus.extract import parse_doc_line

        offset = int(self._offsets[row])
        line = self._file.read(offset, int(self._lengths[row]))
        return source_doc(parse_doc_line(line, f"{self.path} at byte {offset}"))


def page_end(text: str, offset: int, max_chars: int) -> int:
    """Cut at the last line break or space in the final fifth of the page, else hard."""
    end = min(offset + max_chars, len(text))
    if end == len(text):
        return end
    floor = offset + (max_chars * 4) // 5
    for sep in ("\n", " "):
        cut = text.rfind(sep, floor, end)
        if cut > offset:
            return cut + 1
    return end


def _url_keys(url: str) -> list[str]:
    """Lookup variants of a URL: without fragment, with and without a trailing slash. A
    string urllib cannot split (`http://[x#f`, a host that NFKC-normalizes to a `#`) is
    looked up as it is: an agent's open of it is then an unknown page, not a ValueError."""
    try:
        base = urldefrag(url)[0]
    except ValueError:
        return [url]
    keys = [url, base]
    keys.append(base[:-1] if base.endswith("/") else base + "/")
    return list(dict.fromkeys(keys))
