"""Extraction's working state on disk: one SQLite file beside docs.jsonl, removed when done.

Why: where a page goes in docs.jsonl (canonical URL order), whether a capture is its URL's
latest, whether a link's target is a page of the snapshot, which page a duplicate repeats:
each depends on every response of the snapshot. Held in lists and dicts, with the bodies
and results, they made extraction's peak grow with the corpus (1.66 GB at 100,000 pages,
docs/benchmarks.md). Here each is a table that SQLite sorts and searches with a few MB of
page cache and its temporary files, as the importer's staging table does
(drarena/web/warc/importfile.py): the stage's memory is the same at 10,000 pages as at a million.

Strings are stored as UTF-8 BLOBs with surrogates passed through: their byte order is the
code point order Python compares str in, so ORDER BY url gives sorted()'s order, lone
surrogates included. Page results are stored as ASCII JSON (lone surrogates escaped), which
reads back the same values (the shard cache of corpus.shards relies on the same).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import socket
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import Any

from drarena.corpus.page import PageExtract, RawLink

BATCH = 512  # rows written in one transaction, or read in one query
BATCH_BYTES = 1 << 20  # or fewer rows when they hold this much text (pages: up to MBs each)
IN_CHUNK = 500  # URLs asked about in one query (SQLite's oldest limit is 999 parameters)
MAX_REDIRECT_HOPS = 10
_PAGE_FIELDS = tuple(f.name for f in fields(PageExtract) if f.name != "links")
_LINK_FIELDS = tuple(f.name for f in fields(RawLink))
_SCHEMA = """
PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4000;
PRAGMA temp_store=FILE;
CREATE TABLE captures(url BLOB, date BLOB, seq INTEGER, kind BLOB, target BLOB);
CREATE TABLE winners(seq INTEGER PRIMARY KEY, rank INTEGER, url BLOB);
CREATE TABLE page_urls(url BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE pages(rank INTEGER PRIMARY KEY, meta TEXT, page TEXT, links TEXT, inside TEXT);
CREATE TABLE digests(digest BLOB, rank INTEGER, id TEXT);
CREATE TABLE report(list TEXT, item TEXT);
"""


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _s(blob: bytes) -> str:
    return blob.decode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True)
class PagePlan:
    """What selection decided: `pages` pages (ranked in canonical URL order, see
    ExtractSpill.winners), the redirects that resolve to one of them, and what was skipped.
    `aliases` is the one map held in memory, one entry a resolved redirect (~240 bytes
    with 50-character URLs; the output pass adds ~130 for the map from page to aliases)."""

    responses: int
    pages: int
    aliases: dict[str, str]  # redirecting URL -> final page URL
    skipped: Counter[str]


def _owner_prefix(pid: int) -> str:
    return f".extract-{socket.gethostname()}-{pid}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def remove_stale(folder: Path) -> list[Path]:
    """Spill files a killed extraction left in `folder` (SIGKILL runs no cleanup): those
    this host's processes made whose process is gone. Only drarena's own names are touched
    (".extract-<host>-<pid>-*.sqlite"); another host's (a shared folder) and a live
    process's are left alone. Returns what was removed."""
    host = f".extract-{socket.gethostname()}-"
    removed = []
    for path in sorted(folder.glob(f"{glob.escape(host)}*.sqlite")):
        pid = path.name[len(host) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)) and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed


class ExtractSpill:
    """The SQLite file: captures (pass one), the pages chosen, their results (pass two), the
    text digests for duplicates and the manifest's lists. Rows are written in batches. Its
    name holds this host and process id, so that the next extraction into the same folder
    removes it if this one is killed (remove_stale)."""

    def __init__(self, folder: Path) -> None:
        remove_stale(folder)
        fd, name = tempfile.mkstemp(prefix=_owner_prefix(os.getpid()), suffix=".sqlite", dir=folder)
        os.close(fd)
        self.path = Path(name)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.executescript(_SCHEMA)
        self._pending: dict[str, list[tuple[Any, ...]]] = {}
        self._pending_bytes = 0

    def close(self) -> None:
        self.db.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def __enter__(self) -> ExtractSpill:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _add(self, sql: str, row: tuple[Any, ...]) -> None:
        rows = self._pending.setdefault(sql, [])
        rows.append(row)
        self._pending_bytes += sum(len(v) for v in row if isinstance(v, str | bytes))
        if len(rows) >= BATCH or self._pending_bytes >= BATCH_BYTES:
            self.flush()

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.db.execute("BEGIN")
        self.db.executemany(sql, rows)
        self.db.execute("COMMIT")
        rows.clear()

    def flush(self) -> None:
        for sql, rows in self._pending.items():
            if rows:
                self._write(sql, rows)
        self._pending_bytes = 0

    # -- pass one: selection -------------------------------------------------------------

    def add_capture(self, url: str, date: str, seq: int, kind: str, target: str) -> None:
        """A response, `seq`-th in the source's order: its kind ("page", "redirect" to
        `target`, or why it is no page) and WARC date."""
        row = (_b(url), _b(date), seq, _b(kind), _b(target))
        self._add("INSERT INTO captures VALUES (?,?,?,?,?)", row)

    def plan(self, responses: int) -> PagePlan:
        """The latest capture per canonical URL (WARC date, then the source's order), pages
        ranked by URL, redirects resolved: select_pages' decisions, from the sorted table."""
        self.flush()
        skipped: Counter[str] = Counter()
        redirects: dict[str, str] = {}
        pages = 0
        rows = self.db.execute(
            "SELECT url, seq, kind, target FROM captures ORDER BY url, date, seq"
        )
        last: tuple[bytes, int, bytes, bytes] | None = None
        for row in rows:
            if last is not None and row[0] != last[0]:
                pages += self._decide(last, pages, redirects, skipped)
            elif last is not None:
                skipped["older_capture"] += 1
            last = row
        if last is not None:
            pages += self._decide(last, pages, redirects, skipped)
        self.flush()
        self.db.execute("DROP TABLE captures")
        aliases: dict[str, str] = {}
        for start in sorted(redirects):
            url, seen = start, {start}
            for _ in range(MAX_REDIRECT_HOPS):
                url = redirects.get(url, url)
                if url not in redirects or url in seen:
                    break
                seen.add(url)
            if self.is_page(url):
                aliases[start] = url
            else:
                skipped["redirect_unresolved"] += 1
        return PagePlan(responses, pages, aliases, skipped)

    def _decide(
        self,
        row: tuple[bytes, int, bytes, bytes],
        rank: int,
        redirects: dict[str, str],
        skipped: Counter[str],
    ) -> int:
        """A URL's latest capture: 1 when it is a page (ranked `rank`), else 0."""
        url, seq, kind, target = row
        if kind == b"page":
            self._add("INSERT INTO winners VALUES (?,?,?)", (seq, rank, url))
            self._add("INSERT INTO page_urls VALUES (?)", (url,))
            return 1
        if kind == b"redirect":
            redirects[_s(url)] = _s(target)
        else:
            skipped[_s(kind)] += 1
        return 0

    def is_page(self, url: str) -> bool:
        found = self.db.execute("SELECT 1 FROM page_urls WHERE url = ?", (_b(url),)).fetchone()
        return found is not None

    def pages_among(self, urls: Collection[str]) -> set[str]:
        """Which of `urls` are pages of the snapshot."""
        found: set[str] = set()
        wanted = [_b(url) for url in urls]
        for i in range(0, len(wanted), IN_CHUNK):
            part = wanted[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            query = f"SELECT url FROM page_urls WHERE url IN ({marks})"
            found.update(_s(url) for (url,) in self.db.execute(query, part))
        return found

    def winners(self) -> Iterator[tuple[int, int, str]]:
        """(position in the source, rank, canonical URL) of every page, by position; read a
        batch at a time, so no statement stays open while pass two writes."""
        after = -1
        while True:
            rows = self.db.execute(
                "SELECT seq, rank, url FROM winners WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, BATCH),
            ).fetchall()
            if not rows:
                return
            for seq, rank, url in rows:
                yield seq, rank, _s(url)
            after = rows[-1][0]

    # -- pass two: results ---------------------------------------------------------------

    def add_page(self, rank: int, meta: list[Any], page: PageExtract, inside: str) -> None:
        """A page's result with the response fields its doc needs (`meta`, JSON values) and
        `inside`: a '1' or '0' a link, whether its target (through redirects) is a page."""
        data = {name: getattr(page, name) for name in _PAGE_FIELDS}
        links = [[getattr(link, name) for name in _LINK_FIELDS] for link in page.links]
        self._add(
            "INSERT INTO pages VALUES (?,?,?,?,?)",
            (rank, json.dumps(meta), json.dumps(data), json.dumps(links), inside),
        )

    def add_digest(self, digest: str, rank: int, doc_id: str) -> None:
        """A page that counts for duplicates (not near-empty): its text digest."""
        self._add("INSERT INTO digests VALUES (?,?,?)", (_b(digest), rank, doc_id))

    def rows_in_order(self) -> Iterator[tuple[int, str, str, str, str]]:
        """(rank, meta, result, links, inside) of every page as add_page stored them, by
        rank, one row read at a time (render.parse_page reads a result back)."""
        self.flush()
        yield from self.db.execute(
            "SELECT rank, meta, page, links, inside FROM pages ORDER BY rank"
        )

    def links_of_pages(self) -> Iterator[list[RawLink]]:
        """Every page's links, in no particular order (pass two of the repeated links)."""
        self.flush()
        for (links,) in self.db.execute("SELECT links FROM pages"):
            yield [RawLink(*row) for row in json.loads(links)]

    def duplicates(self) -> Iterator[tuple[int, str]]:
        """(rank, doc id of the first page by rank with the same text digest) of every page
        that is not that first page, by rank."""
        self.flush()
        self.db.execute("CREATE INDEX IF NOT EXISTS digests_by ON digests(digest, rank)")
        query = (
            "SELECT d.rank, f.id FROM digests d "
            "JOIN (SELECT digest, MIN(rank) AS first FROM digests GROUP BY digest) m "
            "ON m.digest = d.digest "
            "JOIN digests f ON f.digest = m.digest AND f.rank = m.first "
            "WHERE d.rank <> m.first ORDER BY d.rank"
        )
        yield from self.db.execute(query)

    # -- the manifest's lists ------------------------------------------------------------

    def add_report(self, name: str, item: Any) -> None:
        self._add("INSERT INTO report VALUES (?,?)", (name, json.dumps(item)))

    def report(self, name: str) -> Iterator[Any]:
        """The items of one of the manifest's lists, in the order they were added."""
        self.flush()
        self.db.execute("CREATE INDEX IF NOT EXISTS report_by ON report(list)")
        for (item,) in self.db.execute(
            "SELECT item FROM report WHERE list = ? ORDER BY rowid", (name,)
        ):
            yield json.loads(item)
