"""Importing one WARC file into a snapshot being built: keep it as it is (hard link or copy,
index only), copy the records to keep (scope, damage) by their raw bytes, or rewrite a
whole-file gzip one member per record. CDXJ lines go to an on-disk staging table.

Why an on-disk table: memory must not grow with the archive. SQLite's ORDER BY is an external
sort (UTF-8 byte order = Python's code point order, the order `Snapshot.open` checks), and the
revisit/original join is a query.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from drarena.errors import DrarenaError
from drarena.web.warc.manifest import Counts, FileDigest
from drarena.web.warc.scope import (
    Capture,
    ImportScope,
    capture_counts,
    cdxj_line,
    classify,
    media_type,
    skipped,
)
from drarena.web.warc.urls import canonicalize_url, safe_file_name, surt
from drarena.web.warc.warcfile import (
    DAMAGE_ERRORS,
    Damage,
    GzipStream,
    MultiRecordMember,
    RecordHead,
    Window,
    iter_members,
    iter_plain,
    parse_http_response,
    scan_member,
    sha256_file,
)
from drarena.web.warc.writer import GZIP_LEVEL

_PENDING_REQUESTS = 64  # requests waiting for their response's scope decision
_BATCH = 5000
_STREAM_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, *DAMAGE_ERRORS)
# damaged stretches of a file listed by where and why (all are counted): a file of a million
# damaged members would otherwise hold a million lines in memory
DAMAGE_LISTED = 20


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


class Staging:
    """CDXJ lines in an on-disk SQLite table: flat memory, an external sort by ORDER BY, and
    the revisit/original join done by the database."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4000;"
            "PRAGMA temp_store=FILE;"
            "CREATE TABLE cdx(file INT, line TEXT, digest TEXT, revisit INT);"
            "CREATE TABLE dropped(file INT, digest TEXT, offset INT, length INT, cap TEXT);"
        )
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
        query = (
            "SELECT d.file, d.offset, d.length, d.digest, d.cap FROM dropped d WHERE "
            "d.rowid IN (SELECT MIN(rowid) FROM dropped WHERE digest IN (SELECT r.digest "
            "FROM cdx r WHERE r.revisit = 1 AND NOT EXISTS (SELECT 1 FROM cdx c WHERE "
            "c.digest = r.digest AND c.revisit = 0)) GROUP BY digest) ORDER BY d.rowid"
        )
        for file, offset, length, digest, blob in self.db.execute(query).fetchall():
            url, ts, mime, status, size = json.loads(blob)
            yield (
                file,
                offset,
                length,
                Capture(url, surt(url), ts, mime, status, digest, False, False, size),
            )

    def unresolved(self) -> int:
        self._index()
        row = self.db.execute(
            "SELECT COUNT(*) FROM cdx r WHERE r.revisit = 1 AND NOT EXISTS "
            "(SELECT 1 FROM cdx c WHERE c.digest = r.digest AND "
            "c.revisit = 0)"
        ).fetchone()
        return int(row[0])

    def write_sorted(self, path: Path) -> int:
        """Write the resolved lines, sorted, to `path`; return how many."""
        self._index()
        count = 0
        with path.open("x", encoding="utf-8") as out:  # never through a file already there
            for (line,) in self.db.execute(
                "SELECT line FROM cdx r WHERE r.revisit = 0 OR EXISTS (SELECT 1 FROM cdx c "
                "WHERE c.digest = r.digest AND c.revisit = 0) ORDER BY line"
            ):
                out.write(line + "\n")
                count += 1
        return count

    def close(self) -> None:
        self.db.close()


# --- one file ----------------------------------------------------------------------------------


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
        return {
            "path": self.source.label,
            "sha256": self.sha256,
            "size": self.size,
            "kept": self.kept,
            "as": [f.name for f in self.outputs],
            "damaged_records": self.damaged,
            "damage": self.damage[:DAMAGE_LISTED],
        }


class _Rewrite(Exception):
    """The file has damage or multi-record members: import it again by copying records."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass
class Progress:
    """The bar in the parent; in a worker process, a shared [bytes, records] counter that
    the parent reads into the bar."""

    bar: Any = None
    shared: Any = None
    records: int = 0
    _bytes: int = 0
    _sent: int = 0
    _shown: int = 0
    passed: int = 0  # bytes advanced so far

    def undo(self, passed: int, records: int) -> None:
        """Take back a scan's bytes and records (the file is read again another way)."""
        self.records = records
        self.advance(passed - self.passed)

    def advance(self, nbytes: int) -> None:
        self.passed += nbytes
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


_Held = TypeVar("_Held")


class _Pairer(Generic[_Held]):
    """Keeps a request only if its response is kept: they link by WARC-Concurrent-To (either
    way round) and sit close together, so a small window of pending requests is enough.
    What waits is the caller's: a rewritten member, or where a copied record lies."""

    def __init__(self) -> None:
        self.pending: OrderedDict[str, tuple[RecordHead, _Held]] = OrderedDict()
        self.kept: OrderedDict[str, None] = OrderedDict()
        self.dropped = 0

    def request(self, head: RecordHead, data: _Held) -> bool:
        """True: write it now (its response is already kept); else it waits."""
        if any(v in self.kept for v in _concurrent(head)):
            return True
        self.pending[head.header("WARC-Record-ID")] = (head, data)
        if len(self.pending) > _PENDING_REQUESTS:
            self.pending.popitem(last=False)
            self.dropped += 1
        return False

    def response_kept(self, head: RecordHead) -> list[_Held]:
        rid = head.header("WARC-Record-ID")
        links = set(_concurrent(head))
        out = [
            key for key, (req, _) in self.pending.items() if key in links or rid in _concurrent(req)
        ]
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
class FileJob:
    """State of importing one file (in this process or a worker)."""

    build: Path
    scope: ImportScope
    keep: str
    staging: Staging
    names: dict[str, str]  # output file name per way of keeping (planned by the parent)
    counts: Counts = field(default_factory=Counts)  # of the ranges done; replaced as they end
    progress: Progress = field(default_factory=Progress)


def _index_found(
    job: FileJob,
    local: Counts,
    index: int,
    name: str,
    found: Capture | str,
    offset: int,
    length: int,
) -> Counts:
    """Stage a capture's CDXJ line at (offset, length) of `name`, or count what was skipped:
    `local` with what the record adds."""
    if isinstance(found, Capture):
        job.staging.add(index, cdxj_line(found, name, offset, length), found.digest, found.revisit)
        return local.plus(capture_counts(found))
    return local if found == "request" else local.plus(skipped(found))


def plan_names(name: str, sources: Sequence[Source]) -> list[dict[str, str]]:
    """Output names per source, fixed before any work so parallel workers never collide: a
    kept file keeps its own name unless taken, unsafe or not a WARC name; copies are
    NAME-#####.warc[.gz].

    Why only WARC names: every file drarena itself writes next to the WARCs (index.cdxj,
    manifest.json, docs.jsonl, ...) has another suffix, so a kept file, often a hard link
    to the user's own, can never be the one a later write lands on (an input named
    index.cdxj would otherwise be overwritten through its link)."""
    made = [
        {
            "copy": f"{name}-{i:05d}.warc{'.gz' if s.gzipped else ''}",
            "rewrite": f"{name}-{i:05d}.warc.gz",
            "originals": f"{name}-{i:05d}-originals.warc{'.gz' if s.gzipped else ''}",
        }
        for i, s in enumerate(sources)
    ]
    taken = {v for i, m in enumerate(made) for v in m.values()}
    for i, src in enumerate(sources):
        own = Path(src.label.split("#")[-1]).name
        try:
            safe_file_name(own)
        except DrarenaError:
            own = ""
        if not own.lower().endswith(".warc.gz" if src.gzipped else ".warc"):
            own = ""
        mine = set(made[i].values())
        made[i]["keep"] = own if own and (own not in taken or own in mine) else made[i]["copy"]
        taken.add(made[i]["keep"])
    return made


def import_file(job: FileJob, src: Source, index: int) -> FileResult:
    """Import one WARC file: keep it as is when possible, else copy or rewrite its records."""
    start = (job.progress.passed, job.progress.records)
    try:
        if job.scope.active:
            return _copy_records(job, src, index, "filtered")
        try:
            return _keep(job, src, index)
        except _Rewrite as exc:
            if exc.why == "multi":
                raise
            job.staging.discard(index)
            job.progress.undo(*start)
        return _copy_records(job, src, index, "copied-without-damage")
    except _Rewrite:  # members holding several records (a whole-file gzip)
        job.staging.discard(index)
        job.progress.undo(*start)
        return _rewrite(job, src, index)


def _keep(job: FileJob, src: Source, index: int) -> FileResult:
    name = job.names["keep"]
    target = job.build / name
    kept, read_from = place(src, target, job.keep)
    digest = hashlib.sha256()
    copy_to: BinaryIO | None = target.open("xb") if kept == "copy" else None
    local = Counts()

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
                local = _index_found(
                    job, local, index, name, classify(item), item.offset, item.length
                )
    except (_Rewrite, MultiRecordMember) as exc:
        if copy_to is not None:
            copy_to.close()
        if kept == "moved":  # an extracted WACZ member: move it back to be read again
            os.replace(target, src.path)
        target.unlink(missing_ok=True)
        raise _Rewrite("multi" if isinstance(exc, MultiRecordMember) else "damage") from None
    if copy_to is not None:
        copy_to.close()
    job.counts = job.counts.plus(local.plus(Counts(records=records)))
    sha = digest.hexdigest()
    if src.declared_sha256 and sha != src.declared_sha256:
        raise DrarenaError(
            f"{src.label}: changed while it was read (sha256 {sha[:12]}..., "
            f"declared {src.declared_sha256[:12]}...)"
        )
    size = target.stat().st_size
    return FileResult(
        src, sha, size, kept, [FileDigest(name=name, sha256=sha, size=size, records=records)]
    )


def _scan(
    win: Window, name: str, gzipped: bool, start: int = 0, stop: int | None = None
) -> Iterator[RecordHead | Damage]:
    if gzipped:
        return iter_members(win, name, scan_member, start, stop)
    return iter_plain(win, name, start=start, stop=stop)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class RangeResult:
    """One byte range of a kept file, indexed by a worker. `reached`: where its last record
    ended (the next range's start, if the split was a true record boundary); `trouble`:
    "damage" or "multi" when the file must be imported whole, in one process."""

    records: int
    reached: int
    trouble: str = ""


def index_range(
    job: FileJob, read_from: Path, gzipped: bool, index: int, start: int, stop: int
) -> RangeResult:
    """Index the records of a kept file whose member (record) starts in [start, stop): the
    lines `_keep` would stage for them, with the same offsets."""
    name = job.names["keep"]
    local = Counts()
    records = 0
    reached = start
    with read_from.open("rb") as fh:
        win = Window(fh)
        win.rewind(start)
        try:
            for item in _scan(win, name, gzipped, start, stop):
                if isinstance(item, Damage):
                    return RangeResult(records, reached, "damage")
                records += 1
                job.progress.records += 1
                job.progress.advance(item.offset + item.length - reached)
                reached = item.offset + item.length
                local = _index_found(
                    job, local, index, name, classify(item), item.offset, item.length
                )
        except MultiRecordMember:
            return RangeResult(records, reached, "multi")
    job.counts = job.counts.plus(local.plus(Counts(records=records)))
    return RangeResult(records, reached)


def place(src: Source, target: Path, keep: str) -> tuple[str, Path]:
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
            raise DrarenaError(
                f"{src.path}: cannot hard-link into {target.parent} ({exc}); use --copy"
            ) from None
        return "copy", src.path


def _copy_records(job: FileJob, src: Source, index: int, kept: str) -> FileResult:
    """Copy the raw bytes of the records to keep (scope, no damage) into a new file."""
    name = job.names["copy"]
    target = job.build / name
    digest = hashlib.sha256()
    local = Counts()
    pairer: _Pairer[tuple[int, int]] = _Pairer()  # a request waits as (offset, length)
    damage: list[str] = []
    damaged = records = written = 0
    scope = job.scope

    def on_read(chunk: bytes) -> None:
        digest.update(chunk)
        job.progress.advance(len(chunk))

    with src.path.open("rb") as fh, target.open("xb") as out:
        fd = fh.fileno()

        def write(offset: int, length: int) -> int:
            nonlocal written
            at = out.tell()
            _copy_range(fd, offset, length, out)
            written += 1
            return at

        win = Window(fh, on_read)
        try:
            for item in _scan(win, name, src.gzipped):
                if isinstance(item, Damage):
                    damaged += item.records
                    if len(damage) < DAMAGE_LISTED:  # counted all, listed the first few
                        damage.append(f"offset {item.offset}: {item.reason}")
                    continue
                records += 1
                job.progress.records += 1
                found = classify(item)
                if not scope.active:
                    at = write(item.offset, item.length)
                    local = _index_found(job, local, index, name, found, at, item.length)
                    continue
                if found == "request":
                    if pairer.request(item, (item.offset, item.length)):
                        write(item.offset, item.length)
                elif found == "warcinfo":
                    write(item.offset, item.length)
                    local = local.plus(skipped(found))
                elif not isinstance(found, Capture):
                    local = local.plus(skipped(found))
                elif _in_scope(scope, item, found):
                    for offset, length in pairer.response_kept(item):
                        write(offset, length)
                    at = write(item.offset, item.length)
                    local = local.plus(capture_counts(found))
                    job.staging.add(
                        index, cdxj_line(found, name, at, item.length), found.digest, found.revisit
                    )
                else:
                    local = local.plus(skipped("out-of-scope"))
                    if not found.revisit:
                        job.staging.add_dropped(index, found, item.offset, item.length)
        except MultiRecordMember:
            out.close()
            target.unlink(missing_ok=True)
            raise _Rewrite("multi") from None
    local = local.plus(skipped("out-of-scope-request", pairer.finish()))
    local = local.plus(skipped("damaged", damaged))
    job.counts = job.counts.plus(local.plus(Counts(records=records)))
    size = src.path.stat().st_size
    out_digest = FileDigest(
        name=name, sha256=sha256_file(target), size=target.stat().st_size, records=written
    )
    return FileResult(src, digest.hexdigest(), size, kept, [out_digest], damaged, damage)


def _in_scope(scope: ImportScope, head: RecordHead, cap: Capture) -> bool:
    """The one scope test for a capture, whether its file is copied or rewritten."""
    return scope.allows(cap.url, _canonical(cap.url), _scope_mime(head, cap), cap.status)


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
        return media_type(parse_http_response(head.http_head).header("Content-Type"))
    except ValueError:
        return "unk"


_COPY_CHUNK = 1 << 20


def _copy_range(fd: int, offset: int, length: int, out: BinaryIO) -> None:
    """Bytes [offset, offset + length) of `fd` onto `out`, a MiB at a time: a record of
    300 MB costs the import no more memory than a small one (joined whole, it cost twice
    its size)."""
    while length > 0:
        data = os.pread(fd, min(length, _COPY_CHUNK), offset)
        if not data:
            raise DrarenaError(f"file shrank while it was read (offset {offset})")
        out.write(data)
        offset += len(data)
        length -= len(data)


def _rewrite(job: FileJob, src: Source, index: int) -> FileResult:
    """A whole-file gzip (or members holding several records): one new member per record.

    Each kept record is compressed into the output as it streams by (iter_plain's sink), so
    memory stays a few MiB whatever the record's size; one the stream then finds damaged is
    cut off the output again. A request waits (compressed, in memory) for its response's
    scope decision."""
    name = job.names["rewrite"]
    target = job.build / name
    with src.path.open("rb") as raw, target.open("xb") as out:
        rewriter = _Rewriter(job, index, name, out)
        rewriter.read(raw)
    job.counts = job.counts.plus(rewriter.counts())
    out_digest = FileDigest(
        name=name, sha256=sha256_file(target), size=target.stat().st_size, records=rewriter.written
    )
    return FileResult(
        src,
        sha256_file(src.path),
        src.path.stat().st_size,
        "rewritten-per-record",
        [out_digest],
        rewriter.damaged,
        rewriter.damage,
    )


class _Rewriter:
    """One file being rewritten (`_rewrite`): the output, the record being streamed, the
    requests waiting and what was counted, each step a method (they share that state)."""

    def __init__(self, job: FileJob, index: int, name: str, out: BinaryIO) -> None:
        self.job, self.index, self.name, self.out = job, index, name, out
        self.local = Counts()
        self.pairer: _Pairer[bytes] = _Pairer()  # a request waits as its rewritten member
        self.damage: list[str] = []
        self.damaged = self.records = self.written = 0
        self.current: _Streamed | None = None  # the record being streamed, once its head is read

    def read(self, raw: BinaryIO) -> None:
        """Stream the file through: each record rewritten, or counted as skipped or damaged;
        an unreadable rest of the gzip stream ends it as one damaged record."""
        stream = GzipStream(raw)  # linear in the file, however many members (not GzipFile)
        last = 0
        reader = _UntilDamage(stream)
        win = Window(reader)  # type: ignore[arg-type]
        last_damaged = False
        try:
            for item in iter_plain(win, self.name, sink=self.begin):
                last_damaged = isinstance(item, Damage)
                self.job.progress.advance(raw.tell() - last)
                last = raw.tell()
                if isinstance(item, Damage):
                    self.damaged_record(item)
                    continue
                assert isinstance(item, RecordHead)
                self.record(item)
        except _STREAM_ERRORS as exc:
            self.cut_off()
            reader.error, last_damaged = exc, False
        if reader.error is not None:  # the record cut there was counted when it ended early
            self.damaged += 0 if last_damaged else 1
            self.damage.append(f"gzip stream unreadable after byte {raw.tell()}: {reader.error}")

    def write(self, member: bytes) -> int:
        """Append a whole member (a request that waited) to the output; where it starts."""
        at = self.out.tell()
        self.out.write(member)
        self.written += 1
        return at

    def keeps(self, found: Capture | str, head: RecordHead) -> bool:
        """Whether the record goes to the output (a request under a scope waits instead, see
        `begin`): every record without a scope, else warcinfo and the captures in scope."""
        scope = self.job.scope
        return (
            not scope.active
            or found == "warcinfo"
            or (isinstance(found, Capture) and _in_scope(scope, head, found))
        )

    def begin(self, head: RecordHead) -> Callable[[memoryview], object] | None:
        """Where the record of `head` goes: decided from its head alone (the digest,
        which classify also reads, is not part of any scope decision)."""
        found = classify(head)
        if found == "request" and self.job.scope.active:
            self.current = _Streamed(io.BytesIO(), self.out.tell(), 0, request=True)
        elif self.keeps(found, head):
            mark = self.out.tell()
            waiting = self.pairer.response_kept(head)
            for request in waiting:
                self.write(request)
            self.current = _Streamed(self.out, mark, len(waiting))
        else:
            self.current = None
            return None
        return self.current.write

    def cut_off(self) -> None:
        """The record being streamed is damaged: the output goes back to before it (and
        the requests written for it, counted as dropped)."""
        current = self.current
        if current is not None and not current.request:
            self.out.seek(current.mark)
            self.out.truncate()
            self.written -= current.requests
            self.pairer.dropped += current.requests
        self.current = None

    def damaged_record(self, item: Damage) -> None:
        """A damaged stretch: cut off what of it was written, count it, list the first few."""
        self.cut_off()
        self.damaged += item.records
        if len(self.damage) < DAMAGE_LISTED:
            self.damage.append(f"stream offset {item.offset}: {item.reason}")

    def record(self, item: RecordHead) -> None:
        """A record streamed to its end: finish its member (a request waits for its
        response), stage its CDXJ line or count it as skipped."""
        self.records += 1
        self.job.progress.records += 1
        found = classify(item)
        streamed, self.current = self.current, None
        if streamed is None:  # not kept
            self.local = self.local.plus(
                skipped("out-of-scope" if isinstance(found, Capture) else str(found))
            )
            return
        member = streamed.finish()
        if streamed.request:
            if self.pairer.request(item, member):
                self.write(member)
            return
        self.written += 1
        if isinstance(found, Capture):
            self.local = self.local.plus(capture_counts(found))
            at, length = streamed.start, self.out.tell() - streamed.start
            self.job.staging.add(
                self.index, cdxj_line(found, self.name, at, length), found.digest, found.revisit
            )
        elif found != "request":
            self.local = self.local.plus(skipped(found))

    def counts(self) -> Counts:
        """What the file adds to the import's counts, the requests still waiting (their
        response never kept) counted as dropped."""
        local = self.local.plus(skipped("out-of-scope-request", self.pairer.finish()))
        local = local.plus(skipped("damaged", self.damaged))
        return local.plus(Counts(records=self.records))


class _Streamed:
    """One record being compressed into a gzip member as it streams: into the output at
    `mark` (after the `requests` written just before it), or into memory (a request)."""

    def __init__(self, out: BinaryIO, mark: int, requests: int, request: bool = False) -> None:
        self.out, self.mark, self.requests, self.request = out, mark, requests, request
        self.start = out.tell()
        self._packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)

    def write(self, piece: memoryview) -> None:
        self.out.write(self._packer.compress(piece))

    def finish(self) -> bytes:
        """Ends the member with the record's two line breaks (always CRLF CRLF: the reader
        skips CRLF pairs only, and a source's own separator may be "\n\n" or cut short);
        returns a request's member bytes (b"" for one written to the output)."""
        self.out.write(self._packer.compress(b"\r\n\r\n") + self._packer.flush())
        if isinstance(self.out, io.BytesIO):
            return self.out.getvalue()
        return b""


class _UntilDamage:
    """A decompressed gzip stream that ends where its data is damaged (GzipStream raises and
    drops what that read had decoded); `error` says why it ended."""

    def __init__(self, stream: GzipStream) -> None:
        self.stream = stream
        self.error: Exception | None = None

    def read(self, size: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < size and self.error is None:
            try:
                chunk = self.stream.read1(min(size - got, 1 << 16))
            except _STREAM_ERRORS as exc:
                self.error = exc
                break
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)


def add_originals(
    staging: Staging,
    counts: Counts,
    build: Path,
    sources: list[Source],
    names: list[dict[str, str]],
    results: list[FileResult],
) -> Counts:
    """Copy, from the sources, the out-of-scope originals of kept revisits (so they resolve);
    `counts` with each such original counted as indexed, no longer as out of scope."""
    outs: dict[int, tuple[BinaryIO, list[int]]] = {}
    try:
        for file, offset, length, cap in staging.missing_originals():
            name = names[file]["originals"]
            if file not in outs:
                outs[file] = ((build / name).open("xb"), [0])
            out, count = outs[file]
            at = out.tell()
            with sources[file].path.open("rb") as fh:
                _copy_range(fh.fileno(), offset, length, out)
            count[0] += 1
            staging.add(file, cdxj_line(cap, name, at, length), cap.digest, False)
            counts = counts.plus(capture_counts(cap)).plus(skipped("out-of-scope", -1))
    finally:
        for out, _ in outs.values():
            out.close()
    for file, (_, count) in sorted(outs.items()):
        path = build / names[file]["originals"]
        results[file].outputs.append(
            FileDigest(
                name=path.name, sha256=sha256_file(path), size=path.stat().st_size, records=count[0]
            )
        )
    return counts
