"""A snapshot's extracted pages (docs.jsonl), looked up by docid or URL and read in pages.

Why here: agents `open` what search returned; the text must come from the same docs.jsonl the
indexes were built from, cut into pages of bounded length so a long page never floods a
model's context, with offsets the agent can follow.
"""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from pathlib import Path
from urllib.parse import urldefrag

from drarena import digests
from drarena.errors import DrarenaError
from drarena.files import read_bounded
from drarena.records import Record
from drarena.search.passages import SourceDoc, doc_id_of
from drarena.web.warc.manifest import MAX_MANIFEST_BYTES

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
    return [
        SourceDoc(
            id=d.id,
            url=d.url,
            title=d.title,
            contents=d.contents,
            aliases=tuple(d.aliases),
            indexed=d.is_content,
        )
        for d in load_docs(snapshot_dir)
    ]


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
    """All pages of one docs.jsonl, by id and by URL."""

    def __init__(self, docs: list[SourceDoc], name: str = "snapshot") -> None:
        self.name = name
        self._by_id = {doc.id: doc for doc in docs}
        self._by_url: dict[str, str] = {}
        for doc in sorted(docs, key=lambda d: (not d.indexed, d.id)):
            for url in (doc.url, *doc.aliases):
                for key in _url_keys(url):
                    self._by_url.setdefault(key, doc.id)

    @classmethod
    def from_snapshot(cls, snapshot_dir: Path) -> DocStore:
        return cls(load_source_docs(snapshot_dir), snapshot_dir.name)

    def __len__(self) -> int:
        return len(self._by_id)

    def ids(self) -> list[str]:
        return sorted(self._by_id)

    def get(self, url_or_docid: str) -> SourceDoc:
        key = str(url_or_docid).strip()
        doc = self._by_id.get(key) or self._by_id.get(doc_id_of(key))
        if doc is None:
            for variant in _url_keys(key):
                if variant in self._by_url:
                    return self._by_id[self._by_url[variant]]
            raise DrarenaError(f"unknown docid or URL {key[:200]!r} in snapshot {self.name}")
        return doc

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
