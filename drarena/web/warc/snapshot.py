"""The frozen web as a library: open a snapshot, iterate its responses, look a URL up, verify.

Why this shape: every later stage (extract, trees, index, agents' `open` tool, replay) reads
pages through `Snapshot`, so canonicalization, revisit resolution and damage handling live in
one place. Lookups go through the sorted CDXJ (binary search), reading one gzip member.
"""

from __future__ import annotations

import bisect
import json
import mmap
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urljoin

from drarena.errors import DrarenaError
from drarena.files import open_input, read_bounded, read_lines_bounded
from drarena.web.warc.manifest import CDXJ_NAME, Manifest, fingerprint, load_manifest
from drarena.web.warc.urls import canonicalize_url, other_scheme, safe_file_name, surt
from drarena.web.warc.warcfile import (
    DAMAGE_ERRORS,
    MAX_BODY_BYTES,
    MAX_DECODED_BYTES,
    MAX_RECORD_BYTES,
    Damage,
    DecodedBody,
    HttpMessage,
    RawRecord,
    decode_body,
    header_value,
    iter_file,
    parse_http_response,
    read_member,
    sha1_b32,
    sha256_file,
)

_READ_ERRORS: tuple[type[Exception], ...] = (OSError, *DAMAGE_ERRORS)

__all__ = ["Snapshot", "StoredResponse", "VerifyReport", "canonicalize_url"]


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A captured HTTP response; `body` has transfer and content codings removed.
    `truncated`: the capture was cut (WARC-Truncated) or decoding stopped at the snapshot's
    cap (`Snapshot.decode_limit`)."""

    url: str
    canonical_url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    content_type: str
    record_id: str
    payload_digest: str
    warc_date: str
    warc_file: str
    offset: int
    truncated: bool = False
    revisit: bool = False

    def header(self, name: str, default: str = "") -> str:
        return header_value(self.headers, name, default)

    @property
    def location(self) -> str | None:
        """Absolute redirect target for 3xx responses with a Location header, else None
        (also for a Location that is not a URL, as extract_links treats a bad href)."""
        target = self.header("Location")
        if not (300 <= self.status < 400) or not target:
            return None
        try:
            return urljoin(self.url, target)
        except ValueError:
            return None

    @property
    def is_html(self) -> bool:
        return self.content_type in ("text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class FailedFetch:
    """A fetch recorded without a response (timeout, refused, robots, policy)."""

    url: str
    canonical_url: str
    kind: str
    detail: str
    warc_date: str
    warc_file: str = ""
    offset: int = 0


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Problems found by `Snapshot.verify()`; empty `problems` means the snapshot is intact."""

    path: Path
    files_checked: int
    records_checked: int
    problems: tuple[str, ...]
    complete: bool

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class _Entry:
    url: str
    mime: str
    status: int
    digest: str
    filename: str
    offset: int
    timestamp: str
    canonical: str


def _target(record: RawRecord) -> str:
    """WARC-Target-URI; WARC/1.0 writers such as wget wrap it in angle brackets."""
    return record.header("WARC-Target-URI").strip().removeprefix("<").removesuffix(">")


def _is_http(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


_RECORD_SLACK = 1 << 20  # room for WARC and HTTP headers around a body of max_bytes
CDXJ_SLACK = 64 << 20  # past the manifest's CDXJ size: a crawl cut between the two writes


def spec_max_bytes(spec: object) -> int | None:
    """The body cap the snapshot was fetched with: a crawl spec's `max_bytes`, or a live
    capture's `settings.max_bytes`; None for an import (no fetch, no cap)."""
    if not isinstance(spec, dict):
        return None
    for holder in (spec, spec.get("settings")):
        value = holder.get("max_bytes") if isinstance(holder, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return min(value, MAX_BODY_BYTES)  # a received manifest's spec: not past the cap
    return None


def _decode_error(exc: UnicodeDecodeError, offset: int) -> str:
    """str(exc) as decoding the whole file would word it: positions counted from the file's
    start, not from the line's (`offset`: where the line starts)."""
    start, end = offset + exc.start, offset + exc.end
    if exc.end - exc.start == 1:
        where = f"byte 0x{exc.object[exc.start]:02x} in position {start}"
    else:
        where = f"bytes in position {start}-{end - 1}"
    return f"'{exc.encoding}' codec can't decode {where}: {exc.reason}"


@dataclass
class Snapshot:
    """An opened snapshot folder (manifest.json + index.cdxj + WARC files)."""

    path: Path
    manifest: Manifest
    skipped: int = 0
    _keys: list[str] = field(default_factory=list)
    _lines: list[str] = field(default_factory=list)
    _indexed: bool = True  # _keys and _lines hold the CDXJ index (open(lookups=False): not yet)
    _maps: dict[str, mmap.mmap] = field(default_factory=dict)
    _digest_index: dict[str, tuple[str, int]] | None = None
    _bodies: OrderedDict[tuple[str, int], DecodedBody] = field(default_factory=OrderedDict)
    # Decoding stops at `decode_limit` bytes (the fetch's max_bytes, so a crawl's resume and a
    # live run's replay decode exactly as the fetch did); a record is read whole up to
    # `record_limit` decompressed bytes. Both bound memory against compression bombs.
    decode_limit: int = MAX_DECODED_BYTES
    record_limit: int = MAX_RECORD_BYTES

    @classmethod
    def open(cls, path: str | Path, *, lookups: bool = True) -> Snapshot:
        """The snapshot at `path`, its CDXJ index checked. `lookups` False: the index is
        checked a line at a time as it is read and not kept, for a reader that only iterates
        (`snapshot extract`): read whole and kept, the index cost ~800 bytes a capture at its
        peak (123 MB against 42 MB at 100,000 synthetic pages), memory such a reader would
        carry for nothing. A lookup then reads it in on first use."""
        folder = Path(path)
        if not folder.is_dir():
            raise DrarenaError(f"{folder}: no such snapshot folder")
        manifest = load_manifest(folder)
        snap = cls(folder, manifest)
        if lookups:
            text = snap._index_text()
            snap._check_warcs()
            snap._keys, snap._lines = snap._split_index(text)
        else:
            snap._scan_index()
        snap._indexed = lookups
        fetched_cap = spec_max_bytes(manifest.spec)
        if fetched_cap is not None:
            snap.decode_limit = fetched_cap
            snap.record_limit = max(MAX_RECORD_BYTES, fetched_cap + _RECORD_SLACK)
        return snap

    def _index_limit(self) -> int:
        # read bounded by what the manifest says the index holds (+ slack: a crawl's index and
        # manifest are written one after the other): a link to /dev/zero, or a huge file in its
        # place, was read until a MemoryError at 7.6 GB
        return max(self.manifest.cdxj.size, 0) + CDXJ_SLACK

    def _too_large(self) -> str:
        return f"its manifest says {self.manifest.cdxj.size}: damaged, or not this snapshot's"

    def _index_text(self) -> str:
        cdxj = self.path / CDXJ_NAME
        raw = read_bounded(
            cdxj,
            self._index_limit(),
            self._too_large(),
            what="CDXJ index",
            missing=f"{cdxj}: CDXJ index is missing",
        )
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DrarenaError(f"{cdxj}: CDXJ index is not readable ({exc})") from None

    def _check_warcs(self) -> None:
        for item in self.manifest.warc_files:
            if not (self.path / item.name).is_file():
                raise DrarenaError(
                    f"{self.path / item.name}: WARC file listed in manifest is missing"
                )

    def _split_index(self, text: str) -> tuple[list[str], list[str]]:
        cdxj = self.path / CDXJ_NAME
        keys, lines = [], []
        for number, line in enumerate(text.splitlines(), 1):
            key, sep, _ = line.partition(" ")
            if not sep:
                raise DrarenaError(f"{cdxj}: line {number}: not a CDXJ line")
            keys.append(key)
            lines.append(line)
        if keys != sorted(keys):
            raise DrarenaError(f"{cdxj}: lines are not sorted by URL key")
        return keys, lines

    def _scan_index(self) -> None:
        """open(lookups=True)'s checks with its words and in its order (size, UTF-8, WARC
        files, then lines), on the index read a line at a time: each line's bytes (to its
        b"\\n") split as str.splitlines() splits the whole text, so line numbers agree; only
        the previous key is kept."""
        cdxj = self.path / CDXJ_NAME
        offset, number, prev = 0, 0, ""
        decode_error = bad_line = ""
        unsorted = False
        for raw in read_lines_bounded(
            cdxj,
            self._index_limit(),
            self._too_large(),
            what="CDXJ index",
            missing=f"{cdxj}: CDXJ index is missing",
        ):
            start, offset = offset, offset + len(raw)
            if decode_error or bad_line:  # past the first error: only the size is checked
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                decode_error = _decode_error(exc, start)
                continue
            for line in text.splitlines():
                number += 1
                key, sep, _ = line.partition(" ")
                if not sep:
                    bad_line = f"{cdxj}: line {number}: not a CDXJ line"
                    break
                unsorted = unsorted or key < prev
                prev = key
        if decode_error:
            raise DrarenaError(f"{cdxj}: CDXJ index is not readable ({decode_error})")
        self._check_warcs()
        if bad_line:
            raise DrarenaError(bad_line)
        if unsorted:
            raise DrarenaError(f"{cdxj}: lines are not sorted by URL key")

    def _index(self) -> None:
        """The CDXJ index in memory (opened with lookups=False: read now, on first use)."""
        if not self._indexed:
            self._keys, self._lines = self._split_index(self._index_text())
            self._indexed = True

    # -- identity --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def fingerprint(self) -> str:
        return self.manifest.fingerprint

    def warc_paths(self) -> list[Path]:
        return [
            self.path / safe_file_name(f.name, "WARC file name") for f in self.manifest.warc_files
        ]

    def close(self) -> None:
        for mm in self._maps.values():
            mm.close()
        self._maps.clear()

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __len__(self) -> int:
        """Number of captures (responses and revisits) in the CDXJ index."""
        self._index()
        return len(self._lines)

    # -- iteration ---------------------------------------------------------------------------

    def iter_records(self) -> Iterator[RawRecord]:
        """Every WARC record in WARC order; damaged stretches are skipped and counted."""
        self.skipped = 0
        for path in self.warc_paths():
            for item in iter_file(path, self.record_limit):
                if isinstance(item, Damage):
                    self.skipped += item.records
                    continue
                yield item

    def iter_responses(self) -> Iterator[StoredResponse]:
        """Every response, revisits resolved to their payload, in WARC order.

        A revisit's payload is the first response before it with its payload digest. Only
        the digests that the index lists for revisits are remembered as the records pass:
        remembering every response's cost ~420 bytes a capture (42 MB at 100,000), the one
        memory of a pass that grew with the snapshot. A revisit that the index does not
        account for (an index out of step with the WARC files) switches to remembering
        every payload, the records before it read once more: the same responses either way."""
        wanted = self._revisited_digests()
        bodies: dict[str, tuple[str, int]] = {}
        for record in self.iter_records():
            kind = record.type
            if kind not in ("response", "revisit", "resource"):
                continue
            if not _is_http(_target(record)):  # javascript:, file:, dns:, ...: what import
                continue  # leaves out of the index (scope.classify: non-http) is no page
            try:
                if kind != "revisit":
                    stored = self._response(record, None)
                    if wanted is None or stored.payload_digest in wanted:
                        bodies.setdefault(stored.payload_digest, (record.warc_file, record.offset))
                else:
                    digest = record.header("WARC-Payload-Digest")
                    if wanted is not None and digest and digest not in wanted:
                        wanted = None
                        bodies = self._payloads_before(record.warc_file, record.offset)
                    where = bodies.get(digest)
                    if where is None:  # its original was lost to damage
                        self.skipped += 1
                        continue
                    stored = self._response(record, self._body_at(*where))
            except ValueError:
                self.skipped += 1
                continue
            yield stored

    def _revisited_digests(self) -> set[str] | None:
        """Payload digests of the revisits the CDXJ index lists, read a line at a time
        (None when it cannot be read: then every payload is remembered)."""
        cdxj = self.path / CDXJ_NAME
        found: set[str] = set()
        try:
            for raw in read_lines_bounded(cdxj, self._index_limit(), what="CDXJ index"):
                if b'"warc/revisit"' not in raw:
                    continue
                try:
                    data = json.loads(raw.decode("utf-8").split(" ", 2)[2])
                except (ValueError, IndexError, RecursionError):
                    continue  # a damaged line: the switch in iter_responses covers it
                if isinstance(data, dict) and data.get("mime") == "warc/revisit":
                    found.add(str(data.get("digest", "")))
        except DrarenaError:
            return None
        return found

    def _payloads_before(self, warc_file: str, offset: int) -> dict[str, tuple[str, int]]:
        """Where each payload digest first occurs among the responses before the record at
        (warc_file, offset), as iter_responses would have remembered them all."""
        bodies: dict[str, tuple[str, int]] = {}
        for path in self.warc_paths():
            for item in iter_file(path, self.record_limit):
                if isinstance(item, Damage):
                    continue
                if item.warc_file == warc_file and item.offset >= offset:
                    return bodies
                if item.type not in ("response", "resource") or not _is_http(_target(item)):
                    continue
                try:
                    stored = self._response(item, None)
                except ValueError:
                    continue
                bodies.setdefault(stored.payload_digest, (item.warc_file, item.offset))
        return bodies

    def iter_failures(self) -> Iterator[FailedFetch]:
        """Fetches recorded without a response (drarena metadata records)."""
        for record in self.iter_records():
            if record.type != "metadata":
                continue
            fields = dict(
                line.split(": ", 1)
                for line in record.block.decode("utf-8", "replace").split("\r\n")
                if ": " in line
            )
            if "drarena-fetch-error" not in fields:
                continue
            url = _target(record)
            try:
                canonical = canonicalize_url(url)
            except ValueError:
                # the crawler records a redirect to a malformed URL (bad_url) under the URL
                # as written; its raw form is the key a resume takes it back by
                canonical = url
            yield FailedFetch(
                url,
                canonical,
                fields["drarena-fetch-error"],
                fields.get("drarena-detail", ""),
                record.header("WARC-Date"),
                record.warc_file,
                record.offset,
            )

    # -- lookup -------------------------------------------------------------------------------

    def _entries(self, canonical: str) -> list[_Entry]:
        key = surt(canonical)
        self._index()
        lo = bisect.bisect_left(self._keys, key)
        hi = bisect.bisect_right(self._keys, key, lo)
        return [e for e in map(self._entry, range(lo, hi)) if e.canonical == canonical]

    def _entry(self, index: int) -> _Entry:
        """CDXJ line `index`; DrarenaError naming the line when it is malformed (an index
        edited or made elsewhere must end in one line, not a traceback)."""
        try:
            _, timestamp, blob = self._lines[index].split(" ", 2)
            data = json.loads(blob)
            url, filename, offset = data["url"], data["filename"], int(data["offset"])
            if not isinstance(url, str) or not isinstance(filename, str) or offset < 0:
                raise ValueError("url and filename must be strings, offset a count")
            return _Entry(
                url,
                str(data.get("mime", "")),
                int(data.get("status", 0)),
                str(data.get("digest", "")),
                filename,
                offset,
                timestamp,
                canonicalize_url(url),
            )
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            raise DrarenaError(
                f"{self.path / CDXJ_NAME}: line {index + 1}: not a valid CDXJ "
                f"line ({type(exc).__name__}: {str(exc)[:100]})"
            ) from None

    def lookup(self, url: str) -> StoredResponse | None:
        """The latest capture of `url` (canonicalized), or None if it was not captured."""
        try:
            canonical = canonicalize_url(url)
        except ValueError:
            return None
        entries = self._entries(canonical)
        if not entries:
            return None
        entry = max(entries, key=lambda e: (e.timestamp, e.filename, e.offset))
        record = self._record_at(entry.filename, entry.offset)
        try:
            if record.type == "revisit":
                body = self._resolve_digest(entry.digest)
                if body is None:
                    raise DrarenaError(
                        f"{self.path}: the payload {entry.digest} of the revisit "
                        f"of {entry.url} is not in the snapshot"
                    )
                return self._response(record, body)
            return self._response(record, None)
        except ValueError as exc:  # the index points at a record that is not a response
            raise DrarenaError(
                f"{self.path / entry.filename}: the record at offset "
                f"{entry.offset} for {entry.url} is not an HTTP response "
                f"({str(exc)[:100]})"
            ) from None

    def lookup_any_scheme(self, url: str) -> StoredResponse | None:
        """`lookup`, falling back to the other scheme (`https://` for a page captured over
        `http://`, or the reverse), as archive replay does: what the proxy serves, and what
        the citation check counts as the same page."""
        stored = self.lookup(url)
        if stored is None and (other := other_scheme(url)) is not None:
            stored = self.lookup(other)
        return stored

    def __contains__(self, url: object) -> bool:
        if not isinstance(url, str):
            return False
        try:
            return bool(self._entries(canonicalize_url(url)))
        except ValueError:
            return False

    def urls(self) -> list[str]:
        """Distinct captured URLs (canonical), sorted."""
        self._index()
        return sorted({self._entry(index).canonical for index in range(len(self._lines))})

    # -- verify -------------------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Recompute every file digest, the fingerprint and each record's block digest."""
        problems: list[str] = []
        records = 0
        for item in self.manifest.warc_files:
            path = self.path / item.name
            actual = sha256_file(path)
            if actual != item.sha256:
                problems.append(
                    f"{item.name}: sha256 mismatch (manifest {item.sha256[:12]}..., "
                    f"file {actual[:12]}...)"
                )
            for part in iter_file(path, self.record_limit):
                if isinstance(part, Damage):
                    problems.append(
                        f"{item.name}: {part.records} damaged record(s) at offset "
                        f"{part.offset}: {part.reason}"
                    )
                    continue
                records += 1
                expected = part.header("WARC-Block-Digest")
                if expected.startswith("sha1:") and sha1_b32(part.block) != expected:
                    problems.append(
                        f"{item.name}: block digest mismatch in record at offset {part.offset}"
                    )
        cdxj = self.path / CDXJ_NAME
        if sha256_file(cdxj) != self.manifest.cdxj.sha256:
            problems.append(f"{CDXJ_NAME}: sha256 mismatch with manifest")
        if fingerprint(self.manifest.warc_files) != self.manifest.fingerprint:
            problems.append("manifest.json: fingerprint does not match its file digests")
        return VerifyReport(
            self.path,
            len(self.manifest.warc_files) + 1,
            records,
            tuple(problems),
            self.manifest.complete,
        )

    # -- internals ----------------------------------------------------------------------------

    def _map(self, filename: str) -> mmap.mmap:
        mm = self._maps.get(filename)
        if mm is None:
            path = self.path / safe_file_name(filename, "WARC file name")
            with open_input(path, "WARC file") as fh:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            self._maps[filename] = mm
        return mm

    def _record_at(self, filename: str, offset: int) -> RawRecord:
        try:
            records = read_member(self._map(filename), offset, filename, self.record_limit)
        except _READ_ERRORS as exc:
            raise DrarenaError(
                f"{self.path / filename}: damaged record at offset {offset} ({exc})"
            ) from None
        return records[0]

    def _resolve_digest(self, digest: str) -> DecodedBody | None:
        if self._digest_index is None:
            self._index()
            index: dict[str, tuple[str, int]] = {}
            for number in range(len(self._lines)):
                entry = self._entry(number)
                if entry.mime != "warc/revisit" and entry.digest:
                    index.setdefault(entry.digest, (entry.filename, entry.offset))
            self._digest_index = index
        where = self._digest_index.get(digest)
        return self._body_at(*where) if where else None

    def _body_at(self, filename: str, offset: int) -> DecodedBody:
        """Payload of the response at (filename, offset); a few kept for repeated revisits."""
        cached = self._bodies.get((filename, offset))
        if cached is not None:
            return cached
        record = self._record_at(filename, offset)
        body = decode_body(parse_http_response(record.block), self.decode_limit)
        self._bodies[(filename, offset)] = body
        while len(self._bodies) > 64:
            self._bodies.popitem(last=False)
        return body

    def _response(self, record: RawRecord, revisit_body: DecodedBody | None) -> StoredResponse:
        """Build a StoredResponse; ValueError if the block is not an HTTP response. A
        `resource` record (an imported archive's payload without HTTP) reads as a 200."""
        if record.type == "resource":
            kind = record.header("Content-Type") or "application/octet-stream"
            message = HttpMessage(200, "OK", (("Content-Type", kind),), record.block)
        else:
            message = parse_http_response(record.block)
        is_revisit = record.type == "revisit"
        body = (
            revisit_body
            if is_revisit and revisit_body is not None
            else decode_body(message, self.decode_limit)
        )
        url = _target(record)
        return StoredResponse(
            url=url,
            canonical_url=canonicalize_url(url),
            status=message.status,
            headers=message.headers,
            body=body.body,
            content_type=_media_type(message.header("Content-Type")),
            record_id=record.header("WARC-Record-ID"),
            payload_digest=record.header("WARC-Payload-Digest") or sha1_b32(message.entity),
            warc_date=record.header("WARC-Date"),
            warc_file=record.warc_file,
            offset=record.offset,
            truncated=bool(record.header("WARC-Truncated")) or body.truncated,
            revisit=is_revisit,
        )
