"""DocStore's key tables kept in the snapshot's index folder, so opening a retriever maps them
instead of reading docs.jsonl through.

Why: DocStore.from_snapshot parsed every line of docs.jsonl on every open to find each page's
id, URLs and place (issue 39: most of the 16.3 s an open took at 100,000 pages, ~50 s
projected at 300,000). Those tables depend on docs.jsonl alone, so they are built once.

What is kept, in index/<snapshot>/doctables/ (never in the snapshot folder, which may be
someone else's): the id and URL key tables' arrays (digests and rows, sorted:
lines.KeyTable), each line's byte offset and length, as little-endian uint64 .npy files, and
TABLES_FILE, a small JSON file written last that records the FORMAT, the sha256 and size of
the docs.jsonl bytes they were parsed from (hashed as they were read, so a file replaced
while being read is recorded as what was read), the count of distinct ids, and each .npy's
sha256. Every file is written whole (a temporary file renamed over the name).

When they are used: TABLES_FILE readable, of this FORMAT, recording the sha256 the caller
verified docs.jsonl has (require_fresh checked it against the index manifest) and the size of
the docs.jsonl now open, and every .npy the one it records (checked through search.stamps,
so a stat per file once they are stamped). Anything else (no tables, an older format,
another docs.jsonl, a damaged file, two writers' files mixed) reads docs.jsonl through as
before, which checks every line and names a bad one as it always did, and writes the tables
again. Lookups then answer exactly as the store built in memory does: the same arrays.

Why TABLES_FILE is not manifest.json: a run's header fingerprints each index folder's
manifest.json (runs.session.index_fingerprints), and these tables are a cache of
docs.jsonl, present or not, not an index. A folder drarena cannot write (an index received
read-only, a full disk) is no error: the store is built in memory, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from pathlib import Path
from typing import IO, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.files import atomic_output, read_bounded, write_atomic
from drarena.search.lines import KeyTable
from drarena.search.stamps import verified_sha256

TABLES_FILE = "tables.json"
FORMAT = 1
DTYPE = np.dtype("<u8")
MAX_TABLES_BYTES = 1 << 20  # the record is a few hundred bytes whatever the corpus
# each array's file and which count gives its length
ARRAYS = {
    "id-keys": "pages",
    "id-rows": "pages",
    "url-keys": "url_keys",
    "url-rows": "url_keys",
    "offsets": "pages",
    "lengths": "pages",
}


class TablesRecord(BaseModel):
    """TABLES_FILE: what the tables were built from and hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["doc-tables"] = "doc-tables"
    format: int
    docs_sha256: str
    docs_size: int
    pages: int
    url_keys: int
    distinct_ids: int
    files: dict[str, str]
    drarena_version: str = __version__


@dataclasses.dataclass(frozen=True, slots=True)
class DocTables:
    """A DocStore's tables: ids and URLs by digest, each line's place, the distinct ids."""

    ids: KeyTable
    urls: KeyTable
    offsets: np.ndarray
    lengths: np.ndarray
    distinct_ids: int

    def arrays(self) -> dict[str, np.ndarray]:
        assert self.ids.rows is not None and self.urls.rows is not None
        return {
            "id-keys": self.ids.keys,
            "id-rows": self.ids.rows,
            "url-keys": self.urls.keys,
            "url-rows": self.urls.rows,
            "offsets": self.offsets,
            "lengths": self.lengths,
        }


def load(folder: Path, docs_sha256: str, docs_size: int) -> DocTables | None:
    """The tables kept in `folder` when built from the docs.jsonl of this sha256 and size,
    memory-mapped; None when there are none or they are not usable (see the module)."""
    record = _record(folder)
    if (
        record is None
        or record.format != FORMAT
        or record.docs_sha256 != docs_sha256
        or record.docs_size != docs_size
        or set(record.files) != set(ARRAYS)
    ):
        return None
    arrays: dict[str, np.ndarray] = {}
    for name, count in ARRAYS.items():
        path = folder / f"{name}.npy"
        try:
            if verified_sha256(path, folder.parent) != record.files[name]:
                return None
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError, DrarenaError):
            return None
        if array.dtype != DTYPE or array.shape != (getattr(record, count),):
            return None
        arrays[name] = array
    return DocTables(
        KeyTable(arrays["id-keys"], arrays["id-rows"]),
        KeyTable(arrays["url-keys"], arrays["url-rows"]),
        arrays["offsets"],
        arrays["lengths"],
        record.distinct_ids,
    )


def _record(folder: Path) -> TablesRecord | None:
    try:
        raw = read_bounded(folder / TABLES_FILE, MAX_TABLES_BYTES)
        return TablesRecord.model_validate_json(raw.decode("utf-8"))
    except (DrarenaError, ValueError):  # missing, unreadable, not the record: none
        return None


def save(folder: Path, tables: DocTables, docs_sha256: str, docs_size: int) -> bool:
    """The tables written into `folder` (made if missing), TABLES_FILE last; False when the
    folder cannot take them (read-only, a full disk): the caller has them in memory."""
    files: dict[str, str] = {}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in tables.arrays().items():
            with atomic_output(folder / f"{name}.npy", "wb") as fh:
                out = _Hashing(fh)
                np.save(out, np.ascontiguousarray(array, dtype=DTYPE), allow_pickle=False)
            files[name] = out.digest.hexdigest()
        record = TablesRecord(
            format=FORMAT,
            docs_sha256=docs_sha256,
            docs_size=docs_size,
            pages=len(tables.offsets),
            url_keys=len(tables.urls),
            distinct_ids=tables.distinct_ids,
            files=files,
        )
        write_atomic(folder / TABLES_FILE, record.model_dump_json(indent=2) + "\n")
    except (OSError, DrarenaError):
        with contextlib.suppress(OSError):  # a record naming files not all written: none
            (folder / TABLES_FILE).unlink()
        return False
    return True


class _Hashing:
    """A file np.save writes through, hashing the bytes as they go: the record holds the
    sha256 of what this process wrote, so another writer's file in its place is told apart."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self._fh.write(data)
