"""Records of a JSON-lines file found by key without holding the file: sorted 64-bit digests of
the keys beside the rows they name, and lines read on demand with os.pread.

Why: a retriever answered from dicts of every page and passage (2.9 GB at 333,607 passages);
what a query needs is ten passages and an agent's `open` one page. A key table costs a few
machine words a record, whatever the text; the text stays on disk, in the page cache the
kernel shares between processes.

Why digests, and why they are never trusted alone: a 64-bit digest of a key that is not in
the file can equal one that is (odds about n / 2**64). A lookup reads the candidate line and
compares the key it holds, so a lookup is exact; only "might it be here" (`KeyTable.holds`)
answers from the digests alone, for callers that check the records they then read.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import overload

import numpy as np

from drarena.errors import DrarenaError

NEWLINE_CHUNK = 16 << 20  # bytes scanned for line ends at a time (LineList): bounds the scratch


def _digest(raw: bytes) -> bytes:
    """8 bytes of blake2b: the same on every machine and run, unlike hash()."""
    return hashlib.blake2b(raw, digest_size=8).digest()


def key_of(text: str) -> int:
    """The 64-bit digest of a key, as an int (the little-endian uint64 of its 8 bytes)."""
    return int.from_bytes(_digest(text.encode("utf-8", "surrogatepass")), "little")


def keys_of(texts: Iterable[str]) -> np.ndarray:
    """key_of of each text as a uint64 array (the bytes joined, not ints converted: a query
    asks this of 50 ids, and it was a fifth of what reading passages added to a query)."""
    raw = b"".join([_digest(t.encode("utf-8", "surrogatepass")) for t in texts])
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


class KeyTable:
    """Rows by key digest: `keys` sorted ascending, `rows[i]` the row of `keys[i]` (rows of
    equal digests ascending; None: the row is the position in `keys`). Read-only, so shared
    by threads without a lock."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray | None = None) -> None:
        self.keys = keys
        self.rows = rows

    @classmethod
    def build(cls, keys: np.ndarray, rows: np.ndarray) -> KeyTable:
        order = np.lexsort((rows, keys))
        return cls(np.ascontiguousarray(keys[order]), np.ascontiguousarray(rows[order]))

    def __len__(self) -> int:
        return len(self.keys)

    def distinct(self) -> int:
        """How many different digests the table holds."""
        if not len(self.keys):
            return 0
        return int(np.count_nonzero(self.keys[1:] != self.keys[:-1])) + 1

    def shared(self) -> list[list[int]]:
        """The rows of each digest held more than once (a key repeated, or two keys whose
        digests collide: reading the rows tells which)."""
        same = np.flatnonzero(self.keys[1:] == self.keys[:-1]).tolist()
        groups: dict[int, list[int]] = {}
        for i in same:
            for at in (i, i + 1):
                rows = groups.setdefault(int(self.keys[at]), [])
                row = at if self.rows is None else int(self.rows[at])
                if row not in rows:
                    rows.append(row)
        return list(groups.values())

    def candidates(self, text: str) -> list[int]:
        """The rows whose key may be `text` (its digest's), in ascending order."""
        key = key_of(text)
        keys, hi = self.keys, int(np.searchsorted(self.keys, np.uint64(key)))
        lo = hi
        while hi < len(keys) and int(keys[hi]) == key:  # one row but for a collision
            hi += 1
        if self.rows is None:
            return list(range(lo, hi))
        return [int(r) for r in self.rows[lo:hi]]

    def holds(self, texts: Sequence[str]) -> list[bool]:
        """Whether each key's digest is in the table: one vectorised search for them all."""
        if not texts or not len(self.keys):
            return [False] * len(texts)
        wanted = keys_of(texts)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        found: list[bool] = (self.keys[at] == wanted).tolist()
        return found


class LineReader:
    """Byte ranges of one file read with os.pread on one descriptor.

    Why pread: it takes the offset with the call, so threads (a BM25 retriever is searched
    from the serve-search pool) share the descriptor without a lock or a seek race. The file
    stays open for the reader's life: a docs.jsonl replaced by a new extraction is not read
    half old, half new (this descriptor keeps the old file)."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        try:
            self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            self.size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise DrarenaError(f"{path}: cannot read the {what} ({exc.strerror})") from None
        weakref.finalize(self, os.close, self._fd)

    def read(self, offset: int, length: int) -> bytes:
        """Exactly `length` bytes from `offset`; a range past the end is one line naming the
        file (it was cut short after its table was made)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise DrarenaError(
                f"{self.path}: {self.what} shorter than its offsets say (byte {offset} + "
                f"{length} of {self.size})"
            )
        parts, done = [], 0
        while done < length:
            try:
                chunk = os.pread(self._fd, length - done, offset + done)
            except OSError as exc:
                raise DrarenaError(
                    f"{self.path}: cannot read the {self.what} ({exc.strerror})"
                ) from None
            if not chunk:
                raise DrarenaError(
                    f"{self.path}: {self.what} cut short while open (byte {offset + done})"
                )
            parts.append(chunk)
            done += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)


class LineList(Sequence[str]):
    """The lines of a UTF-8 text file as a read-only list of str, decoded when asked.

    The file is memory-mapped and only its line starts are held (8 bytes a line), found a
    chunk at a time with numpy: a dense index's `docid` file of a million passage ids was a
    list of a million Python strings (about 80 bytes each). Lines end at b"\\n" only; a last
    line without one counts."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        ends = [np.zeros(0, dtype=np.uint64)]
        for start in range(0, size, NEWLINE_CHUNK):
            assert self._map is not None
            view = np.frombuffer(
                self._map, dtype=np.uint8, count=min(NEWLINE_CHUNK, size - start), offset=start
            )
            ends.append(np.flatnonzero(view == 0x0A).astype(np.uint64) + np.uint64(start + 1))
            del view  # a view left alive would keep the map from closing
        starts = np.concatenate([np.zeros(1, dtype=np.uint64), *ends])
        if size and (len(starts) == 1 or int(starts[-1]) != size):
            starts = np.append(starts, np.uint64(size + 1))  # a last line without b"\n"
        self._starts = starts
        self._size = size

    def __len__(self) -> int:
        return len(self._starts) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        assert self._map is not None
        start, end = int(self._starts[index]), min(int(self._starts[index + 1]) - 1, self._size)
        try:
            return self._map[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DrarenaError(
                f"{self.path}: line {index + 1} of the {self.what} is not UTF-8 ({exc.reason})"
            ) from None


class PackedStrings(Sequence[str]):
    """Strings by position, packed: their UTF-8 bytes in one blob, and each one's start and
    length (12 bytes a string besides its bytes, where a list of str costs ~60 more).

    Why: the BM25 searcher maps every Lucene doc number to its passage id; a list of a
    million ids was ~90 MB of Python strings. Built in any order (`put`), read after
    `freeze`; a position never put reads as ""."""

    def __init__(self, count: int) -> None:
        self._starts = np.zeros(count, dtype=np.uint64)
        self._lengths = np.zeros(count, dtype=np.uint32)
        self._parts: list[bytes] = []
        self._size = 0
        self._blob = b""

    def put(self, index: int, text: str) -> None:
        raw = text.encode("utf-8", "surrogatepass")
        self._starts[index] = self._size
        self._lengths[index] = len(raw)
        self._parts.append(raw)
        self._size += len(raw)

    def freeze(self) -> PackedStrings:
        self._blob = b"".join(self._parts)
        self._parts = []
        return self

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start = int(self._starts[index])
        end = start + int(self._lengths[index])
        return self._blob[start:end].decode("utf-8", "surrogatepass")
