"""passages.jsonl by passage id, read a line at a time: what the retrievers rank pages from.

Why: retrievers held every passage as a record in a dict (2.9 GB at 333,607 passages), while
a query reads ten (the hits' titles, URLs and snippets). `drarena search index` writes
`offsets.npy` beside passages.jsonl: a (3, n) little-endian uint64 array, row 0 the passage
ids' 64-bit digests sorted ascending (lines.key_of), row 1 each line's byte offset, row 2 its
length with the newline. The manifest records its sha256, checked when a retriever opens it
(not read again while its stat says it was not written since: search.stamps); 24 bytes a
passage, 8 MB at 333,607. The array is memory-mapped, so the search processes of a tournament
share one copy in the page cache. Every line read is checked to hold the id it was read for,
so a wrong offset is an error, never another passage.
"""

from __future__ import annotations

import array
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from drarena.errors import DrarenaError
from drarena.search.lines import KeyTable, LineReader, key_of
from drarena.search.manifest import IndexLayout, PassagesManifest
from drarena.search.passages import Passage, doc_id_of
from drarena.search.stamps import verified_sha256

PASSAGES_FILE = "passages.jsonl"
OFFSETS_FILE = "offsets.npy"
OFFSETS_DTYPE = np.dtype("<u8")


class OffsetsWriter:
    """Collects each passage line's digest, offset and length as passages.jsonl is written,
    then writes offsets.npy (a few machine words a passage while building)."""

    def __init__(self) -> None:
        self._keys = array.array("Q")
        self._offsets = array.array("Q")
        self._lengths = array.array("Q")
        self.size = 0

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, pid: str, line: bytes) -> None:
        """The line just written for passage `pid` (its bytes, newline included)."""
        self._keys.append(key_of(pid))
        self._offsets.append(self.size)
        self._lengths.append(len(line))
        self.size += len(line)

    def write(self, path: Path) -> None:
        keys, offsets, lengths = (
            np.frombuffer(a, dtype=np.uint64) if len(a) else np.zeros(0, dtype=np.uint64)
            for a in (self._keys, self._offsets, self._lengths)
        )
        order = np.lexsort((offsets, keys))
        table = np.stack([keys[order], offsets[order], lengths[order]]).astype(OFFSETS_DTYPE)
        with path.open("xb") as fh:
            np.save(fh, table, allow_pickle=False)


def open_offsets(layout: IndexLayout, manifest: PassagesManifest) -> np.ndarray:
    """offsets.npy memory-mapped, after checking it is the file the manifest recorded: a
    missing, cut-short or damaged file is one line naming it and the command that rebuilds it
    (passages built before the file existed have no sha256 in their manifest)."""
    path = layout.passages / OFFSETS_FILE
    hint = layout.rebuild_hint()
    if manifest.offsets_sha256 is None or not path.is_file():
        raise DrarenaError(
            f"{path} is missing (passages built by an older drarena): rebuild it with {hint}"
        )
    try:
        digest = verified_sha256(path, layout.root)
    except OSError as exc:
        raise DrarenaError(f"{path}: cannot read the passage offsets ({exc.strerror})") from None
    if digest != manifest.offsets_sha256:
        raise DrarenaError(
            f"{path}: damaged passage offsets (not the sha256 manifest.json recorded); "
            f"rebuild it with {hint}"
        )
    try:
        table: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise DrarenaError(
            f"{path}: unreadable passage offsets ({first}); rebuild it with {hint}"
        ) from None
    shape = (3, manifest.passage_count)
    if table.dtype != OFFSETS_DTYPE or table.shape != shape:
        raise DrarenaError(
            f"{path}: damaged passage offsets ({table.dtype} {table.shape}, manifest.json "
            f"counts {manifest.passage_count} passages); rebuild it with {hint}"
        )
    return table


def iter_passages(layout: IndexLayout) -> Iterator[Passage]:
    """The passages of passages.jsonl in order, a line at a time; a line that is not a
    passage is one line naming it by number and the command that rebuilds it."""
    path = layout.passages / PASSAGES_FILE
    if not path.is_file():
        raise DrarenaError(f"{path} is missing: build it with {layout.rebuild_hint()}")
    with path.open("rb") as fh:  # bytes: a line that is not UTF-8 is named by its number
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                passage = Passage.from_json(line.decode("utf-8"))
            except (ValueError, TypeError) as exc:
                first = str(exc).splitlines()[0][:200]
                raise DrarenaError(
                    f"{path}:{lineno}: not a passage line ({first}); rebuild it with "
                    f"{layout.rebuild_hint('--force')}"
                ) from None
            yield passage


def check_passages(layout: IndexLayout, manifest: PassagesManifest) -> None:
    """passages.jsonl must be the file its manifest recorded: offsets.npy points into it.

    Why checked on every open: a line edited or cut short would otherwise surface mid-search,
    or as another passage's bytes. The file is hashed in full (at disk speed, holding
    nothing) unless its stat is the one recorded when it was last hashed (search.stamps: not
    written since), as require_fresh checks docs.jsonl. A file that differs is read through
    for its first line that is not a passage, so the error names the line, as when every
    passage was loaded; one whose lines are all passages is named as changed."""
    path = layout.passages / PASSAGES_FILE
    if verified_sha256(path, layout.root) == manifest.passages_sha256:
        return
    for _ in iter_passages(layout):
        pass
    raise DrarenaError(
        f"{path}: not the passages its manifest recorded (changed since it was built); "
        f"rebuild it with {layout.rebuild_hint('--force')}"
    )


class PassageStore(Mapping[str, Passage]):
    """passages.jsonl as a read-only mapping of passage id to Passage, read from disk per
    lookup. Threads share it: the table is read-only and lines are read with os.pread."""

    def __init__(self, path: Path, table: np.ndarray, hint: str) -> None:
        self.path = path
        self._keys = KeyTable(table[0])
        self._offsets = table[1]
        self._lengths = table[2]
        self._file = LineReader(path, "passages file")
        self._hint = hint

    @classmethod
    def open(cls, layout: IndexLayout, manifest: PassagesManifest) -> PassageStore:
        path = layout.passages / PASSAGES_FILE
        if not path.is_file():
            raise DrarenaError(f"{path} is missing: build it with {layout.rebuild_hint()}")
        table = open_offsets(layout, manifest)
        check_passages(layout, manifest)
        return cls(path, table, layout.rebuild_hint("--force"))

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, pid: str) -> Passage:
        if not isinstance(pid, str):
            raise KeyError(pid)
        key = key_of(pid)
        for at in self._keys.candidates(pid):
            passage = self._read(at, pid, key)
            if passage.id == pid:
                return passage
        raise KeyError(pid)

    def __iter__(self) -> Iterator[str]:
        """The passage ids in file order (reads the whole file: for tests and tools, not for
        search)."""
        with self.path.open("rb") as fh:
            for line in fh:
                if line.strip():
                    yield str(json.loads(line)["id"])

    def pages_of(self, pids: Sequence[str]) -> list[str | None]:
        """The page of each passage id that may be here (its digest is), None for the others,
        without reading a line: the ranking reads only the passages it returns, and they are
        checked then (base.rank_pages)."""
        held = self._keys.holds(pids)
        return [doc_id_of(p) if h else None for p, h in zip(pids, held, strict=True)]

    def _read(self, at: int, pid: str, key: int) -> Passage:
        """The passage on the line row `at` of the table names; a line that does not hold a
        passage whose id has the digest looked up is a damaged file, one line naming it."""
        offset = int(self._offsets[at])
        raw = self._file.read(offset, int(self._lengths[at]))
        try:
            passage = Passage.from_json(raw.decode("utf-8"))
        except (ValueError, TypeError) as exc:  # not UTF-8, not JSON, not a passage
            first = str(exc).splitlines()[0][:200]
            raise DrarenaError(
                f"{self.path} at byte {offset}: not a passage line ({first}); rebuild it "
                f"with {self._hint}"
            ) from None
        if passage.id != pid and key_of(passage.id) != key:
            raise DrarenaError(
                f"{self.path} at byte {offset}: passage {passage.id[:200]!r}, not the "
                f"{pid[:200]!r} its offsets name; rebuild it with {self._hint}"
            )
        if passage.doc_id != doc_id_of(passage.id):
            raise DrarenaError(
                f"{self.path} at byte {offset}: passage {passage.id[:200]!r} names page "
                f"{passage.doc_id[:200]!r}; rebuild it with {self._hint}"
            )
        return passage
