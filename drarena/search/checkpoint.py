"""The chunks of a dense build kept on disk, so an interrupted build resumes where it stopped.

Why: encoding is the slow stage of `drarena search index` (1-2 minutes for the committed
snapshot's 6,856 passages on 2 cores, about 100 passages a second, so hours for a crawl of
a million), and a build stopped by Ctrl-C, a killed job or a full disk used to start over.
Each chunk of CHUNK_PASSAGES vectors is written beside the index folder (`<index>.partial/`)
as it is encoded; a later build with the same inputs reads the chunks back and encodes only
the rest, and a finished build removes them.

Chunks are reused only under the identity they were made under: the source (snapshot,
docs, passage settings), a digest of the very texts in order, the model folder, precision,
word-piece limit, batch size, chunk size, the encoder libraries' versions and the CPU (whose
kernels decide the last bits of a vector). Anything else and the old chunks are deleted
first. Only files this module writes are ever deleted (identity.json, chunk-NNNNNN.npy and
their temporaries), never the folder's other contents. One build at a time holds a folder
(an exclusive lock on `<index>.partial/lock`); a second one fails at once, naming it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy

from drarena.errors import DrarenaError
from drarena.files import (
    atomic_output,
    open_append,
    own_folder,
    read_bounded,
    temp_target,
    write_atomic,
)

CHUNK_PASSAGES = 1024
FORMAT = 1
IDENTITY_FILE = "identity.json"
# identity.json names what the chunks were encoded from (digests, model path, versions, CPU):
# under 2 KB whatever the corpus (a million pages change only the digests), so 1 MiB is far
# above it. A larger file, like any unreadable one, is not this build's: the chunks restart.
MAX_IDENTITY_BYTES = 1 << 20
LOCK_FILE = "lock"
_CHUNK = re.compile(r"chunk-(\d{6})\.npy")
# the libraries that may encode (torch and sentence-transformers for fp32, openvino for bf16,
# onnxruntime for int8): the versions of those installed go into the identity
_LIBRARIES = ("torch", "sentence-transformers", "transformers", "openvino", "onnxruntime")


def texts_digest(ids: Sequence[str], texts: Sequence[str]) -> str:
    """sha256 over the passages in order (id and text): chunks belong to these rows."""
    digest = hashlib.sha256()
    for pid, text in zip(ids, texts, strict=True):
        digest.update(json.dumps([pid, text], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo; the platform's processor string elsewhere)."""
    with contextlib.suppress(OSError):
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


class DenseCheckpoint:
    """`<index>.partial/`: the chunks of one dense build (see the module docstring).

    Use as a context manager (it takes the folder's lock), then `resume` once, `save` each
    new chunk, and `finish` after the index is in place."""

    def __init__(self, folder: Path, identity: dict[str, Any], chunk: int | None = None):
        self.folder = folder
        self.chunk = chunk or CHUNK_PASSAGES
        self.identity = {"format": FORMAT, "chunk": self.chunk, **identity}
        self._lock: Any = None

    def __enter__(self) -> DenseCheckpoint:
        own_folder(self.folder)
        lock = open_append(self.folder / LOCK_FILE)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            raise DrarenaError(
                f"{self.folder}: another dense build of this index is running (it holds "
                f"{LOCK_FILE}); wait for it, or stop it first"
            ) from None
        self._lock = lock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def resume(self, count: int, dimension: int, *, reuse: bool = True) -> list[np.ndarray]:
        """The chunks already encoded for `count` passages of `dimension`, in order: the
        leading run of complete, well-formed chunks under this identity (none without
        `reuse`: a forced rebuild). Chunks under another identity, and any after the first
        missing or bad one, are deleted; the identity is then written, so chunks saved from
        here on are this build's."""
        chunks: list[np.ndarray] = []
        if reuse and self._read_identity() == self.identity:
            for index in range(-(-count // self.chunk)):
                rows = min(self.chunk, count - index * self.chunk)
                vectors = self._load(self._path(index), rows, dimension)
                if vectors is None:
                    break
                chunks.append(vectors)
        keep = {self._path(i).name for i in range(len(chunks))}
        self._clear(keep)
        write_atomic(self.folder / IDENTITY_FILE, json.dumps(self.identity, indent=1) + "\n")
        return chunks

    def save(self, index: int, vectors: np.ndarray) -> None:
        with atomic_output(self._path(index), "wb") as fh:
            np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())

    def finish(self) -> None:
        """The index is in place: delete this build's files, and the folder if nothing else
        is in it."""
        self._clear(set())
        for name in (IDENTITY_FILE, LOCK_FILE):
            with contextlib.suppress(FileNotFoundError):
                (self.folder / name).unlink()
        with contextlib.suppress(OSError):  # not empty: someone else's files stay
            self.folder.rmdir()

    def _path(self, index: int) -> Path:
        return self.folder / f"chunk-{index:06d}.npy"

    def _read_identity(self) -> Any:
        path = self.folder / IDENTITY_FILE
        try:  # read, not stat()ed: a FIFO or a growing file has no size to trust
            return json.loads(read_bounded(path, MAX_IDENTITY_BYTES).decode("utf-8"))
        except (DrarenaError, ValueError, RecursionError):  # RecursionError: nested too deep
            return None

    def _load(self, path: Path, rows: int, dimension: int) -> np.ndarray | None:
        """A chunk of exactly rows x dimension float32, or None (missing, cut short or not
        a chunk). The header is checked before the data is read, and no more than a chunk's
        data is read: np.load allocated whatever shape a header claimed (a damaged one that
        claimed a terabyte was a MemoryError), and a size from stat() is not true of a FIFO
        or a file growing meanwhile."""
        body = rows * dimension * 4
        if not path.is_file():  # missing; or a FIFO, whose open() would wait for a writer
            return None
        try:
            with path.open("rb") as fh:
                major, _ = npy.read_magic(fh)
                if major not in (1, 2):  # np.save writes 1.0 (2.0 for headers over 64 KiB)
                    return None
                read_header = npy.read_array_header_1_0 if major == 1 else npy.read_array_header_2_0
                shape, fortran_order, dtype = read_header(fh)
                if shape != (rows, dimension) or fortran_order or dtype != np.float32:
                    return None
                data = bytearray(body)
                if fh.readinto(data) != body or fh.read(1):  # cut short, or more than a chunk
                    return None
        except (OSError, ValueError, EOFError):
            return None
        return np.frombuffer(data, dtype=np.float32).reshape(rows, dimension)

    def _clear(self, keep: set[str]) -> None:
        for path in self._own_files():
            if path.name not in keep:
                path.unlink(missing_ok=True)

    def _own_files(self) -> Iterator[Path]:
        if not self.folder.is_dir():
            return
        for path in self.folder.iterdir():
            of = temp_target(path.name)
            if _CHUNK.fullmatch(path.name) or (
                of and (_CHUNK.fullmatch(of) or of == IDENTITY_FILE)
            ):
                yield path
