"""Reading WARC files one gzip member at a time, so corruption costs only the damaged record.

Why not warcio's ArchiveIterator here: it stops at the first damaged gzip member and takes
every record after it along. This reader decodes each member on its own from a memory map,
resynchronizes on the next gzip header after damage, and counts what it had to skip. Writing
stays with warcio (see writer.py).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import mmap
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from drarena.digests import file_sha256

GZIP_MAGIC = b"\x1f\x8b\x08"
_CHUNK = 1 << 16


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


def _parse_headers(head: bytes) -> tuple[tuple[str, str], ...]:
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
        headers = _parse_headers(data[first_eol + 2:head_end + 2])
        lengths = [v for k, v in headers if k.lower() == "content-length"]
        if not lengths or not lengths[0].isdigit():
            raise ValueError("WARC record without a valid Content-Length")
        start = head_end + 4
        end = start + int(lengths[0])
        if end > len(data):
            raise ValueError("WARC record block shorter than its Content-Length")
        records.append(RawRecord(warc_file, offset, length, headers, data[start:end]))
        pos = end
        while data.startswith(b"\r\n", pos):
            pos += 2
    return records


def _inflate_member(view: memoryview, start: int) -> tuple[bytes, int]:
    """Decompress the gzip member at `start`; return (data, compressed length)."""
    inflater = zlib.decompressobj(wbits=31)
    parts: list[bytes] = []
    pos = start
    end = len(view)
    while not inflater.eof:
        if pos >= end:
            raise zlib.error("truncated gzip member")
        chunk = view[pos:pos + _CHUNK]
        parts.append(inflater.decompress(chunk))
        pos += len(chunk)
    used = pos - start - len(inflater.unused_data)
    return b"".join(parts), used


def _salvage_is_record(view: memoryview, start: int) -> bool:
    """Whether damaged bytes at `start` began a WARC record (to count it as skipped)."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        head = inflater.decompress(view[start:start + 512], 16)
    except zlib.error:
        return False
    return head.startswith(b"WARC/1.")


def read_member(mm: mmap.mmap | bytes, offset: int, warc_file: str) -> list[RawRecord]:
    """The record(s) of the single member at `offset`; ValueError/zlib.error if damaged."""
    view = memoryview(mm)
    try:
        data, used = _inflate_member(view, offset)
        return parse_records(data, warc_file, offset, used)
    finally:
        view.release()


def iter_file(path: Path) -> Iterator[RawRecord | Damage]:
    """Every record of a gzip-per-record WARC file, with a Damage item for each bad stretch."""
    name = path.name
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            yield from _iter_mapped(mm, size, name)


def _iter_mapped(mm: mmap.mmap, size: int, name: str) -> Iterator[RawRecord | Damage]:
    view = memoryview(mm)
    pos = 0
    try:
        while pos < size:
            try:
                data, used = _inflate_member(view, pos)
                records = parse_records(data, name, pos, used)
            except (zlib.error, ValueError) as exc:
                lost = 1 if _salvage_is_record(view, pos) else 0
                nxt = mm.find(GZIP_MAGIC, pos + 1)
                nxt = size if nxt < 0 else nxt
                # Later false starts inside the same damaged stretch are not records.
                while nxt < size:
                    try:
                        _inflate_member(view, nxt)
                        break
                    except zlib.error:
                        lost += 1 if _salvage_is_record(view, nxt) else 0
                        found = mm.find(GZIP_MAGIC, nxt + 1)
                        nxt = size if found < 0 else found
                yield Damage(name, pos, max(lost, 1), str(exc) or type(exc).__name__)
                pos = nxt
                continue
            yield from records
            pos += used
    finally:
        view.release()


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
        head, entity = block[:end + 2], block[end + 4:]
    eol = head.find(b"\r\n")
    status_line = (head if eol < 0 else head[:eol]).decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"bad HTTP status line {status_line[:60]!r}")
    headers = _parse_headers(head[eol + 2:]) if eol >= 0 else ()
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
        out.append(data[eol + 2:eol + 2 + size])
        pos = eol + 2 + size + 2


def decode_entity(message: HttpMessage) -> bytes:
    """The body as a client sees it: transfer and content codings removed when possible."""
    body = message.entity
    if "chunked" in message.header("Transfer-Encoding").lower():
        body = dechunk(body)
    coding = message.header("Content-Encoding").lower().strip()
    try:
        if coding in ("gzip", "x-gzip"):
            return gzip.decompress(body)
        if coding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
        if coding == "br":
            return _unbrotli(body)
    except (OSError, zlib.error, EOFError, ValueError):
        return body
    return body


def _unbrotli(body: bytes) -> bytes:
    try:
        import brotli  # only for brotli-encoded captures
    except ImportError:
        return body
    try:
        return bytes(brotli.decompress(body))
    except brotli.error:
        return body
