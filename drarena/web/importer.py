"""`drarena snapshot import`: freeze archives made by other tools (wget, Heritrix, Browsertrix,
Webrecorder, Common Crawl) as a drarena snapshot, with the layout of a crawl.

Why this shape: a valid gzip-per-record (or uncompressed) WARC file is kept byte for byte (hard
link, else copy) and only indexed, so its digests, and the snapshot fingerprint, are the
source's. A file that cannot be addressed record by record (one gzip member for many records)
is rewritten one member per record; a file with damaged members is copied without them; with a
scope filter, the kept records' raw bytes are copied into new files (no recompression). Memory
stays flat: records stream through a sliding window (warcfile.Window), their blocks are never
held, and the CDXJ lines are staged in an on-disk SQLite table whose ORDER BY is an external
sort (UTF-8 byte order = Python's code point order, the order `Snapshot.open` checks).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import sqlite3
import sys
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.web.manifest import (
    CDXJ_NAME,
    MANIFEST_NAME,
    Counts,
    FileDigest,
    Manifest,
    fingerprint,
    load_manifest,
    write_manifest,
)
from drarena.web.scope import ImportScope
from drarena.web.urls import canonicalize_url, safe_file_name, surt
from drarena.web.warcfile import (
    DAMAGE_ERRORS,
    GZIP_MAGIC,
    Damage,
    MultiRecordMember,
    RecordHead,
    Window,
    iter_members,
    iter_plain,
    parse_http_response,
    scan_member,
    sha256_file,
)
from drarena.web.writer import GZIP_LEVEL, utc_now, warc_date

KEEP_MODES = ("auto", "link", "copy")
WARC_SUFFIXES = (".warc", ".warc.gz", ".wacz")
_PENDING_REQUESTS = 64  # requests waiting for their response's scope decision
_BATCH = 5000
_STREAM_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, *DAMAGE_ERRORS)


# --- inputs ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Source:
    """One WARC file to import. `label` is what the manifest records (the original path, or
    `package.wacz#archive/x.warc.gz`); `path` is where it is read (an extracted WACZ member
    sits in the build folder and is moved, not copied)."""

    path: Path
    label: str
    gzipped: bool
    extracted: bool = False
    declared_sha256: str = ""


def expand_inputs(inputs: Sequence[Path]) -> list[Path]:
    """Files as given, folders expanded to their WARC/WACZ files (sorted, recursive)."""
    out: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*")
                           if p.is_file() and p.name.lower().endswith(WARC_SUFFIXES))
            if not found:
                raise DrarenaError(f"{path}: no .warc, .warc.gz or .wacz file in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise DrarenaError(f"{path}: no such file or folder")
    return out


def sniff(path: Path) -> bool:
    """True for gzip, False for an uncompressed WARC; DrarenaError for anything else."""
    with path.open("rb") as fh:
        lead = fh.read(4096)
    if not lead:
        raise DrarenaError(f"{path}: empty file (no WARC records)")
    if lead.startswith(b"WARC/1."):
        return False
    if lead.startswith(b"PK\x03\x04"):
        raise DrarenaError(f"{path}: a zip file, but not named .wacz (rename it to import it)")
    if not lead.startswith(GZIP_MAGIC):
        raise DrarenaError(f"{path}: not a WARC file (starts with {lead[:16]!r})")
    try:
        head = zlib.decompressobj(wbits=31).decompress(lead, 16)
    except zlib.error:
        return True  # a damaged first member: the scan counts it and reads on
    if head and not head.startswith(b"WARC/1."[:len(head)]):
        raise DrarenaError(f"{path}: a gzip file, but not a WARC file (content starts with "
                           f"{head[:16]!r})")
    return True


# --- per-record logic (pure) -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Capture:
    """An indexable record: what its CDXJ line says."""

    url: str
    key: str
    timestamp: str
    mime: str
    status: int
    digest: str
    revisit: bool
    truncated: bool
    block_length: int


_CONTENT_TYPE = re.compile(rb"\r\ncontent-type:[ \t]*([^\r\n;]*)", re.IGNORECASE)
_STATUS_LINE = re.compile(rb"HTTP/\d(?:\.\d)? +(\d{3})(?: |\r|$)")
_NOT_DIGIT = re.compile(r"\D")


def classify(head: RecordHead) -> Capture | str:
    """The capture a record gives, or why it gives none (the `skipped` key)."""
    kind = head.type
    if kind in ("warcinfo", "metadata", "request"):
        return kind
    if kind not in ("response", "revisit", "resource"):
        return f"type:{kind or 'none'}"
    url = head.header("WARC-Target-URI").strip().removeprefix("<").removesuffix(">")
    scheme = url.split(":", 1)[0].lower()
    if scheme == "dns":
        return "dns"
    if scheme not in ("http", "https"):
        return "non-http"
    try:
        key = surt(url)
    except (ValueError, DrarenaError):
        return "broken"
    if kind == "resource":
        status = 200
        mime = _media_type(head.header("Content-Type"))
    else:
        # Only the status and the media type are needed: two regexes, not a header parse.
        line = _STATUS_LINE.match(head.http_head)
        if line is None:
            return "broken"
        status = int(line.group(1))
        found = _CONTENT_TYPE.search(head.http_head)
        mime = "warc/revisit" if kind == "revisit" else (
            found.group(1).decode("latin-1").strip().lower() or "unk" if found else "unk")
    digest = head.header("WARC-Payload-Digest") or head.entity_digest
    if not digest:
        return "revisit-unresolved"  # a revisit that names no payload cannot be resolved
    stamp = _NOT_DIGIT.sub("", head.header("WARC-Date"))[:14]
    return Capture(url, key, stamp, mime, status, digest, kind == "revisit",
                   bool(head.header("WARC-Truncated")), head.block_length)


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower() or "unk"


def cdxj_line(cap: Capture, filename: str, offset: int, length: int) -> str:
    """The line a drarena crawl writes for the same capture (writer.py's fields and order)."""
    fields = {"url": cap.url, "mime": cap.mime, "status": str(cap.status), "digest": cap.digest,
              "length": str(length), "offset": str(offset), "filename": filename}
    return f"{cap.key} {cap.timestamp} {json.dumps(fields, ensure_ascii=False)}"


@dataclass
class Tally:
    """What an import read, indexed and skipped (mutable while scanning, then frozen)."""

    records: int = 0
    responses: int = 0
    revisits: int = 0
    pages: int = 0
    redirects: int = 0
    http_errors: int = 0
    truncated: int = 0
    bytes: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)

    def add(self, cap: Capture) -> None:
        if cap.revisit:
            self.revisits += 1
        else:
            self.responses += 1
            self.bytes += cap.block_length
        self.statuses[str(cap.status)] += 1
        self.pages += cap.status < 300
        self.redirects += 300 <= cap.status < 400
        self.http_errors += cap.status >= 400
        self.truncated += cap.truncated

    def merge(self, other: Tally) -> None:
        for name in ("records", "responses", "revisits", "pages", "redirects", "http_errors",
                     "truncated", "bytes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.statuses.update(other.statuses)
        self.skipped.update(other.skipped)

    def freeze(self) -> Counts:
        return Counts(pages=self.pages, responses=self.responses + self.revisits,
                      revisits=self.revisits, redirects=self.redirects,
                      http_errors=self.http_errors, truncated=self.truncated, bytes=self.bytes,
                      statuses=dict(sorted(self.statuses.items())), records=self.records,
                      skipped=dict(sorted((k, v) for k, v in self.skipped.items() if v)))


# --- staging of CDXJ lines ---------------------------------------------------------------------

class Staging:
    """CDXJ lines in an on-disk SQLite table: flat memory, an external sort by ORDER BY, and
    the revisit/original join done by the database."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4000;"
            "PRAGMA temp_store=FILE;"
            "CREATE TABLE cdx(file INT, line TEXT, digest TEXT, revisit INT);"
            "CREATE TABLE dropped(file INT, digest TEXT, offset INT, length INT, cap TEXT);")
        self._rows: list[tuple[int, str, str, int]] = []
        self._dropped: list[tuple[int, str, int, int, str]] = []

    def add(self, file: int, line: str, digest: str, revisit: bool) -> None:
        self._rows.append((file, line, digest, int(revisit)))
        if len(self._rows) >= _BATCH:
            self.flush()

    def add_dropped(self, file: int, cap: Capture, offset: int, length: int) -> None:
        """An out-of-scope response: kept on disk in case a kept revisit needs it."""
        row = (cap.url, cap.timestamp, cap.mime, cap.status, cap.block_length)
        self._dropped.append((file, cap.digest, offset, length, json.dumps(row)))
        if len(self._dropped) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self.db.executemany("INSERT INTO cdx VALUES (?,?,?,?)", self._rows)
            self._rows.clear()
        if self._dropped:
            self.db.executemany("INSERT INTO dropped VALUES (?,?,?,?,?)", self._dropped)
            self._dropped.clear()

    def discard(self, file: int) -> None:
        self.flush()
        self.db.execute("DELETE FROM cdx WHERE file = ?", (file,))
        self.db.execute("DELETE FROM dropped WHERE file = ?", (file,))

    def absorb(self, path: Path) -> None:
        """Take over the rows of a worker's staging database (then delete it)."""
        self.flush()
        self.db.execute("ATTACH DATABASE ? AS part", (str(path),))
        self.db.execute("INSERT INTO cdx SELECT * FROM part.cdx")
        self.db.execute("INSERT INTO dropped SELECT * FROM part.dropped")
        self.db.commit()
        self.db.execute("DETACH DATABASE part")
        path.unlink()

    def _index(self) -> None:
        self.flush()
        self.db.execute("CREATE INDEX IF NOT EXISTS cdx_digest ON cdx(digest, revisit)")

    def missing_originals(self) -> Iterator[tuple[int, int, int, Capture]]:
        """For each payload digest of a kept revisit with no kept original: one dropped
        response carrying it (file, offset, length, capture)."""
        self._index()
        self.db.execute("CREATE INDEX IF NOT EXISTS dropped_digest ON dropped(digest)")
        query = ("SELECT d.file, d.offset, d.length, d.digest, d.cap FROM dropped d WHERE "
                 "d.rowid IN (SELECT MIN(rowid) FROM dropped WHERE digest IN (SELECT r.digest "
                 "FROM cdx r WHERE r.revisit = 1 AND NOT EXISTS (SELECT 1 FROM cdx c WHERE "
                 "c.digest = r.digest AND c.revisit = 0)) GROUP BY digest) ORDER BY d.rowid")
        for file, offset, length, digest, blob in self.db.execute(query).fetchall():
            url, ts, mime, status, size = json.loads(blob)
            yield file, offset, length, Capture(url, surt(url), ts, mime, status, digest,
                                                False, False, size)

    def unresolved(self) -> int:
        self._index()
        row = self.db.execute("SELECT COUNT(*) FROM cdx r WHERE r.revisit = 1 AND NOT EXISTS "
                              "(SELECT 1 FROM cdx c WHERE c.digest = r.digest AND "
                              "c.revisit = 0)").fetchone()
        return int(row[0])

    def write_sorted(self, path: Path) -> int:
        """Write the resolved lines, sorted, to `path`; return how many."""
        self._index()
        count = 0
        with path.open("w", encoding="utf-8") as out:
            for (line,) in self.db.execute(
                    "SELECT line FROM cdx r WHERE r.revisit = 0 OR EXISTS (SELECT 1 FROM cdx c "
                    "WHERE c.digest = r.digest AND c.revisit = 0) ORDER BY line"):
                out.write(line + "\n")
                count += 1
        return count

    def close(self) -> None:
        self.db.close()


# --- scanning one file -------------------------------------------------------------------------

@dataclass
class FileResult:
    """How one source was imported."""

    source: Source
    sha256: str
    size: int
    kept: str  # hardlink | copy | moved | filtered | rewritten | copied-without-damage
    outputs: list[FileDigest]
    damaged: int = 0
    damage: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"path": self.source.label, "sha256": self.sha256, "size": self.size,
                "kept": self.kept, "as": [f.name for f in self.outputs],
                "damaged_records": self.damaged, "damage": self.damage[:20]}


class _Rewrite(Exception):
    """The file has damage or multi-record members: import it again by copying records."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass
class _Progress:
    """The bar in the parent; in a worker process, a shared [bytes, records] counter that
    the parent reads into the bar."""

    bar: Any = None
    shared: Any = None
    records: int = 0
    _bytes: int = 0
    _sent: int = 0
    _shown: int = 0

    def advance(self, nbytes: int) -> None:
        if self.shared is not None:
            self._bytes += nbytes
            if self._bytes >= 1 << 22:
                self.flush()
        elif self.bar is not None:
            self.bar.update(nbytes)
            self.show(self.records)

    def show(self, records: int) -> None:
        if records - self._shown >= 2000:
            self.bar.set_postfix_str(f"{records} records", refresh=False)
            self._shown = records

    def flush(self) -> None:
        if self.shared is not None:
            with self.shared.get_lock():
                self.shared[0] += self._bytes
                self.shared[1] += self.records - self._sent
            self._bytes, self._sent = 0, self.records


class _Pairer:
    """Keeps a request only if its response is kept: they link by WARC-Concurrent-To (either
    way round) and sit close together, so a small window of pending requests is enough."""

    def __init__(self) -> None:
        self.pending: OrderedDict[str, tuple[RecordHead, bytes]] = OrderedDict()
        self.kept: OrderedDict[str, None] = OrderedDict()
        self.dropped = 0

    def request(self, head: RecordHead, data: bytes) -> bool:
        """True: write it now (its response is already kept); else it waits."""
        if any(v in self.kept for v in _concurrent(head)):
            return True
        self.pending[head.header("WARC-Record-ID")] = (head, data)
        if len(self.pending) > _PENDING_REQUESTS:
            self.pending.popitem(last=False)
            self.dropped += 1
        return False

    def response_kept(self, head: RecordHead) -> list[bytes]:
        rid = head.header("WARC-Record-ID")
        links = set(_concurrent(head))
        out = [key for key, (req, _) in self.pending.items()
               if key in links or rid in _concurrent(req)]
        self.kept[rid] = None
        if len(self.kept) > 4 * _PENDING_REQUESTS:
            self.kept.popitem(last=False)
        return [self.pending.pop(key)[1] for key in out]

    def finish(self) -> int:
        self.dropped += len(self.pending)
        self.pending.clear()
        return self.dropped


def _concurrent(head: RecordHead) -> list[str]:
    return [v for k, v in head.headers if k.lower() == "warc-concurrent-to"]


@dataclass
class _Job:
    """State of importing one file (in this process or a worker)."""

    build: Path
    scope: ImportScope
    keep: str
    staging: Staging
    names: dict[str, str]  # output file name per way of keeping (planned by the parent)
    tally: Tally = field(default_factory=Tally)
    progress: _Progress = field(default_factory=_Progress)


def plan_names(name: str, sources: Sequence[Source]) -> list[dict[str, str]]:
    """Output names per source, fixed before any work so parallel workers never collide: a
    kept file keeps its own name unless taken or unsafe; copies are NAME-#####.warc[.gz]."""
    made = [{"copy": f"{name}-{i:05d}.warc{'.gz' if s.gzipped else ''}",
             "rewrite": f"{name}-{i:05d}.warc.gz",
             "originals": f"{name}-{i:05d}-originals.warc{'.gz' if s.gzipped else ''}"}
            for i, s in enumerate(sources)]
    taken = {v for i, m in enumerate(made) for v in m.values()}
    for i, src in enumerate(sources):
        own = Path(src.label.split("#")[-1]).name
        try:
            safe_file_name(own)
        except DrarenaError:
            own = ""
        mine = set(made[i].values())
        made[i]["keep"] = own if own and (own not in taken or own in mine) else made[i]["copy"]
        taken.add(made[i]["keep"])
    return made


def import_file(job: _Job, src: Source, index: int) -> FileResult:
    """Import one WARC file: keep it as is when possible, else copy or rewrite its records."""
    if not job.scope.active:
        try:
            return _keep(job, src, index)
        except _Rewrite as exc:
            job.staging.discard(index)
            if exc.why == "multi":
                return _rewrite(job, src, index)
            return _copy_records(job, src, index, "copied-without-damage")
    try:
        return _copy_records(job, src, index, "filtered")
    except _Rewrite:
        job.staging.discard(index)
        return _rewrite(job, src, index)


def _keep(job: _Job, src: Source, index: int) -> FileResult:
    name = job.names["keep"]
    target = job.build / name
    kept, read_from = _place(src, target, job.keep)
    digest = hashlib.sha256()
    copy_to: BinaryIO | None = target.open("xb") if kept == "copy" else None
    local = Tally()

    def on_read(chunk: bytes) -> None:
        digest.update(chunk)
        if copy_to is not None:
            copy_to.write(chunk)
        job.progress.advance(len(chunk))

    records = 0
    try:
        with read_from.open("rb") as fh:
            win = Window(fh, on_read)
            for item in _scan(win, name, src.gzipped):
                if isinstance(item, Damage):
                    raise _Rewrite("damage")
                records += 1
                job.progress.records += 1
                found = classify(item)
                if isinstance(found, Capture):
                    local.add(found)
                    job.staging.add(index, cdxj_line(found, name, item.offset, item.length),
                                    found.digest, found.revisit)
                elif found != "request":
                    local.skipped[found] += 1
    except (_Rewrite, MultiRecordMember) as exc:
        if copy_to is not None:
            copy_to.close()
        if kept == "moved":  # an extracted WACZ member: move it back to be read again
            os.replace(target, src.path)
        target.unlink(missing_ok=True)
        raise _Rewrite("multi" if isinstance(exc, MultiRecordMember) else "damage") from None
    if copy_to is not None:
        copy_to.close()
    local.records = records
    job.tally.merge(local)
    sha = digest.hexdigest()
    if src.declared_sha256 and sha != src.declared_sha256:
        raise DrarenaError(f"{src.label}: changed while it was read (sha256 {sha[:12]}..., "
                           f"declared {src.declared_sha256[:12]}...)")
    size = target.stat().st_size
    return FileResult(src, sha, size, kept, [FileDigest(name=name, sha256=sha, size=size,
                                                        records=records)])


def _scan(win: Window, name: str, gzipped: bool) -> Iterator[RecordHead | Damage]:
    if gzipped:
        return iter_members(win, name, scan_member)
    return iter_plain(win, name)  # type: ignore[return-value]


def _place(src: Source, target: Path, keep: str) -> tuple[str, Path]:
    """Hard link (or move, for an extracted WACZ member) when allowed, else copy while read;
    returns how, and the path to read the records from."""
    if src.extracted:
        os.replace(src.path, target)
        return "moved", target
    if keep == "copy":
        return "copy", src.path
    try:
        os.link(src.path, target)
        return "hardlink", src.path
    except OSError as exc:
        if keep == "link":
            raise DrarenaError(f"{src.path}: cannot hard-link into {target.parent} ({exc}); "
                               "use --copy") from None
        return "copy", src.path


def _copy_records(job: _Job, src: Source, index: int, kept: str) -> FileResult:
    """Copy the raw bytes of the records to keep (scope, no damage) into a new file."""
    name = job.names["copy"]
    target = job.build / name
    digest = hashlib.sha256()
    local = Tally()
    pairer = _Pairer()
    damage: list[str] = []
    damaged = records = written = 0
    scope = job.scope

    def on_read(chunk: bytes) -> None:
        digest.update(chunk)
        job.progress.advance(len(chunk))

    with src.path.open("rb") as fh, target.open("xb") as out:
        fd = fh.fileno()

        def write(data: bytes) -> int:
            nonlocal written
            at = out.tell()
            out.write(data)
            written += 1
            return at

        win = Window(fh, on_read)
        try:
            for item in _scan(win, name, src.gzipped):
                if isinstance(item, Damage):
                    damaged += item.records
                    damage.append(f"offset {item.offset}: {item.reason}")
                    continue
                records += 1
                job.progress.records += 1
                found = classify(item)
                if not scope.active:
                    at = write(_pread(fd, item.offset, item.length))
                    if isinstance(found, Capture):
                        local.add(found)
                        job.staging.add(index, cdxj_line(found, name, at, item.length),
                                        found.digest, found.revisit)
                    elif found != "request":
                        local.skipped[found] += 1
                    continue
                if found == "request":
                    data = _pread(fd, item.offset, item.length)
                    if pairer.request(item, data):
                        write(data)
                elif found == "warcinfo":
                    write(_pread(fd, item.offset, item.length))
                    local.skipped[found] += 1
                elif not isinstance(found, Capture):
                    local.skipped[found] += 1
                elif scope.allows(found.url, _canonical(found.url), _scope_mime(item, found),
                                  found.status):
                    for request in pairer.response_kept(item):
                        write(request)
                    at = write(_pread(fd, item.offset, item.length))
                    local.add(found)
                    job.staging.add(index, cdxj_line(found, name, at, item.length),
                                    found.digest, found.revisit)
                else:
                    local.skipped["out-of-scope"] += 1
                    if not found.revisit:
                        job.staging.add_dropped(index, found, item.offset, item.length)
        except MultiRecordMember:
            out.close()
            target.unlink(missing_ok=True)
            raise _Rewrite("multi") from None
    local.skipped["out-of-scope-request"] += pairer.finish()
    local.skipped["damaged"] += damaged
    local.records = records
    job.tally.merge(local)
    size = src.path.stat().st_size
    out_digest = FileDigest(name=name, sha256=sha256_file(target), size=target.stat().st_size,
                            records=written)
    return FileResult(src, digest.hexdigest(), size, kept, [out_digest], damaged, damage)


def _canonical(url: str) -> str:
    try:
        return canonicalize_url(url)
    except ValueError:
        return url


def _scope_mime(head: RecordHead, cap: Capture) -> str:
    """A revisit is filtered by the media type its HTTP headers state."""
    if not cap.revisit:
        return cap.mime
    try:
        return _media_type(parse_http_response(head.http_head).header("Content-Type"))
    except ValueError:
        return "unk"


def _pread(fd: int, offset: int, length: int) -> bytes:
    parts: list[bytes] = []
    while length > 0:
        data = os.pread(fd, min(length, 1 << 24), offset)
        if not data:
            raise DrarenaError(f"file shrank while it was read (offset {offset})")
        parts.append(data)
        offset += len(data)
        length -= len(data)
    return b"".join(parts)


def _rewrite(job: _Job, src: Source, index: int) -> FileResult:
    """A whole-file gzip (or members holding several records): one new member per record."""
    name = job.names["rewrite"]
    target = job.build / name
    local = Tally()
    pairer = _Pairer()
    damage: list[str] = []
    damaged = records = written = 0
    scope = job.scope

    def pack(data: bytes | memoryview) -> bytes:
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        return packer.compress(data) + packer.flush()

    with src.path.open("rb") as raw, gzip.GzipFile(fileobj=raw) as stream, \
            target.open("xb") as out:
        last = 0

        def write(member: bytes) -> int:
            nonlocal written
            at = out.tell()
            out.write(member)
            written += 1
            return at

        win = Window(stream)  # type: ignore[arg-type]
        try:
            for item in iter_plain(win, name, hold=True):
                job.progress.advance(raw.tell() - last)
                last = raw.tell()
                if isinstance(item, Damage):
                    damaged += item.records
                    damage.append(f"stream offset {item.offset}: {item.reason}")
                    continue
                assert isinstance(item, RecordHead)
                records += 1
                job.progress.records += 1
                found = classify(item)
                keep = (not scope.active or found == "warcinfo"
                        or (isinstance(found, Capture)
                            and scope.allows(found.url, _canonical(found.url),
                                             _scope_mime(item, found), found.status)))
                if found == "request" and scope.active:
                    member = pack(win.get(item.offset, item.length))
                    if pairer.request(item, member):
                        write(member)
                    continue
                if not keep:
                    local.skipped["out-of-scope" if isinstance(found, Capture) else
                                  str(found)] += 1
                    continue
                for request in pairer.response_kept(item):
                    write(request)
                at = write(pack(win.get(item.offset, item.length)))
                if isinstance(found, Capture):
                    local.add(found)
                    length = out.tell() - at
                    job.staging.add(index, cdxj_line(found, name, at, length), found.digest,
                                    found.revisit)
                elif found != "request":
                    local.skipped[found] += 1
        except _STREAM_ERRORS as exc:
            damaged += 1
            damage.append(f"gzip stream unreadable after byte {raw.tell()}: {exc}")
    local.skipped["out-of-scope-request"] += pairer.finish()
    local.skipped["damaged"] += damaged
    local.records = records
    job.tally.merge(local)
    out_digest = FileDigest(name=name, sha256=sha256_file(target), size=target.stat().st_size,
                            records=written)
    return FileResult(src, sha256_file(src.path), src.path.stat().st_size,
                      "rewritten-per-record", [out_digest], damaged, damage)


def _add_originals(staging: Staging, tally: Tally, build: Path, sources: list[Source],
                   names: list[dict[str, str]], results: list[FileResult]) -> None:
    """Copy, from the sources, the out-of-scope originals of kept revisits (so they resolve)."""
    outs: dict[int, tuple[BinaryIO, list[int]]] = {}
    try:
        for file, offset, length, cap in staging.missing_originals():
            name = names[file]["originals"]
            if file not in outs:
                outs[file] = ((build / name).open("xb"), [0])
            out, count = outs[file]
            with sources[file].path.open("rb") as fh:
                data = _pread(fh.fileno(), offset, length)
            at = out.tell()
            out.write(data)
            count[0] += 1
            staging.add(file, cdxj_line(cap, name, at, length), cap.digest, False)
            tally.add(cap)
            tally.skipped["out-of-scope"] -= 1
    finally:
        for out, _ in outs.values():
            out.close()
    for file, (_, count) in sorted(outs.items()):
        path = build / names[file]["originals"]
        results[file].outputs.append(FileDigest(name=path.name, sha256=sha256_file(path),
                                                size=path.stat().st_size, records=count[0]))


@dataclass(frozen=True, slots=True)
class _Task:
    """One file's work, as sent to a worker process."""

    build: Path
    scope: ImportScope
    keep: str
    source: Source
    index: int
    names: dict[str, str]

    @property
    def staging(self) -> Path:
        return self.build / f".staging-{self.index:05d}.sqlite"


_SHARED: Any = None  # the worker's progress counter (set by _init_worker)


def _init_worker(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def run_task(task: _Task, bar: Any = None) -> tuple[FileResult, Tally]:
    """Import one file into its own staging table (merged by the parent)."""
    staging = Staging(task.staging)
    job = _Job(task.build, task.scope, task.keep, staging, task.names,
               progress=_Progress(bar=bar, shared=_SHARED))
    try:
        result = import_file(job, task.source, task.index)
        job.progress.flush()
        staging.flush()
        staging.db.commit()
    finally:
        staging.close()
    return result, job.tally


def _run_tasks(tasks: list[_Task], jobs: int, bar: Any) -> list[tuple[FileResult, Tally]]:
    if jobs <= 1 or len(tasks) == 1:
        return [run_task(task, bar) for task in tasks]
    import multiprocessing
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    shared = ctx.Array("q", 2)
    seen = 0
    with ProcessPoolExecutor(min(jobs, len(tasks)), mp_context=ctx,
                             initializer=_init_worker, initargs=(shared,)) as pool:
        futures = [pool.submit(run_task, task) for task in tasks]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
            if any(f.exception() for f in done):
                pool.shutdown(cancel_futures=True)
                break
            if bar is not None:
                with shared.get_lock():
                    moved, records = shared[0], shared[1]
                bar.update(moved - seen)
                seen = moved
                bar.set_postfix_str(f"{records} records", refresh=False)
        return [f.result() for f in futures]


# --- the whole import --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ImportResult:
    """What `import_archives` did (`up_to_date`: nothing, the snapshot already matched)."""

    out: Path
    manifest: Manifest
    up_to_date: bool
    files: tuple[dict[str, Any], ...] = ()

    def summary(self) -> str:
        c = self.manifest.counts
        if self.up_to_date:
            return f"{self.out}: up to date (imported from the same files and scope)"
        skipped = ", ".join(f"{k} {v}" for k, v in c.skipped.items()) or "none"
        damaged = sum(int(f.get("damaged_records", 0)) for f in self.files)
        kept = ", ".join(sorted({str(f["kept"]) for f in self.files}))
        return (f"{self.out}: {c.records} records from {len(self.files)} file(s) ({kept}); "
                f"indexed {c.responses} captures ({c.revisits} revisits), {c.pages} pages, "
                f"{c.redirects} redirects, {c.http_errors} HTTP errors; damaged records "
                f"{damaged}; skipped: {skipped}; fingerprint {self.manifest.fingerprint[:16]}")


def import_archives(name: str, inputs: Sequence[Path], out: Path | None = None, *,
                    keep: str = "auto", scope: ImportScope | None = None,
                    progress: bool = True, jobs: int = 1,
                    clock: Callable[[], datetime] = utc_now) -> ImportResult:
    """Build snapshot `out` (default snapshots/NAME) from WARC files, folders and WACZ files;
    `jobs` > 1 imports that many files at once in worker processes (same result)."""
    safe_file_name(name, "snapshot name")
    if keep not in KEEP_MODES:
        raise DrarenaError(f"keep mode {keep!r}: expected one of {', '.join(KEEP_MODES)}")
    scope = scope or ImportScope()
    out = Path(out) if out is not None else Path("snapshots") / name
    files = expand_inputs(inputs)
    plain = [f for f in files if not f.name.lower().endswith(".wacz")]
    for path in plain:
        sniff(path)
    started = warc_date(clock())
    if (out / MANIFEST_NAME).is_file():
        return _up_to_date(out, name, files, scope)
    if out.exists():
        raise DrarenaError(f"{out}: exists and is not a snapshot; remove it or pass --out")
    build = out.with_name(f".{out.name}.importing")
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    try:
        sources = _sources(files, build)
        manifest, results = _run(name, sources, build, scope, keep, progress, started, clock,
                                 jobs)
        os.replace(build, out)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return ImportResult(out, manifest, False, tuple(r.record() for r in results))


def _sources(files: list[Path], build: Path) -> list[Source]:
    sources: list[Source] = []
    for path in files:
        if not path.name.lower().endswith(".wacz"):
            sources.append(Source(path, str(path.resolve()), sniff(path)))
            continue
        from drarena.web.wacz import WaczPackage

        with WaczPackage.open(path) as package:
            problems = package.verify()
            if problems:
                more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
                raise DrarenaError(f"{path}: {problems[0]}{more}")
            for number, member in enumerate(package.warcs):
                dest = build / f".wacz-{len(sources):05d}-{number}"
                package.extract_warc(member, dest)
                try:
                    gz = sniff(dest)
                except DrarenaError as exc:
                    raise DrarenaError(f"{path}: {member.name}: "
                                       f"{str(exc).split(': ', 1)[-1]}") from None
                sources.append(Source(dest, f"{path.resolve()}#{member.name}", gz, True,
                                      member.sha256))
    return sources


def _run(name: str, sources: list[Source], build: Path, scope: ImportScope, keep: str,
         progress: bool, started: str, clock: Callable[[], datetime],
         jobs: int) -> tuple[Manifest, list[FileResult]]:
    total = sum(s.path.stat().st_size for s in sources)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=f"import {name}", unit="B", unit_scale=True,
                   unit_divisor=1000, file=sys.stderr, mininterval=0.5)
    names = plan_names(name, sources)
    tasks = [_Task(build, scope, keep, src, i, names[i]) for i, src in enumerate(sources)]
    staging = Staging(build / ".staging.sqlite")
    tally = Tally()
    try:
        done = _run_tasks(tasks, jobs, bar)
        results = [result for result, _ in done]
        for task, (_, part) in zip(tasks, done, strict=True):
            tally.merge(part)
            staging.absorb(task.staging)
        if scope.active:
            _add_originals(staging, tally, build, sources, names, results)
        unresolved = staging.unresolved()
        tally.skipped["revisit-unresolved"] += unresolved
        tally.revisits -= unresolved
        cdxj = build / CDXJ_NAME
        lines = staging.write_sorted(cdxj)
    finally:
        if bar is not None:
            bar.set_postfix_str(f"{tally.records} records", refresh=False)
            bar.close()
        staging.close()
        for leftover in build.glob(".staging*.sqlite"):
            leftover.unlink()
    if lines == 0:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(tally.skipped.items()) if v)
        raise DrarenaError(f"{', '.join(s.label for s in sources)}: nothing importable: "
                           f"{tally.records} records, none an HTTP capture in scope "
                           f"({skipped or 'no records'})")
    warc_files = tuple(d for r in results for d in r.outputs)
    spec = {"import": {"sources": [r.record() for r in results],
                       "scope": scope.model_dump(mode="json") if scope.active else None,
                       "keep": keep}}
    manifest = Manifest(
        name=name, complete=True, spec=spec,
        software={"drarena": __version__, "python": sys.version.split()[0]},
        started_at=started, ended_at=warc_date(clock()), warc_files=warc_files,
        cdxj=FileDigest(name=CDXJ_NAME, sha256=sha256_file(cdxj), size=cdxj.stat().st_size,
                        records=lines),
        counts=tally.freeze(), fingerprint=fingerprint(warc_files))
    write_manifest(build, manifest)
    return manifest, results


def _up_to_date(out: Path, name: str, files: list[Path], scope: ImportScope) -> ImportResult:
    manifest = load_manifest(out)
    spec = manifest.spec.get("import") if isinstance(manifest.spec, dict) else None
    same = isinstance(spec, dict) and manifest.name == name and spec.get("scope") == (
        scope.model_dump(mode="json") if scope.active else None)
    if same:
        recorded = spec["sources"] if isinstance(spec, dict) else []
        wanted = {str(p.resolve()) for p in files}
        paths = {str(s["path"]).split("#")[0] for s in recorded}
        same = paths == wanted and all(
            "#" in str(s["path"]) or (Path(s["path"]).is_file()
                                      and sha256_file(Path(s["path"])) == s["sha256"])
            for s in recorded)
    if not same:
        raise DrarenaError(f"{out}: already holds a different snapshot; remove it or pass --out")
    return ImportResult(out, manifest, True)
