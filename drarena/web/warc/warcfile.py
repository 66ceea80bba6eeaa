"""Reading WARC files one gzip member at a time, so corruption costs only the damaged record.

Why not warcio's ArchiveIterator here: it stops at the first damaged gzip member and takes
every record after it along. This reader decodes each member on its own, streaming through a
sliding window (flat memory at any file size), resynchronizes on the next gzip header after
damage, and counts what it had to skip. Uncompressed WARC files are read too (iteration and
lookup at an offset). Writing stays with warcio (see writer.py).
"""

from __future__ import annotations

import base64
import hashlib
import mmap
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

from drarena.digests import file_sha256
from drarena.files import open_input

GZIP_MAGIC = b"\x1f\x8b\x08"
_CHUNK = 1 << 16
# A gzip member is fed to its inflater in pieces growing from _FEED_FIRST to _CHUNK bytes:
# zlib copies what follows a member's end (unused_data) when the member ends inside a piece,
# so a fixed 64 KiB piece cost a 64 KiB copy per member, whatever its size (a flood of 20-byte
# empty members: quadratic). Growing pieces keep that copy within twice the member's own size.
_FEED_FIRST = 1 << 6
_READ = 1 << 20
_HOLD = 1 << 22  # decompressed bytes of a member kept at once; larger blocks stream
_HEAD_MAX = 1 << 16  # WARC or HTTP header block larger than this: a broken record
T = TypeVar("T")

_zlib: Any = zlib
INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error,)
try:  # ISA-L inflates about 3x faster than zlib (the import's hot loop); same API
    from isal import isal_zlib

    _zlib = isal_zlib
    INFLATE_ERRORS = (zlib.error, cast("type[Exception]", isal_zlib.error))
except ImportError:  # pragma: no cover - isal is a dependency; zlib still works
    pass


DAMAGE_ERRORS: tuple[type[Exception], ...] = (*INFLATE_ERRORS, ValueError)
_CUT_ERRORS: tuple[type[Exception], ...] = (*INFLATE_ERRORS, EOFError)  # damaged or cut short
_UNDECODABLE: tuple[type[Exception], ...] = (*_CUT_ERRORS, ValueError)


def _inflater() -> Any:
    return _zlib.decompressobj(wbits=31)


def header_value(headers: tuple[tuple[str, str], ...], name: str, default: str = "") -> str:
    """The first header of that name, compared case-insensitively (WARC and HTTP alike)."""
    lname = name.lower()
    for key, value in headers:
        if key.lower() == lname:
            return value
    return default


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One WARC record: its headers (names as written), block bytes and where it lives."""

    warc_file: str
    offset: int
    length: int
    headers: tuple[tuple[str, str], ...]
    block: bytes

    def header(self, name: str, default: str = "") -> str:
        return header_value(self.headers, name, default)

    @property
    def type(self) -> str:
        return self.header("WARC-Type")


@dataclass(frozen=True, slots=True)
class Damage:
    """A stretch of a WARC file that could not be decoded."""

    warc_file: str
    offset: int
    records: int
    reason: str


def sha1_b32(data: bytes) -> str:
    """WARC digest form (`sha1:BASE32`), as warcio writes it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


_FIELD = re.compile(r"([^:\r\n]+):[ \t]*([^\r\n]*)")
_UNUSUAL = re.compile(r"\r\n[ \t]|^[ \t]|[ \t]\r\n|[ \t]:|[ \t]$")


def _unusual(text: str) -> bool:
    """What `_UNUSUAL` finds, by substring tests (about 7x faster: once per record)."""
    return (
        "\r\n " in text
        or "\r\n\t" in text
        or " \r\n" in text
        or "\t\r\n" in text
        or " :" in text
        or "\t:" in text
        or text.startswith((" ", "\t"))
        or text.endswith((" ", "\t", " \n", "\t\n"))
    )


def _parse_headers(head: bytes) -> tuple[tuple[str, str], ...]:
    text = head.decode("utf-8", "replace")
    if not _unusual(text):
        # The common case (a hot path of import): nothing to strip or unfold; folded lines
        # and stray blanks take the loop below, bare CR or LF the regex.
        if text.count("\r") == text.count("\n") == text.count("\r\n"):
            fields: list[tuple[str, str]] = []
            for line in text.split("\r\n"):
                key, sep, value = line.partition(":")
                if sep:
                    if not key:  # a line starting with ':' (the regex reads on inside it)
                        return tuple(_FIELD.findall(text))
                    fields.append((key, value.lstrip(" \t")))
            return tuple(fields)
        return tuple(_FIELD.findall(text))
    out: list[tuple[str, str]] = []
    for line in head.decode("utf-8", "replace").split("\r\n"):
        if not line:
            continue
        if line[0] in " \t" and out:  # folded continuation line
            key, value = out[-1]
            out[-1] = (key, value + " " + line.strip())
            continue
        key, sep, value = line.partition(":")
        if sep:
            out.append((key.strip(), value.strip()))
    return tuple(out)


def parse_records(data: bytes, warc_file: str, offset: int, length: int) -> list[RawRecord]:
    """Parse the WARC record(s) in one decompressed member; ValueError if malformed."""
    records: list[RawRecord] = []
    pos = 0
    while pos < len(data):
        if not data.startswith(b"WARC/1.", pos):
            raise ValueError("member does not start with a WARC/1.x version line")
        head_end = data.find(b"\r\n\r\n", pos)
        if head_end < 0:
            raise ValueError("WARC header block not terminated")
        first_eol = data.find(b"\r\n", pos)
        headers = _parse_headers(data[first_eol + 2 : head_end + 2])
        lengths = [v for k, v in headers if k.lower() == "content-length"]
        if not lengths or not lengths[0].isdigit():
            raise ValueError("WARC record without a valid Content-Length")
        start = head_end + 4
        end = start + int(lengths[0])
        if end > len(data):
            raise ValueError("WARC record block shorter than its Content-Length")
        records.append(RawRecord(warc_file, offset, length, headers, data[start:end]))
        pos = end
        while data[pos : pos + 1] in (b"\r", b"\n"):
            pos += 1  # any run of line breaks, as iter_plain skips them between records
    return records


class MultiRecordMember(ValueError):
    """A gzip member holding more than one record (e.g. a whole-file gzip): no random access."""


class Window:
    """Sequential buffered reads with look-ahead over a file; bytes before the `release()`
    mark are dropped. Why not mmap: touched pages of a map count as resident memory, so a
    multi-GB scan would look (and, under pressure, be) as large as the file."""

    def __init__(self, fh: BinaryIO, on_read: Callable[[bytes], object] | None = None) -> None:
        self.fh = fh
        self.on_read = on_read
        self.buf = b""
        self.base = 0
        self.keep = 0
        self.eof = False
        self._seen = 0  # bytes already passed to on_read (a rewind does not pass them twice)

    @property
    def end(self) -> int:
        return self.base + len(self.buf)

    def release(self, pos: int) -> None:
        self.keep = max(self.keep, pos)

    def rewind(self, pos: int) -> None:
        """Go back to `pos` (damage resync): within what is buffered, by moving the mark
        alone; before it, by seeking (the file must be seekable). Why not always seek: a
        file of many small damaged members (a flood of empty gzip members) rewinds at every
        one, and re-reading a 1 MiB window each time made the scan quadratic."""
        if self.base <= pos <= self.end:
            self.keep = pos
            return
        self.fh.seek(pos)
        self.buf, self.base, self.keep, self.eof = b"", pos, pos, False

    def _fill(self, upto: int) -> None:
        while self.end < upto and not self.eof:
            chunk = self.fh.read(max(_READ, min(upto - self.end, 64 * _READ)))
            if not chunk:
                self.eof = True
                break
            end = self.end + len(chunk)
            if self.on_read is not None and end > self._seen:
                self.on_read(chunk[max(0, self._seen - self.end) :])
                self._seen = end
            drop = min(max(self.keep - self.base, 0), len(self.buf))
            if drop == len(self.buf):  # everything buffered is behind the mark
                skip = min(max(self.keep - self.end, 0), len(chunk))
                self.buf, self.base = chunk[skip:], self.end + skip
            else:
                self.buf, self.base = self.buf[drop:] + chunk, self.base + drop

    def get(self, pos: int, n: int) -> memoryview:
        """Up to `n` bytes from `pos` (fewer at the end of the file)."""
        if pos < self.base:
            raise ValueError(f"read at {pos} behind the window at {self.base}")
        if pos + n > self.end:
            self._fill(pos + n)
        start = pos - self.base
        return memoryview(self.buf)[start : start + n]

    def find(self, pattern: bytes, pos: int) -> int:
        """Offset of the next `pattern` at or after `pos`, or -1; releases what it passes."""
        while True:
            view = self.get(pos, _READ)
            found = bytes(view).find(pattern)
            if found >= 0:
                return pos + found
            if len(view) < _READ and self.eof:
                return -1
            pos = max(pos, pos + len(view) - len(pattern) + 1)
            self.release(pos)


MAX_RECORD_BYTES = 64 * 1024 * 1024
"""Cap on one record's decompressed size where its block is read whole (iteration, lookup,
verify): one gzip member expands up to ~1000x, so a 1 MB member could hold 1 GB. A larger
member is damage (MemberTooLarge), named with its file and offset by the callers; importing
streams members and has no such cap (see scan_member)."""


class MemberTooLarge(ValueError):
    """A gzip member (or an uncompressed record) larger than the cap for reading it whole."""


def _inflate_chunk(
    inflater: Any,
    chunk: bytes | memoryview,
    parts: list[bytes] | None,
    size: int,
    limit: int,
    start: int,
) -> int:
    """Inflate one compressed chunk at most _HOLD bytes per call (a chunk of zeros can expand
    to 64 MB at once); keep the output in `parts` (None: count it only); the new size."""
    out = inflater.decompress(chunk, _HOLD)
    while True:
        size += len(out)
        if size > limit:
            raise MemberTooLarge(
                f"gzip member at offset {start} expands past {limit} bytes "
                "(the cap for reading one record whole)"
            )
        if parts is not None:
            parts.append(out)
        if not inflater.unconsumed_tail and (len(out) < _HOLD or inflater.eof):
            return size
        out = inflater.decompress(inflater.unconsumed_tail, _HOLD)


def feed_sizes() -> Iterator[int]:
    """How much of a gzip member to give its inflater at each call: _FEED_FIRST bytes, then
    twice as much each time, up to _CHUNK (see _FEED_FIRST)."""
    size = _FEED_FIRST
    while True:
        yield size
        size = min(size * 2, _CHUNK)


def _inflate_member(
    win: Window, start: int, limit: int = MAX_RECORD_BYTES, keep: bool = True
) -> tuple[bytes, int]:
    """Decompress the gzip member at `start`; return (data, compressed length). Without
    `keep` the output is only counted (a check that the member decodes: flat memory)."""
    inflater = _inflater()
    parts: list[bytes] | None = [] if keep else None
    size = 0
    pos = start
    feed = feed_sizes()
    while not inflater.eof:
        chunk = win.get(pos, next(feed))
        if not chunk:
            raise zlib.error("truncated gzip member")
        size = _inflate_chunk(inflater, chunk, parts, size, limit, start)
        pos += len(chunk)
    used = pos - start - len(inflater.unused_data)
    return b"".join(parts or ()), used


class GzipStream:
    """The decompressed bytes of a file of concatenated gzip members (a whole-file gzip WARC),
    read like gzip.GzipFile's read1, in time linear in the file's size.

    Why not gzip.GzipFile: at every member's end it copies what it had read past it (up to
    128 KiB) and gives it back to its reader, so a file of many tiny members (a flood of
    empty 20-byte ones) cost a 128 KiB copy per member. Here the input is read in blocks and
    fed through a memoryview in pieces growing from _FEED_FIRST (feed_sizes); what zlib did
    not use is given back by moving an offset, not by keeping its copy. Zero padding between
    members is skipped, as gzip does. Errors are zlib's (damage), EOFError (cut short) and
    BadGzipFile (bytes after a member that do not start another)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._data = b""
        self._at = 0
        self._inflater: Any = None
        self._feed: Iterator[int] = feed_sizes()

    def _fill(self, need: int = 1) -> bool:
        """At least `need` unread bytes in the block (False at the end of the file)."""
        while len(self._data) - self._at < need:
            more = self.raw.read(_READ)
            if not more:
                return False
            rest = self._data[self._at :]
            self._data, self._at = (rest + more if rest else more), 0
        return True

    def _next_member(self) -> bool:
        """Skip zero padding; True when another member starts here, False at the end."""
        while True:
            if not self._fill():
                return False
            found = _NOT_ZERO.search(self._data, self._at)
            if found is not None:
                self._at = found.start()
                break
            self._at = len(self._data)
        if not self._fill(2) or self._data[self._at : self._at + 2] != b"\x1f\x8b":
            import gzip

            raise gzip.BadGzipFile("bytes after a gzip member do not start another member")
        self._inflater, self._feed = _inflater(), feed_sizes()
        return True

    def read1(self, size: int) -> bytes:
        """Up to `size` decompressed bytes (b"" at the end of the file)."""
        while True:
            if self._inflater is None and not self._next_member():
                return b""
            if not self._fill():
                raise EOFError("compressed file ended before the end-of-stream marker")
            piece = memoryview(self._data)[self._at : self._at + next(self._feed)]
            self._at += len(piece)
            out = self._inflater.decompress(piece, max(1, size))
            self._at -= len(self._inflater.unconsumed_tail)  # given back: read again next
            if self._inflater.eof:
                self._at -= len(self._inflater.unused_data)  # the next member's bytes
                self._inflater = None
            if out:
                return bytes(out)

    def read(self, size: int) -> bytes:
        return self.read1(size)


def _salvage_is_record(win: Window, start: int) -> bool:
    """Whether damaged bytes at `start` began a WARC record (to count it as skipped)."""
    inflater = _inflater()
    try:
        head = inflater.decompress(win.get(start, 512), 16)
    except INFLATE_ERRORS:
        return False
    return bool(head.startswith(b"WARC/1."))


def _read_plain(view: memoryview, offset: int, warc_file: str, limit: int) -> list[RawRecord]:
    head_end = bytes(view[offset : offset + _HEAD_MAX]).find(b"\r\n\r\n")
    if head_end < 0:
        raise ValueError("WARC header block not terminated")
    start = offset + head_end + 4
    headers = _parse_headers(bytes(view[offset:start]).split(b"\r\n", 1)[1])
    size = _content_length(headers)
    if start + size > len(view):
        raise ValueError("WARC record block shorter than its Content-Length")
    if start + size - offset > limit:
        raise MemberTooLarge(
            f"WARC record at offset {offset} has {start + size - offset} "
            f"bytes, past the {limit}-byte cap for reading one record whole"
        )
    return [
        RawRecord(
            warc_file, offset, start + size + 4 - offset, headers, bytes(view[start : start + size])
        )
    ]


def _inflate_view(view: memoryview, start: int, limit: int) -> tuple[bytes, int]:
    """Decompress the gzip member at `start` of a mapped file; (data, compressed length)."""
    inflater = _inflater()
    parts: list[bytes] = []
    size = 0
    pos = start
    feed = feed_sizes()
    while not inflater.eof:
        if pos >= len(view):
            raise zlib.error("truncated gzip member")
        # A copy, not a slice: a slice in a traceback would pin the map (BufferError on close).
        chunk = bytes(view[pos : pos + next(feed)])
        size = _inflate_chunk(inflater, chunk, parts, size, limit, start)
        pos += len(chunk)
    return b"".join(parts), pos - start - len(inflater.unused_data)


def read_member(
    mm: mmap.mmap | bytes, offset: int, warc_file: str, limit: int = MAX_RECORD_BYTES
) -> list[RawRecord]:
    """The record(s) at `offset`: a gzip member, or an uncompressed record ('WARC/1.' there).
    ValueError/zlib.error if damaged, MemberTooLarge past `limit` decompressed bytes."""
    view = memoryview(mm)
    try:
        magic = bytes(view[offset : offset + 7])
        if magic.startswith(b"WARC/1."):
            return _read_plain(view, offset, warc_file, limit)
        if not magic.startswith(GZIP_MAGIC):
            raise ValueError("neither a gzip member nor a WARC record at this offset")
        data, used = _inflate_view(view, offset, limit)
        return parse_records(data, warc_file, offset, used)
    finally:
        view.release()


def iter_file(path: Path, limit: int = MAX_RECORD_BYTES) -> Iterator[RawRecord | Damage]:
    """Every record of a WARC file (gzip per record or uncompressed), with a Damage item for
    each stretch that could not be decoded (a gzip member expanding past `limit` bytes is
    one). Reads through a sliding window: flat memory."""
    name = path.name
    with open_input(path, "WARC file") as fh:
        win = Window(fh)
        first = bytes(win.get(0, 7))
        if not first:
            return
        if first.startswith(GZIP_MAGIC):

            def member(win: Window, pos: int, name: str) -> tuple[list[RawRecord], int]:
                return _full_member(win, pos, name, limit)

            for item in iter_members(win, name, member):
                if isinstance(item, Damage):
                    yield item
                else:
                    yield from item
        else:
            yield from iter_plain(win, name, full=True, limit=limit)  # type: ignore[misc]


def _full_member(
    win: Window, pos: int, name: str, limit: int = MAX_RECORD_BYTES
) -> tuple[list[RawRecord], int]:
    data, used = _inflate_member(win, pos, limit)
    return parse_records(data, name, pos, used), used


def iter_members(
    win: Window,
    name: str,
    member: Callable[[Window, int, str], tuple[T, int]],
    start: int = 0,
    stop: int | None = None,
) -> Iterator[T | Damage]:
    """Apply `member` to each gzip member in turn, from `start` up to the first member at or
    after `stop`; resynchronize on the next gzip header after damage and count the records
    lost (a MultiRecordMember propagates)."""
    pos = start
    while stop is None or pos < stop:
        win.release(pos)
        if not win.get(pos, 1):
            return
        try:
            item, used = member(win, pos, name)
        except MultiRecordMember:
            raise
        except DAMAGE_ERRORS as exc:
            win.rewind(pos)
            lost = 1 if _salvage_is_record(win, pos) else 0
            nxt = win.find(GZIP_MAGIC, pos + 1)
            # Later false starts inside the same damaged stretch are not records.
            while nxt >= 0:
                try:
                    _inflate_member(win, nxt, limit=1 << 62, keep=False)  # decodes? (any size)
                    break
                except DAMAGE_ERRORS:
                    win.rewind(nxt)
                    lost += 1 if _salvage_is_record(win, nxt) else 0
                    nxt = win.find(GZIP_MAGIC, nxt + 1)
            yield Damage(name, pos, max(lost, 1), str(exc) or type(exc).__name__)
            if nxt < 0:
                return
            win.rewind(nxt)
            pos = nxt
            continue
        yield item
        pos += used


# --- headers only, for indexing ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordHead:
    """What indexing needs of a record, without keeping its block: WARC headers, the HTTP
    head of the block, and the entity digest when the record does not state one."""

    warc_file: str
    offset: int
    length: int
    headers: tuple[tuple[str, str], ...]
    block_length: int
    http_head: bytes
    entity_digest: str
    fields: dict[str, str]  # lower-cased names -> first value (a hot path: one dict lookup)

    def header(self, name: str, default: str = "") -> str:
        return self.fields.get(name.lower(), default)

    @property
    def type(self) -> str:
        return self.fields.get("warc-type", "")


_HTTP_TYPES = ("response", "revisit")  # a request's HTTP head is not indexed


def _content_length(headers: tuple[tuple[str, str], ...] | dict[str, str]) -> int:
    value = (
        headers.get("content-length", "")
        if isinstance(headers, dict)
        else header_value(headers, "Content-Length")
    )
    if not value.isdigit():
        raise ValueError("WARC record without a valid Content-Length")
    return int(value)


@dataclass(slots=True)
class _Head:
    headers: tuple[tuple[str, str], ...]
    fields: dict[str, str]
    block_start: int
    block_length: int
    entity_start: int
    http_head: bytes
    digest: Any  # a running sha1, or None when the record states its payload digest

    @property
    def end(self) -> int:
        return self.block_start + self.block_length


def _parse_head(data: bytes | memoryview, complete: bool) -> _Head:
    """WARC headers and HTTP head from the first bytes of a record; ValueError if they are
    malformed or (when `complete`) not all there."""
    if isinstance(data, memoryview):
        data = bytes(data)
    if not data.startswith(b"WARC/1."):
        raise ValueError("not a WARC/1.x record")
    head_end = data.find(b"\r\n\r\n", 0, _HEAD_MAX)
    if head_end < 0:
        raise ValueError("WARC header block not terminated")
    headers = _parse_headers(data[data.find(b"\r\n") + 2 : head_end + 2])
    fields = {key.lower(): value for key, value in reversed(headers)}  # first one wins
    size = _content_length(fields)
    start = head_end + 4
    kind = fields.get("warc-type", "")
    http_head, entity = b"", start
    if kind in _HTTP_TYPES:
        limit = start + min(size, _HEAD_MAX)
        cut = data.find(b"\r\n\r\n", start, limit)
        if cut >= 0:
            http_head, entity = data[start : cut + 2], cut + 4
        elif len(data) >= limit:
            http_head, entity = data[start:limit], limit
        elif complete:
            raise ValueError("WARC record block shorter than its Content-Length")
    wants = kind == "resource" or kind == "response"
    digest = hashlib.sha1() if wants and not fields.get("warc-payload-digest") else None
    return _Head(headers, fields, start, size, entity, http_head, digest)


def _finish(head: _Head, name: str, offset: int, length: int) -> RecordHead:
    digest = (
        "sha1:" + base64.b32encode(head.digest.digest()).decode("ascii")
        if head.digest is not None
        else ""
    )
    return RecordHead(
        name, offset, length, head.headers, head.block_length, head.http_head, digest, head.fields
    )


def _check_single(data: bytes) -> None:
    """MultiRecordMember if the decoded start of a member holds the start of a second record
    (found early, so a whole-file gzip is never inflated whole before it is rewritten)."""
    try:
        head = _parse_head(data, False)
    except ValueError:
        return
    if data[head.end : head.end + 32].lstrip(b"\r\n").startswith(b"WARC/1."):
        raise MultiRecordMember("a second WARC record inside one gzip member")


def scan_member(win: Window, pos: int, name: str) -> tuple[RecordHead, int]:
    """Inflate the member at `pos` for its record's head; the block is hashed (when needed)
    and dropped as it streams by. MultiRecordMember if a second record follows inside."""
    inflater = _inflater()
    p = pos
    parts: list[bytes] = []
    held = 0
    feed = feed_sizes()
    while not inflater.eof and held < _HOLD:
        chunk = win.get(p, next(feed))
        if not chunk:
            raise zlib.error("truncated gzip member")
        out = inflater.decompress(chunk)
        win.release(p)  # not past this chunk: the next member starts inside it
        p += len(chunk)
        if out:
            parts.append(out)
            held += len(out)
            if not inflater.eof and len(parts) == 2:  # a long member: several records in it?
                _check_single(b"".join(parts))
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    head = _parse_head(data, inflater.eof)
    end = head.end
    if head.digest is not None:
        head.digest.update(memoryview(data)[head.entity_start : end])
    tail = data[end : end + 16] if end < len(data) else b""
    total = len(data)
    while not inflater.eof:
        if tail.lstrip(b"\r\n").startswith(b"WARC/"):
            break
        chunk = win.get(p, next(feed))
        if not chunk:
            raise zlib.error("truncated gzip member")
        out = inflater.decompress(chunk, _HOLD)
        while True:  # max_length bounds each output; drain what is left of this chunk
            if head.digest is not None and total < end:
                head.digest.update(memoryview(out)[: end - total])
            if total + len(out) > end and len(tail) < 16:
                tail += out[max(0, end - total) :][: 16 - len(tail)]
            total += len(out)
            if not inflater.unconsumed_tail:
                break
            out = inflater.decompress(inflater.unconsumed_tail, _HOLD)
        win.release(p)
        p += len(chunk)
    if tail.lstrip(b"\r\n").startswith(b"WARC/"):
        raise MultiRecordMember("a second WARC record inside one gzip member")
    if total < end:
        raise ValueError("WARC record block shorter than its Content-Length")
    used = p - pos - len(inflater.unused_data)
    return _finish(head, name, pos, used), used


# Where iter_plain streams a record's bytes: given the record's head (its length and entity
# digest not known yet), a function taking each piece in order, or None (not wanted).
Sink = Callable[["RecordHead"], Callable[[memoryview], object] | None]


def iter_plain(
    win: Window,
    name: str,
    full: bool = False,
    sink: Sink | None = None,
    start: int = 0,
    stop: int | None = None,
    limit: int = MAX_RECORD_BYTES,
) -> Iterator[RecordHead | RawRecord | Damage]:
    """Records of an uncompressed WARC stream (from `start`, up to the first record at or
    after `stop`): RecordHead items (RawRecord when `full`). With `full` the window keeps
    each record's bytes until the next one is asked for. With `sink`, each record's bytes
    (its WARC head to the end of its block, not the line breaks after it) are handed to the
    function `sink` returns for its head, a piece at a time, before the item is yielded; the
    caller never holds a record whole. With either, a record longer than
    `limit` is streamed past and reported as a Damage item instead (the stream may be a
    whole-file gzip, where a small file can hold a record of GBs)."""
    pos = start
    while stop is None or pos < stop:
        win.release(pos)
        lead = bytes(win.get(pos, 64))
        skip = len(lead) - len(lead.lstrip(b"\r\n"))
        if skip:
            pos += skip
            continue
        if not lead:
            return
        try:
            head = _parse_head(win.get(pos, 2 * _HEAD_MAX), False)
        except ValueError as exc:
            nxt = win.find(b"\nWARC/1.", pos + 1)
            yield Damage(name, pos, 1, str(exc))
            if nxt < 0:
                return
            pos = nxt + 1
            continue
        end = pos + head.end
        block = b""
        oversized = (full or sink is not None) and head.end > limit
        write = None
        if sink is not None and not oversized:
            write = sink(
                RecordHead(
                    name, pos, 0, head.headers, head.block_length, head.http_head, "", head.fields
                )
            )
        if full and not oversized:
            complete, block = _read_whole(win, pos, head)
        else:
            complete = _read_through(win, pos, head, write, oversized)
        if not complete:
            yield Damage(name, pos, 1, "WARC record runs past the end of the file")
            return
        after = bytes(win.get(end, 64))
        nxt = end + len(after) - len(after.lstrip(b"\r\n"))
        if oversized:
            yield Damage(
                name,
                pos,
                1,
                f"WARC record of {head.end} bytes, past the {limit}-byte "
                "cap for reading one record whole",
            )
        elif full:
            yield RawRecord(name, pos, nxt - pos, head.headers, block)
        else:
            yield _finish(head, name, pos, nxt - pos)
        pos = nxt


def _read_whole(win: Window, pos: int, head: _Head) -> tuple[bool, bytes]:
    """(complete, block) of the record at `pos`, read whole, its digest fed its entity; the
    block is b"" when the file ends inside the record."""
    record_bytes = win.get(pos, head.end)
    if len(record_bytes) != head.end:
        return False, b""
    if head.digest is not None:
        head.digest.update(record_bytes[head.entity_start :])
    return True, bytes(record_bytes[head.block_start :])


def _read_through(
    win: Window,
    pos: int,
    head: _Head,
    write: Callable[[memoryview], object] | None,
    oversized: bool,
) -> bool:
    """The record at `pos` read a piece at a time, each piece handed to `write` (its WARC
    head first) and fed to the digest (not an oversized record's), the window released
    behind it; jumped over when neither needs its bytes. Whether it was complete."""
    end = pos + head.end
    at = pos + head.entity_start
    if write is not None:
        write(win.get(pos, head.entity_start))
    elif head.digest is None and not oversized:  # jump (an oversized one: 1 MB steps)
        at = end - 1
        win.release(at)
    while at < end:
        piece = win.get(at, min(_READ, end - at))
        if not piece:
            break
        if head.digest is not None and not oversized:
            head.digest.update(piece)
        if write is not None:
            write(piece)
        at += len(piece)
        win.release(at)
    return at >= end


# --- split points, for importing one file in parallel ----------------------------------------


def find_split(path: Path, gzipped: bool, guess: int, limit: int) -> int | None:
    """The first record start at or after `guess` (within `limit` bytes), or None: a gzip
    member that decodes as one WARC record, or (uncompressed) a "WARC/1." line whose header
    parses and whose Content-Length leads to the next record or the end of the file.
    A false start (a record inside a record's block) is possible; the caller checks that
    the range before it ends exactly here, which only a true boundary does."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        win = Window(fh)
        pattern = GZIP_MAGIC if gzipped else b"\nWARC/1."
        pos = guess
        while pos < min(size, guess + limit):
            win.rewind(pos)
            found = win.find(pattern, pos)
            if found < 0 or found >= guess + limit:
                return None
            at = found if gzipped else found + 1
            if _starts_record(win, fh, at, gzipped, size):
                return at
            pos = found + 1
    return None


def _starts_record(win: Window, fh: BinaryIO, at: int, gzipped: bool, size: int) -> bool:
    win.rewind(at)
    if gzipped:
        try:
            scan_member(win, at, "")
        except MultiRecordMember:
            return False
        except DAMAGE_ERRORS:
            return False
        return True
    try:
        head = _parse_head(win.get(at, 2 * _HEAD_MAX), False)
    except ValueError:
        return False
    end = at + head.end
    if end > size:
        return False
    fh.seek(end)
    after = fh.read(64).lstrip(b"\r\n")
    return not after or after.startswith(b"WARC/1.")


def sha256_file(path: Path) -> str:
    """Bare hex, the snapshot manifest's format, of drarena.digests.file_sha256."""
    return file_sha256(path).removeprefix("sha256:")


# --- HTTP payloads -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HttpMessage:
    """The HTTP part of a response/revisit block: status, headers and the entity as stored."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    entity: bytes

    def header(self, name: str, default: str = "") -> str:
        return header_value(self.headers, name, default)


def parse_http_response(block: bytes) -> HttpMessage:
    """Split a stored HTTP response into status line, headers and entity."""
    end = block.find(b"\r\n\r\n")
    if end < 0:
        head, entity = block, b""
    else:
        head, entity = block[: end + 2], block[end + 4 :]
    eol = head.find(b"\r\n")
    status_line = (head if eol < 0 else head[:eol]).decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"bad HTTP status line {status_line[:60]!r}")
    headers = _parse_headers(head[eol + 2 :]) if eol >= 0 else ()
    return HttpMessage(int(parts[1]), parts[2] if len(parts) > 2 else "", headers, entity)


def dechunk(data: bytes) -> bytes:
    """Undo chunked transfer coding; on malformed input return the data unchanged."""
    out: list[bytes] = []
    pos = 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return data
        try:
            size = int(data[pos:eol].split(b";", 1)[0].strip(), 16)
        except ValueError:
            return data
        if size == 0:
            return b"".join(out)
        out.append(data[eol + 2 : eol + 2 + size])
        pos = eol + 2 + size + 2


MAX_DECODED_BYTES = 16 * 1024 * 1024
"""Default cap on a body's size after its content coding (gzip, deflate, br) is undone, where
no spec gives one: a few KB of compressed zeros expand to GBs, so decoding stops here and the
response is marked truncated (see `decode_body`)."""
MAX_BODY_BYTES = 64 << 20
"""The most a spec's `max_bytes` may be: the body cap of one response, which is also where
decoding a compressed body stops (the fetch and every later reader of the snapshot): unbounded,
a spec (or a received snapshot's manifest) could lift the decoder's cap to anything. 64 MiB is
4x MAX_DECODED_BYTES and 13x a crawl spec's default."""
_DECODE_STEP = 1 << 20  # decoded bytes produced per call, so no call overshoots the cap much
MAX_BODY_MEMBERS = 1000
"""Cap on the gzip members of one body (RFC 1952 allows several, servers send one): each
member costs an inflater whatever its size, so a body of 800,000 empty 20-byte members is
work without content; decoding stops after this many (then truncated)."""
_NOT_ZERO = re.compile(rb"[^\0]")
_BROTLI_FEED = 16  # compressed bytes per call for a brotli without an output limit


@dataclass(frozen=True, slots=True)
class DecodedBody:
    """A body with its codings removed; `truncated` when decoding stopped at the cap."""

    body: bytes
    truncated: bool = False


class _Capped:
    """Decoded pieces up to `limit` bytes; `full` once one more byte arrived (the cap hit)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.parts: list[bytes] = []
        self.size = 0

    @property
    def room(self) -> int:
        """How much to ask a decoder for: one byte past the cap at most, so hitting the cap
        is seen, and never 0 (zlib reads max_length 0 as "no limit")."""
        return max(1, min(self.limit - self.size + 1, _DECODE_STEP))

    def add(self, piece: bytes) -> bool:
        """Keep `piece` (cut at the cap); True once the cap is passed."""
        self.size += len(piece)
        if self.size > self.limit:
            self.parts.append(piece[: len(piece) - (self.size - self.limit)])
            return True
        self.parts.append(piece)
        return False

    def result(self, truncated: bool) -> DecodedBody:
        return DecodedBody(b"".join(self.parts), truncated)


def _inflate_capped(data: bytes, wbits: int, limit: int) -> DecodedBody:
    """Inflate a gzip (wbits 31: every member, as gzip.decompress does), zlib (15) or raw
    deflate (-15) stream, stopping at `limit` decoded bytes or past MAX_BODY_MEMBERS gzip
    members (then truncated); the zlib error, or EOFError for a stream that ends early, as
    the one-shot functions raise them.

    The work is bounded by the input: the body is fed through a memoryview in pieces that
    grow from _FEED_FIRST bytes (feed_sizes), so zlib's copies of what follows a member's
    end, or of input left over at the output cap, stay within a piece; zero padding between
    members is skipped by a search, not copied. Before, every gzip member copied the whole
    rest of the body (unused_data): 16 MiB of empty members took minutes."""
    out = _Capped(limit)
    view = memoryview(data)
    pos = members = 0
    while True:  # one deflate stream (a gzip member) at a time
        members += 1
        if members > MAX_BODY_MEMBERS:
            return out.result(True)
        inflater = _zlib.decompressobj(wbits=wbits)
        feed = feed_sizes()
        while not inflater.eof:
            if pos >= len(view):  # all input read, output below the cap: cut short
                raise EOFError("compressed stream ended before its end marker")
            piece = view[pos : pos + next(feed)]
            pos += len(piece)
            room = out.room
            got = inflater.decompress(piece, room)
            while True:
                if out.add(got):
                    return out.result(True)
                tail = inflater.unconsumed_tail
                if inflater.eof or (not tail and len(got) < room):
                    break
                room = out.room  # the output cap cut this call short: the rest of the piece
                got = inflater.decompress(tail, room)
        pos -= len(inflater.unused_data)  # (at most a piece: what follows the member's end)
        if wbits < 16:  # zlib or raw deflate: one stream; what follows is ignored
            return out.result(False)
        found = _NOT_ZERO.search(data, pos)
        if found is None:  # nothing after the member but zero padding
            return out.result(False)
        pos = found.start()
        if data[pos : pos + 2] != b"\x1f\x8b":
            raise zlib.error("trailing data after the gzip stream is not a gzip member")


def _unbrotli(body: bytes, limit: int) -> DecodedBody | None:
    """Brotli-decode `body` up to `limit` bytes; None when brotli is not installed or the
    stream is damaged or cut short (the body is then kept as stored)."""
    try:
        import brotli  # only for brotli-encoded captures
    except ImportError:
        return None
    out = _Capped(limit)
    decoder = brotli.Decompressor()
    try:
        try:  # brotli >= 1.2: output bounded per call; the rest of the input waits inside
            piece = decoder.process(body, output_buffer_limit=out.room)
        except TypeError:
            return _unbrotli_fed(decoder, body, out)
        while True:
            if out.add(piece):
                return out.result(True)
            if decoder.is_finished():
                return out.result(False)
            if decoder.can_accept_more_data():  # everything given, nothing more to show
                return None
            piece = decoder.process(b"", output_buffer_limit=out.room)
    except brotli.error:
        return None


def _unbrotli_fed(decoder: Any, body: bytes, out: _Capped) -> DecodedBody | None:
    """Older brotli has no output limit: feed a few bytes at a time (each expands by a few
    MB at most) and stop at the cap."""
    for at in range(0, len(body), _BROTLI_FEED):
        if out.add(decoder.process(body[at : at + _BROTLI_FEED])):
            return out.result(True)
    return out.result(False) if decoder.is_finished() else None


def decode_body(message: HttpMessage, limit: int = MAX_DECODED_BYTES) -> DecodedBody:
    """The body as a client sees it: transfer and content codings removed when possible,
    decoding streamed and stopped at `limit` bytes (then `truncated`). A coding that cannot
    be undone (damaged, cut short, unknown) leaves the body as stored, as before."""
    body = message.entity
    if "chunked" in message.header("Transfer-Encoding").lower():
        body = dechunk(body)
    coding = message.header("Content-Encoding").lower().strip()
    try:
        if coding in ("gzip", "x-gzip"):
            return _inflate_capped(body, 31, limit)
        if coding == "deflate":
            try:
                return _inflate_capped(body, 15, limit)
            except _CUT_ERRORS:  # some servers send raw deflate
                return _inflate_capped(body, -15, limit)
        if coding == "br":
            decoded = _unbrotli(body, limit)
            return decoded if decoded is not None else DecodedBody(body)
    except _UNDECODABLE:
        return DecodedBody(body)
    return DecodedBody(body)
