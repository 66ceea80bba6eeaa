"""Reading a file drarena did not write itself, bounded; and the end of a log, bounded.

Why one function: a run folder's records, drift.json and a crawl's seeds file may be damaged
or not drarena's at all, and a 10 GB file (or a FIFO that never ends) must cost at most the
limit to refuse. Read, not stat()ed: a FIFO or a growing file has no size to trust.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from drarena.errors import DrarenaError
from drarena.quoting import shown

# How much of a log's end is read to show it (read_tail): a few dozen lines of any server's.
TAIL_BYTES = 64 << 10
# read_bounded reads this much at a time, so what it allocates follows the file, not the limit
READ_CHUNK = 1 << 20


def read_bounded(
    path: Path, limit: int, too_large: str = "", *, what: str = "", missing: str = ""
) -> bytes:
    """A file's bytes, at most `limit` of them read: a larger file, or one that cannot be
    read, is one line naming it (`too_large` says what to do about a larger one; `what` names
    the kind of file, "PATH: cannot read WHAT (reason)"; `missing`, when given, is the whole
    line for a file that does not exist)."""
    try:
        with path.open("rb") as f:
            data = _read_upto(f, limit + 1)
    except OSError as exc:
        if missing and isinstance(exc, FileNotFoundError):
            raise DrarenaError(missing) from None
        raise DrarenaError(_cannot(path, what, exc.strerror or str(exc))) from None
    except ValueError as exc:  # a NUL or a lone surrogate in the path: open() cannot take it
        raise DrarenaError(_cannot(path, what, str(exc))) from None
    if len(data) > limit:
        why = too_large or "damaged, or not drarena's"
        raise DrarenaError(f"{path}: larger than {limit} bytes ({why})")
    return data


def _read_upto(f: BinaryIO, size: int) -> bytes:
    """At most `size` bytes of `f`, read a chunk at a time. Why not f.read(size): CPython
    allocates the whole `size` for the result before reading, so a 1 GiB limit cost a 1 GiB
    allocation for a 2 KB manifest (tests/web/test_web_bombs.py's peak)."""
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = f.read(min(READ_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)  # one chunk: the same object, not a copy


def _cannot(path: Path, what: str, reason: str) -> str:
    """One line: the path with its unprintable characters escaped (quoting.shown)."""
    return f"{shown(str(path), 1000)}: cannot read{' ' + what if what else ''} ({reason})"


def read_tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The text of a file's last `limit` bytes (UTF-8, errors replaced), starting at a line:
    when the file is longer, the first, cut line of that window is left out. Why: a failed
    server's log is shown by its end, and a log appended to at every start may be any size;
    this costs `limit` however large it is. "" when it cannot be read."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            f.seek(start)
            data = f.read(limit)
    except OSError:
        return ""
    if start:
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else b""
    return data.decode("utf-8", errors="replace")
