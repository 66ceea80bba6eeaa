"""Reading a file drarena did not write itself, bounded; the end of a log, bounded; and
writing into folders that may have come from elsewhere.

Why one function to read: a run folder's records, drift.json and a crawl's seeds file may be
damaged or not drarena's at all, and a 10 GB file (or a FIFO that never ends) must cost at most
the limit to refuse. Read, not stat()ed: a FIFO or a growing file has no size to trust.

Why one way to write: a snapshot or run folder received from someone else (tar keeps
symlinks) may hold a link where drarena writes, `docs.jsonl.tmp -> ~/.bashrc`. Every file
drarena writes goes through `write_atomic` / `atomic_output` (a temporary file created
exclusively under a unique name, never through a link, then renamed over the target: a link
at the target is replaced, its target untouched), `open_append` (no link followed, nothing
but a regular file appended to), or an exclusive create; every subfolder it writes into
through `own_folder` (a link there is refused). A full disk is one line naming the file, and
the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, overload

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
        with open_input(path, what) as f:
            data = _read_upto(f, limit + 1)
    except OSError as exc:
        if missing and isinstance(exc, FileNotFoundError):
            raise DrarenaError(missing) from None
        raise DrarenaError(_cannot(path, what, exc.strerror or str(exc))) from None
    except ValueError as exc:  # a NUL or a lone surrogate in the path: open() cannot take it
        # (one wording on every Python: 3.13's os.open says "embedded null character in path")
        reason = "embedded null byte" if "\0" in str(path) else str(exc)
        raise DrarenaError(_cannot(path, what, reason)) from None
    if len(data) > limit:
        why = too_large or "damaged, or not drarena's"
        raise DrarenaError(f"{path}: larger than {limit} bytes ({why})")
    return data


def read_lines_bounded(
    path: Path, limit: int, too_large: str = "", *, what: str = "", missing: str = ""
) -> Iterator[bytes]:
    """read_bounded a line at a time (each line's bytes up to and with its b"\\n"), with its
    errors in its words: the file is never held whole, only its longest line. A file past
    `limit` bytes raises read_bounded's error once the lines within the limit are read."""
    try:
        f = open_input(path, what)
    except OSError as exc:
        if missing and isinstance(exc, FileNotFoundError):
            raise DrarenaError(missing) from None
        raise DrarenaError(_cannot(path, what, exc.strerror or str(exc))) from None
    except ValueError as exc:  # a NUL or a lone surrogate in the path (as read_bounded)
        reason = "embedded null byte" if "\0" in str(path) else str(exc)
        raise DrarenaError(_cannot(path, what, reason)) from None
    size = 0
    with f:
        while True:
            try:
                line = f.readline(limit + 1 - size)
            except OSError as exc:
                raise DrarenaError(_cannot(path, what, exc.strerror or str(exc))) from None
            if not line:
                return
            size += len(line)
            if size > limit:
                why = too_large or "damaged, or not drarena's"
                raise DrarenaError(f"{path}: larger than {limit} bytes ({why})")
            yield line


def open_input(path: Path, what: str = "") -> BinaryIO:
    """`path` opened to read, as what drarena reads may not be drarena's file: a regular file
    (through a link too) or a pipe, never a device, socket or folder (one line naming it:
    `/dev/zero` in place of index.cdxj was read until a MemoryError at 7.6 GB, and a device
    may block or act on being read). Opened without blocking, so a FIFO with no writer reads
    as empty instead of waiting forever; then reads block as usual. OSError (missing,
    unreadable) and ValueError (a NUL in the path) are the caller's, as open() raises them."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"
            raise DrarenaError(
                f"{shown(str(path), 1000)}: cannot read{' ' + what if what else ''} ({kind}, "
                "not a regular file: damaged, or not drarena's)"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


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


# --- writing ---------------------------------------------------------------------------------

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# A temporary file's name: the target's, a random token, ".tmp" (so `*.tmp` finds leftovers)
_TEMP_TAIL = re.compile(r"\.[0-9a-f]{12}\.tmp")
# errors that mean the disk (or the user's quota) is full: one line, not a traceback
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def temp_name(name: str) -> str:
    """A unique temporary name beside `name`: two writers (two runs of one folder, a crawl and
    an extract) never share one, and a name planted in advance cannot be guessed."""
    return f"{name}.{secrets.token_hex(6)}.tmp"


def temp_target(candidate: str) -> str | None:
    """The name whose temporary file `candidate` is (a temp_name, or the fixed `<name>.tmp`
    that earlier drarenas wrote, which an interrupted run may have left), or None."""
    found = _TEMP_TAIL.search(candidate)
    if found is not None and found.end() == len(candidate) and found.start() > 0:
        return candidate[: found.start()]
    if candidate.endswith(".tmp") and len(candidate) > 4:
        return candidate[:-4]
    return None


def is_temp_of(name: str, candidate: str) -> bool:
    """Whether `candidate` is a temporary file of `name` (temp_target)."""
    return temp_target(candidate) == name


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk (or quota, or file size limit) is full: an OSError of
    FULL_ERRNOS, or SQLite's own words for it (sqlite3.OperationalError is no OSError)."""
    if isinstance(exc, OSError):
        return exc.errno in FULL_ERRNOS
    return type(exc).__name__ == "OperationalError" and "full" in str(exc)


def write_error(path: Path, exc: OSError, doing: str = "cannot write") -> DrarenaError:
    """One line for a write that failed: a full disk says so, anything else gives its reason;
    the path is shown with its unprintable characters escaped."""
    where = shown(str(path), 1000)
    if exc.errno in FULL_ERRNOS:  # the disk, the user's quota, or a file size limit
        return DrarenaError(
            f"{where}: no room left to write it ({exc.strerror}); nothing half-written was left"
        )
    return DrarenaError(f"{where}: {doing} ({exc.strerror or exc})")


@overload
def atomic_output(path: Path) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def atomic_output(path: Path, mode: Literal["w"]) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def atomic_output(
    path: Path, mode: Literal["wb"]
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
def atomic_output(path: Path, mode: str = "w") -> contextlib.AbstractContextManager[IO[Any]]:
    """A file to write `path` through: a temporary file beside it (temp_name) created with
    O_EXCL and O_NOFOLLOW, renamed over `path` when the block ends without an error, removed
    when it does not. A link at `path` is replaced (its target untouched); a full disk is one
    line (write_error). Text mode is UTF-8 with no newline translation."""
    return _atomic_output(path, mode == "wb")


@contextlib.contextmanager
def _atomic_output(path: Path, binary: bool) -> Iterator[IO[Any]]:
    tmp = path.with_name(temp_name(path.name))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        if binary:
            handle: IO[Any] = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding="utf-8", newline="")
        with handle:
            yield handle
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            raise write_error(path, exc) from None
        if isinstance(exc, OSError) and exc.filename in (str(tmp), str(path)):
            raise write_error(path, exc) from None
        raise


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `path` whole, atomically, never through a link (see atomic_output)."""
    if isinstance(data, str):
        with atomic_output(path) as fh:
            fh.write(data)
    else:
        with atomic_output(path, "wb") as out:
            out.write(data)


@overload
def open_append(path: Path) -> IO[str]: ...
@overload
def open_append(path: Path, mode: Literal["a"]) -> IO[str]: ...
@overload
def open_append(path: Path, mode: Literal["ab"]) -> IO[bytes]: ...
def open_append(path: Path, mode: str = "a") -> IO[Any]:
    """`path` opened to append (made when missing; text is UTF-8), never through a link and
    only if it is a regular file: a FIFO, device or link planted there is one line."""
    try:
        fd = os.open(
            path,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK,
            0o666,
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DrarenaError(
                f"{shown(str(path), 1000)}: a link, not a file drarena wrote; nothing was "
                "written through it (move it aside)"
            ) from None
        if exc.errno == errno.ENXIO:  # a FIFO no one reads (O_NONBLOCK: not waited for)
            raise _not_regular(path) from None
        raise write_error(path, exc) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if mode == "ab":
        return os.fdopen(fd, "ab")
    return os.fdopen(fd, "a", encoding="utf-8", newline="")


def _not_regular(path: Path) -> DrarenaError:
    return DrarenaError(
        f"{shown(str(path), 1000)}: not a regular file; nothing was written to it (move it aside)"
    )


def open_replacing(path: Path) -> BinaryIO:
    """A new, empty file at `path` to write as it goes (a server's log): created exclusively
    under a unique name (never through a link) and renamed over `path` at once, so a link or
    a file planted there is replaced, never written through or truncated."""
    tmp = path.with_name(temp_name(path.name))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        os.replace(tmp, path)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise write_error(path, exc) from None
    return os.fdopen(fd, "wb")


def own_folder(path: Path) -> Path:
    """`path` as a folder drarena writes into, made (with its parents) when missing. A link
    there is refused in one line: inside a folder received from elsewhere, `matches/ ->
    ~/notes` would have drarena write, or delete, among the user's files. (A folder the user
    names on the command line is used as named, link or not; this guards drarena's own
    subfolders.)"""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DrarenaError(
            f"{shown(str(path), 1000)}: exists and is not a folder; nothing was written"
        ) from None
    except OSError as exc:
        raise write_error(path, exc, "cannot make the folder") from None
    if path.is_symlink():
        raise DrarenaError(
            f"{shown(str(path), 1000)}: a link, not a folder drarena made; nothing was written "
            "through it (replace it with a folder)"
        )
    return path


def refuse_link(path: Path, what: str = "folder") -> None:
    """One line when `path` is a link where drarena expects its own `what` (a folder it would
    empty or write into, a file it would replace): nothing is done through it."""
    if path.is_symlink():
        raise DrarenaError(
            f"{shown(str(path), 1000)}: a link, not a {what} drarena made; nothing was "
            f"deleted or written through it (replace it with a {what})"
        )
