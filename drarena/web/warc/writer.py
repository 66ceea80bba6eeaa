"""Writing a snapshot: WARC/1.1 through warcio (gzip per record), the CDXJ index, the manifest.

Why a single writer: records are appended in the crawler's commit order (deterministic), the
CDXJ offsets come from the very bytes written, and identical payloads become revisit records
that point at the first capture, so a snapshot stores each distinct body once.
"""

from __future__ import annotations

import hashlib
import json
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from drarena.errors import DrarenaError
from drarena.files import write_atomic
from drarena.web.warc.manifest import (
    CDXJ_NAME,
    Counts,
    FileDigest,
    Manifest,
    fingerprint,
    write_manifest,
)
from drarena.web.warc.urls import safe_file_name, surt
from drarena.web.warc.warcfile import sha1_b32, sha256_file

Clock = Callable[[], datetime]
IdFactory = Callable[[], str]


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def warc_date(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cdx_timestamp(date: str) -> str:
    return "".join(ch for ch in date if ch.isdigit())[:14]


@dataclass(frozen=True, slots=True)
class Exchange:
    """One HTTP request and its response as they went over the wire (entity as received)."""

    url: str
    request_headers: tuple[tuple[str, str], ...]
    status: int
    reason: str
    response_headers: tuple[tuple[str, str], ...]
    entity: bytes
    http_version: str = "1.1"
    ip_address: str = ""
    truncated: bool = False
    method: str = "GET"


def storable_field(text: str) -> str:
    """A response header's name or value, or a reason phrase, as the capture's WARC holds it
    and a replay reads it back: printable ASCII kept, blanks around it dropped, any other
    character percent-encoded (the byte it was on the wire: the fetch decodes latin-1, and
    aiohttp a reason phrase's non-UTF-8 bytes to lone surrogates). warcio rewrote a non-ASCII
    value in its own way (so the replay differed from the live answer) and raised on a
    non-ASCII reason phrase or a lone surrogate (aiohttp's reading of a non-UTF-8 byte): the
    crawl, or live mode's fetch, stopped with UnicodeEncodeError. Applied by write_exchange
    to every response; live mode applies it first so that its answer is what replays."""
    text = text.strip(" \t")
    if text.isascii() and text.isprintable():
        return text
    out = []
    for char in text:
        if " " <= char <= "~":
            out.append(char)
            continue
        try:
            raw = char.encode("latin-1" if char <= "\xff" else "utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that stood for no byte
            raw = char.encode("utf-8", "surrogatepass")
        out.append("".join(f"%{byte:02X}" for byte in raw))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class FetchFailure:
    """A fetch that produced no HTTP response (timeout, refused, policy), kept as metadata."""

    url: str
    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class StoredPayload:
    """Where the first capture of a payload digest lives (target of later revisits)."""

    url: str
    date: str
    record_id: str


GZIP_LEVEL = 6  # warcio uses 9: ~40% more CPU per record for ~1% smaller files


@dataclass
class _OpenFile:
    """The WARC file being written. warcio serializes each record into `buffer`; it is then
    compressed as its own gzip member, so a damaged member costs one record."""

    name: str
    handle: BinaryIO
    writer: WARCWriter
    buffer: BytesIO
    records: int = 0
    digest: Any = field(default_factory=hashlib.sha256)  # of the bytes written so far


@dataclass
class SnapshotWriter:
    """Appends records to a new WARC file in `folder`; `close()` writes CDXJ and manifest."""

    folder: Path
    name: str
    spec: dict[str, object]
    software: dict[str, str]
    clock: Clock = utc_now
    new_id: IdFactory = new_record_id
    prior_files: tuple[FileDigest, ...] = ()
    prior_cdxj: tuple[str, ...] = ()
    payloads: dict[str, StoredPayload] = field(default_factory=dict)
    started_at: str = ""
    _file: _OpenFile | None = None
    _cdxj: list[str] = field(default_factory=list)

    def open(self) -> None:
        safe_file_name(self.name, "snapshot name")
        self.folder.mkdir(parents=True, exist_ok=True)
        index = len(self.prior_files)
        file_name = safe_file_name(f"{self.name}-{index:05d}.warc.gz")
        path = self.folder / file_name
        if path.exists():
            raise DrarenaError(
                f"{path}: already exists and is not in the manifest; "
                "remove it or start a fresh snapshot"
            )
        self.started_at = self.started_at or warc_date(self.clock())
        handle = path.open("xb")
        buffer = BytesIO()
        self._file = _OpenFile(
            file_name, handle, WARCWriter(buffer, gzip=False, warc_version="1.1"), buffer
        )
        self._cdxj = list(self.prior_cdxj)
        info = {
            "software": " ".join(f"{k}/{v}" for k, v in sorted(self.software.items())),
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "isPartOf": self.name,
            "robots": "obey" if self.spec.get("robots", True) else "ignore",
            "http-header-user-agent": str(self.spec.get("user_agent", "")),
            "drarena-spec": json.dumps(self.spec, sort_keys=True),
        }
        payload = "".join(f"{k}: {v}\r\n" for k, v in info.items() if v).encode()
        record = self._file.writer.create_warc_record(
            "",
            "warcinfo",
            payload=BytesIO(payload),
            length=len(payload),
            warc_content_type="application/warc-fields",
            warc_headers_dict=self._warc_headers({"WARC-Filename": file_name}),
        )
        self._write(record)

    # -- records ------------------------------------------------------------------------------

    def _warc_headers(self, extra: dict[str, str], date: str | None = None) -> dict[str, str]:
        headers = {"WARC-Record-ID": self.new_id(), "WARC-Date": date or warc_date(self.clock())}
        headers.update(extra)
        return headers

    def _write(self, record: object) -> tuple[int, int]:
        """Append one record as one gzip member; return (offset, compressed length)."""
        assert self._file is not None, "SnapshotWriter.open() first"
        buffer = self._file.buffer
        buffer.seek(0)
        buffer.truncate()
        self._file.writer.write_record(record)
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        member = packer.compress(buffer.getbuffer()) + packer.flush()
        start = self._file.handle.tell()
        self._file.handle.write(member)
        self._file.digest.update(member)
        self._file.records += 1
        return start, len(member)

    def write_exchange(self, exchange: Exchange) -> tuple[str, bool]:
        """Write request + response (or revisit); return (payload digest, is revisit)."""
        assert self._file is not None, "SnapshotWriter.open() first"
        exchange = replace(
            exchange,
            reason=storable_field(exchange.reason),
            response_headers=tuple(
                (storable_field(k), storable_field(v)) for k, v in exchange.response_headers
            ),
        )
        writer = self._file.writer
        date = warc_date(self.clock())
        response_id = self.new_id()
        ip = {"WARC-IP-Address": exchange.ip_address} if exchange.ip_address else {}
        parts = urlsplit(exchange.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request = writer.create_warc_record(
            exchange.url,
            "request",
            http_headers=StatusAndHeaders(
                f"{exchange.method} {target} HTTP/{exchange.http_version}",
                list(exchange.request_headers),
                is_http_request=True,
            ),
            warc_headers_dict=self._warc_headers({"WARC-Concurrent-To": response_id, **ip}, date),
        )
        http_headers = StatusAndHeaders(
            f"{exchange.status} {exchange.reason}".strip(),
            list(exchange.response_headers),
            protocol=f"HTTP/{exchange.http_version}",
        )
        digest = sha1_b32(exchange.entity)
        extra = {"WARC-Record-ID": response_id, "WARC-Date": date, **ip}
        if exchange.truncated:
            extra["WARC-Truncated"] = "length"
        first = self.payloads.get(digest) if exchange.entity else None
        if first is not None:
            extra["WARC-Refers-To"] = first.record_id
            response = writer.create_revisit_record(
                exchange.url,
                digest,
                first.url,
                first.date,
                http_headers=http_headers,
                warc_headers_dict=extra,
            )
            mime = "warc/revisit"
        else:
            # The digest is computed once here; warcio then skips its own payload hash.
            response = writer.create_warc_record(
                exchange.url,
                "response",
                payload=BytesIO(exchange.entity),
                length=len(exchange.entity),
                http_headers=http_headers,
                warc_headers_dict={**extra, "WARC-Payload-Digest": digest},
            )
            mime = _media_type(exchange.response_headers)
            if exchange.entity:
                self.payloads[digest] = StoredPayload(exchange.url, date, response_id)
        offset, length = self._write(response)
        self._write(request)
        self._cdxj.append(
            _cdxj_line(
                exchange.url,
                date,
                {
                    "url": exchange.url,
                    "mime": mime,
                    "status": str(exchange.status),
                    "digest": digest,
                    "length": str(length),
                    "offset": str(offset),
                    "filename": self._file.name,
                },
            )
        )
        return digest, first is not None

    def write_failure(self, failure: FetchFailure) -> None:
        """A fetch without a response, as a `metadata` record the reader and resume understand."""
        assert self._file is not None, "SnapshotWriter.open() first"
        fields = (
            f"drarena-fetch-error: {failure.kind}\r\n"
            f"drarena-detail: {_one_line(failure.detail)}\r\n"
        ).encode()
        record = self._file.writer.create_warc_record(
            failure.url,
            "metadata",
            payload=BytesIO(fields),
            length=len(fields),
            warc_content_type="application/warc-fields",
            warc_headers_dict=self._warc_headers({}),
        )
        self._write(record)

    # -- finishing ---------------------------------------------------------------------------

    def checkpoint(self, counts: Counts) -> Manifest:
        """CDXJ + an incomplete manifest listing the WARC file as written so far (size and
        digest of these bytes): a SIGKILL, which runs no cleanup, leaves a snapshot that
        `--resume` cuts back to this point and continues (see crawl.Crawler). The CDXJ is
        written first, so it never lacks a line for a record the manifest covers."""
        assert self._file is not None, "SnapshotWriter.open() first"
        self._file.handle.flush()
        current = FileDigest(
            name=self._file.name,
            sha256=self._file.digest.hexdigest(),
            size=self._file.handle.tell(),
            records=self._file.records,
        )
        return self._write_index((*self.prior_files, current), False, counts, self.started_at)

    def close(self, *, complete: bool, counts: Counts) -> Manifest:
        """Close the WARC file and write CDXJ + manifest (also after an interruption)."""
        assert self._file is not None, "SnapshotWriter.open() first"
        self._file.handle.flush()
        self._file.handle.close()
        path = self.folder / self._file.name
        files = (
            *self.prior_files,
            FileDigest(
                name=self._file.name,
                sha256=sha256_file(path),
                size=path.stat().st_size,
                records=self._file.records,
            ),
        )
        manifest = self._write_index(files, complete, counts, warc_date(self.clock()))
        self._file = None
        return manifest

    def _write_index(
        self, files: tuple[FileDigest, ...], complete: bool, counts: Counts, ended_at: str
    ) -> Manifest:
        cdxj_path = self.folder / CDXJ_NAME
        lines = sorted(self._cdxj)
        write_atomic(cdxj_path, "".join(line + "\n" for line in lines))
        manifest = Manifest(
            name=self.name,
            complete=complete,
            spec=self.spec,
            software=self.software,
            started_at=self.started_at,
            ended_at=ended_at,
            warc_files=files,
            cdxj=FileDigest(
                name=CDXJ_NAME,
                sha256=sha256_file(cdxj_path),
                size=cdxj_path.stat().st_size,
                records=len(lines),
            ),
            counts=counts,
            fingerprint=fingerprint(files),
        )
        write_manifest(self.folder, manifest)
        return manifest


def _media_type(headers: tuple[tuple[str, str], ...]) -> str:
    for key, value in headers:
        if key.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower() or "unk"
    return "unk"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def _cdxj_line(url: str, date: str, fields: dict[str, str]) -> str:
    return f"{surt(url)} {cdx_timestamp(date)} {json.dumps(fields, ensure_ascii=False)}"
