"""Breadth-first, polite crawl of a CrawlSpec into a snapshot, resumable after an interruption.

Why level by level with an ordered commit: pages of one depth are fetched concurrently, but
their records are written, counted and mined for links in frontier order, so the WARC order,
the page set and the next level never depend on fetch timing. Resume replays the same BFS,
taking outcomes already in the snapshot instead of fetching them again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import re
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urljoin, urlsplit
from urllib.robotparser import RobotFileParser

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.web.crawling.fetch import (
    FetchPolicy,
    HostGate,
    extract_links,
    fetch_once,
    make_session,
)
from drarena.web.crawling.spec import CrawlSpec
from drarena.web.warc.manifest import Counts, FileDigest, Manifest, load_manifest
from drarena.web.warc.snapshot import FailedFetch, Snapshot, StoredResponse
from drarena.web.warc.urls import canonicalize_url, scheme_of, url_host_port
from drarena.web.warc.warcfile import MAX_DECODED_BYTES, HttpMessage, decode_body
from drarena.web.warc.writer import (
    Clock,
    Exchange,
    FetchFailure,
    IdFactory,
    SnapshotWriter,
    StoredPayload,
    new_record_id,
    utc_now,
)

if TYPE_CHECKING:
    from aiohttp import ClientSession
    from tqdm import tqdm

HTML_TYPES = ("text/html", "application/xhtml+xml")
# Failures decided by our own policy, not by the site: no reason to treat robots.txt as absent.
POLICY_FAILURES = frozenset({"private_address", "bad_scheme", "bad_url"})


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a page fetch: an HTTP exchange or a failure, fresh or from the snapshot."""

    url: str
    status: int = 0
    location: str | None = None
    body: bytes = b""
    content_type: str = ""
    failure: str = ""
    truncated: bool = False
    revisit: bool = False
    fresh: Exchange | FetchFailure | None = None


@dataclass(frozen=True, slots=True)
class PageResult:
    url: str
    depth: int
    hops: tuple[Hop, ...]
    links: tuple[str, ...]


def _canonical_or_none(url: str) -> str | None:
    try:
        return canonicalize_url(url)
    except ValueError:
        return None


def redirect_target(url: str, status: int, location: str) -> str | None:
    """The absolute target of a 3xx with a Location, else None. A Location urljoin cannot
    parse (`http://[oops/`) is kept as written, so the page records it as a `bad_url`
    failure instead of ending the crawl; fresh and stored hops use this one rule, so a
    resume replays the chain as the interrupted run saw it."""
    if not location or not 300 <= status < 400:
        return None
    try:
        return urljoin(url, location)
    except ValueError:
        return location


def hop_from_exchange(exchange: Exchange, limit: int = MAX_DECODED_BYTES) -> Hop:
    """The hop of a fresh exchange, its body decoded up to `limit` bytes (the fetch's
    max_bytes: a compression bomb stops there and the hop is truncated)."""
    message = HttpMessage(
        exchange.status, exchange.reason, exchange.response_headers, exchange.entity
    )
    target = redirect_target(exchange.url, exchange.status, message.header("Location"))
    ctype = message.header("Content-Type").split(";", 1)[0].strip().lower()
    decoded = decode_body(message, limit)
    return Hop(
        exchange.url,
        exchange.status,
        target,
        decoded.body,
        ctype,
        truncated=exchange.truncated or decoded.truncated,
        fresh=exchange,
    )


def hop_from_stored(stored: StoredResponse) -> Hop:
    return Hop(
        stored.url,
        stored.status,
        redirect_target(stored.url, stored.status, stored.header("Location")),
        stored.body,
        stored.content_type,
        truncated=stored.truncated,
        revisit=stored.revisit,
    )


@dataclass
class Scope:
    """Compiled scope check of a spec."""

    spec: CrawlSpec
    _include: list[re.Pattern[str]] = field(default_factory=list)
    _exclude: list[re.Pattern[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._include = [re.compile(p) for p in self.spec.scope.include]
        self._exclude = [re.compile(p) for p in self.spec.scope.exclude]
        self._hosts = self.spec.allowed_hosts()
        self._cache: dict[str, bool] = {}

    def allows(self, canonical: str) -> bool:
        cached = self._cache.get(canonical)
        if cached is None:
            cached = self._cache[canonical] = self._allows(canonical)
        return cached

    def _allows(self, canonical: str) -> bool:
        parts = urlsplit(canonical)
        netloc = parts.netloc
        host = parts.hostname or ""
        if not any(h == netloc or (":" not in h and h == host) for h in self._hosts):
            return False
        prefixes = self.spec.scope.prefixes
        if prefixes and not any(canonical.startswith(p) for p in prefixes):
            return False
        if self._include and not any(p.search(canonical) for p in self._include):
            return False
        return not any(p.search(canonical) for p in self._exclude)


def hop_counts(hop: Hop) -> Counts:
    """What one hop adds to a crawl's (or a live capture's) counts; the page it belongs to is
    counted apart (`pages`), and so is a revisit (known once the hop is written)."""
    if hop.failure:
        blocked = hop.failure == "robots"
        return Counts(
            robots_blocked=int(blocked), fetch_errors=int(not blocked), errors={hop.failure: 1}
        )
    return Counts(
        responses=1,
        bytes=len(hop.body),
        statuses={str(hop.status): 1},
        truncated=int(hop.truncated),
        redirects=int(bool(hop.location)),
        http_errors=int(not hop.location and hop.status >= 400),
    )


@dataclass
class Prior:
    """What an interrupted snapshot already holds: per canonical URL, its captures and
    recorded failures in WARC order. Each is used once, as the interrupted run used it."""

    outcomes: dict[str, deque[StoredResponse | FailedFetch]] = field(default_factory=dict)

    @classmethod
    def load(cls, snap: Snapshot) -> Prior:
        order = {item.name: index for index, item in enumerate(snap.manifest.warc_files)}
        found: list[StoredResponse | FailedFetch] = [*snap.iter_responses(), *snap.iter_failures()]
        found.sort(key=lambda item: (order.get(item.warc_file, 0), item.offset))
        prior = cls()
        for item in found:
            prior.outcomes.setdefault(item.canonical_url, deque()).append(item)
        return prior

    def take(self, canonical: str) -> StoredResponse | FailedFetch | None:
        queue = self.outcomes.get(canonical)
        return queue.popleft() if queue else None


ProgressHook = Callable[[PageResult, Counts], None]


def software_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {
        "drarena": __version__,
        "warcio": version("warcio"),
        "aiohttp": version("aiohttp"),
        "python": platform.python_version(),
    }


@dataclass
class Crawler:
    """Runs one crawl. Clock, record ids and the progress hook are injectable for tests."""

    spec: CrawlSpec
    out: Path
    resume: bool = False
    clock: Clock = utc_now
    new_id: IdFactory = new_record_id
    on_page: ProgressHook | None = None
    progress: bool = True
    counts: Counts = field(default_factory=Counts)  # so far; replaced, never changed
    # set by a signal handler: stop after the page being committed (see web/commands.py)
    stop_requested: bool = False

    def __post_init__(self) -> None:
        self.scope = Scope(self.spec)
        self.policy = FetchPolicy(
            self.spec.user_agent,
            self.spec.timeout_s,
            self.spec.max_bytes,
            self.spec.allow_private_addresses,
        )
        self.prior = Prior()
        self._gates: dict[str, HostGate] = {}
        self._robots: dict[str, asyncio.Task[tuple[RobotFileParser, list[Hop]]]] = {}
        self._robots_committed: set[str] = set()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warc-writer")

    # -- setup ------------------------------------------------------------------------------

    def up_to_date(self) -> bool:
        """True when `out` already holds a complete snapshot of exactly this spec."""
        if not (self.out / "manifest.json").is_file():
            return False
        manifest = load_manifest(self.out)
        return manifest.complete and manifest.spec == self.spec.model_dump(mode="json")

    def _prepare_writer(self) -> SnapshotWriter | None:
        """None when an identical complete snapshot is already there (nothing to do)."""
        spec_dict = self.spec.model_dump(mode="json")
        writer = SnapshotWriter(
            self.out,
            self.spec.name,
            spec_dict,
            software_versions(),
            clock=self.clock,
            new_id=self.new_id,
        )
        if not (self.out / "manifest.json").exists():
            if self.resume and self.out.exists() and any(self.out.glob("*.warc.gz")):
                raise DrarenaError(
                    f"{self.out}: has WARC files but no manifest.json; cannot resume"
                )
            if self.out.exists() and (not self.out.is_dir() or any(self.out.iterdir())):
                # someone else's folder: the CDXJ and manifest would land on their files
                raise DrarenaError(
                    f"{self.out}: exists and is not a snapshot; remove it or pass another --out"
                )
            return writer
        manifest: Manifest = load_manifest(self.out)
        if manifest.spec != spec_dict:
            raise DrarenaError(
                f"{self.out}: holds a snapshot of a different spec; "
                "remove the folder or use another --out"
            )
        if manifest.complete:
            return None
        if not self.resume:
            raise DrarenaError(
                f"{self.out}: holds an interrupted snapshot; continue it with "
                "--resume or remove the folder"
            )
        _cut_back(self.out, manifest.warc_files)
        with Snapshot.open(self.out) as snap:
            self.prior = Prior.load(snap)
            for stored in snap.iter_responses():
                if not stored.revisit and stored.body:
                    writer.payloads.setdefault(
                        stored.payload_digest,
                        StoredPayload(stored.url, stored.warc_date, stored.record_id),
                    )
            cdxj = (self.out / "index.cdxj").read_text(encoding="utf-8").splitlines()
        sizes = {f.name: f.size for f in manifest.warc_files}
        cdxj = [line for line in cdxj if _covered(line, sizes)]
        writer.prior_files = manifest.warc_files
        writer.prior_cdxj = tuple(cdxj)
        writer.started_at = manifest.started_at
        return writer

    # -- fetching ----------------------------------------------------------------------------

    def _gate(self, url: str) -> HostGate:
        key = url_host_port(url)
        if key not in self._gates:
            self._gates[key] = HostGate(self.spec.per_host_concurrency, self.spec.per_host_delay_s)
        return self._gates[key]

    async def _get(self, session: ClientSession, url: str) -> Hop:
        stored = self.prior.take(canonicalize_url(url))
        if isinstance(stored, StoredResponse):
            return hop_from_stored(stored)
        if isinstance(stored, FailedFetch):
            return Hop(url, failure=stored.kind)
        result = await fetch_once(session, url, self.policy, self._gate(url))
        if isinstance(result, FetchFailure):
            return Hop(url, failure=result.kind, fresh=result)
        return hop_from_exchange(result, self.spec.max_bytes)

    async def _load_robots(
        self, session: ClientSession, origin: str
    ) -> tuple[RobotFileParser, list[Hop]]:
        """RFC 9309: 4xx means no rules; 5xx or unreachable means disallow everything.
        A robots.txt we refused ourselves (private address) blocks nothing: the page is
        refused for the same reason and recorded with it."""
        url = origin + "/robots.txt"
        hops: list[Hop] = []
        for _ in range(self.spec.max_redirects + 1):
            hop = await self._get(session, url)
            hops.append(hop)
            if (
                hop.location
                and scheme_of(hop.location) in ("http", "https")
                and _canonical_or_none(hop.location) is not None
            ):
                url = hop.location
                continue
            break
        last = hops[-1]
        parser = RobotFileParser()
        if last.failure in POLICY_FAILURES:
            parser.parse([])  # the page itself meets the same refusal, recorded as such
        elif last.failure or last.status >= 500 or last.location:
            parser.parse(["User-agent: *", "Disallow: /"])
        elif last.status >= 400:
            parser.parse([])
        else:
            parser.parse(last.body.decode("utf-8", "replace").splitlines())
        return parser, hops

    async def _robots_for(self, session: ClientSession, url: str) -> RobotFileParser | None:
        if not self.spec.robots:
            return None
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            self._robots[origin] = asyncio.ensure_future(self._load_robots(session, origin))
        parser, _ = await self._robots[origin]
        return parser

    async def _fetch_page(self, session: ClientSession, url: str, depth: int) -> PageResult:
        hops: list[Hop] = []
        chain: set[str] = set()
        current = url
        while True:
            canonical = canonicalize_url(current)
            robots = await self._robots_for(session, current)
            if robots is not None and not robots.can_fetch(self.spec.user_agent, current):
                stored = self.prior.take(canonical)
                failure = FetchFailure(current, "robots", "disallowed by robots.txt")
                hops.append(Hop(current, failure="robots", fresh=None if stored else failure))
                break
            chain.add(canonical)
            hop = await self._get(session, current)
            hops.append(hop)
            if not hop.location:
                break
            target = hop.location
            target_canon = _canonical_or_none(target)
            problem = None
            scheme = scheme_of(target)
            if scheme is not None and scheme not in ("http", "https"):
                problem = ("bad_scheme", f"redirect to non-http(s) URL {target[:200]}")
            elif target_canon is None:
                problem = ("bad_url", f"redirect to malformed URL {target[:200]}")
            elif target_canon in chain:
                problem = ("redirect_loop", f"redirect back to {target_canon}")
            elif len(hops) > self.spec.max_redirects:
                problem = ("too_many_redirects", f"more than {self.spec.max_redirects} redirects")
            elif not self.scope.allows(target_canon):
                break  # redirect leaves the scope: keep the 3xx, do not follow
            if problem is not None:
                kind, detail = problem
                # a target that cannot be canonicalized is keyed by its raw form (see
                # Snapshot.iter_failures), so a resume takes its record instead of a second one
                stored = self.prior.take(target_canon or target)
                hops.append(
                    Hop(
                        target,
                        failure=kind,
                        fresh=None if stored else FetchFailure(target, kind, detail),
                    )
                )
                break
            current = target
        final = hops[-1]
        links: tuple[str, ...] = ()
        if (
            not final.failure
            and final.status == 200
            and final.content_type in HTML_TYPES
            and depth < self.spec.max_depth
        ):
            links = tuple(extract_links(final.body, final.url))
        return PageResult(url, depth, tuple(hops), links)

    # -- the BFS ------------------------------------------------------------------------------

    def _commit(self, writer: SnapshotWriter, robots: list[Hop], page: PageResult) -> None:
        """Write and count one page (and any robots.txt fetched for it); runs in the writer
        thread, one page at a time in frontier order."""
        for hop in robots:
            self._write_hop(writer, hop)
        self.counts = self.counts.plus(Counts(pages=1))
        for hop in page.hops:
            self.counts = self.counts.plus(hop_counts(hop))
            revisit = self._write_hop(writer, hop)
            self.counts = self.counts.plus(Counts(revisits=int(revisit)))
        writer.checkpoint(self.counts)  # a SIGKILL from here on resumes after this page

    def _robots_to_commit(self) -> list[Hop]:
        hops: list[Hop] = []
        for origin, task in sorted(self._robots.items()):
            if origin not in self._robots_committed and task.done() and not task.cancelled():
                self._robots_committed.add(origin)
                hops.extend(task.result()[1])
        return hops

    async def _commit_in_thread(self, writer: SnapshotWriter, page: PageResult) -> None:
        """gzip and hashing release the GIL, so writing overlaps with fetching; an
        interruption waits for the record being written, never leaving half of one."""
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self._pool, self._commit, writer, self._robots_to_commit(), page)
        try:
            await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            raise

    @staticmethod
    def _write_hop(writer: SnapshotWriter, hop: Hop) -> bool:
        """Write a fresh hop; True when it is (or, from the snapshot, was) a revisit."""
        if isinstance(hop.fresh, Exchange):
            return writer.write_exchange(hop.fresh)[1]
        if isinstance(hop.fresh, FetchFailure):
            writer.write_failure(hop.fresh)
        return hop.revisit

    async def _run_level(
        self,
        session: ClientSession,
        writer: SnapshotWriter,
        level: list[str],
        depth: int,
        bar: tqdm[NoReturn] | None,
        seen: set[str],
    ) -> list[str]:
        """Fetch one BFS level; commit in frontier order; return its links in that order."""
        window = max(self.spec.concurrency, 1)
        tasks: list[asyncio.Task[PageResult]] = []
        links: list[str] = []
        try:
            for index in range(len(level)):
                while len(tasks) < min(len(level), index + window):
                    tasks.append(
                        asyncio.ensure_future(self._fetch_page(session, level[len(tasks)], depth))
                    )
                page = await tasks[index]
                await self._commit_in_thread(writer, page)
                links.extend(page.links)
                seen.update(c for hop in page.hops if (c := _canonical_or_none(hop.url)))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(
                        MB=f"{self.counts.bytes / 1e6:.1f}",
                        errors=self.counts.fetch_errors + self.counts.http_errors,
                        refresh=False,
                    )
                if self.on_page is not None:
                    self.on_page(page, self.counts)
                if self.stop_requested:
                    raise asyncio.CancelledError("stop requested")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return links

    async def run(self) -> Manifest | None:
        """Crawl; returns the manifest, or None if the snapshot was already complete."""
        writer = self._prepare_writer()
        if writer is None:
            return None
        writer.open()
        writer.checkpoint(self.counts)
        complete = False
        bar = None
        if self.progress:
            from tqdm import tqdm

            bar = tqdm(
                total=self.spec.max_pages, unit="page", desc=self.spec.name, dynamic_ncols=True
            )
        session = make_session(self.policy, self.spec.concurrency * 2)
        try:
            seen: set[str] = set()
            level: list[str] = []
            for seed in self.spec.seeds:
                canonical = canonicalize_url(seed)
                if canonical not in seen:
                    seen.add(canonical)
                    level.append(canonical)
            depth = 0
            budget = self.spec.max_pages
            while level and budget > 0:
                batch = level[:budget]
                budget -= len(batch)
                found = await self._run_level(session, writer, batch, depth, bar, seen)
                level = []
                if depth < self.spec.max_depth:
                    for link in found:
                        target = _canonical_or_none(link)
                        if target and target not in seen and self.scope.allows(target):
                            seen.add(target)
                            level.append(target)
                depth += 1
            complete = True
        finally:
            for task in self._robots.values():
                task.cancel()
            await asyncio.gather(*self._robots.values(), return_exceptions=True)
            await session.close()
            self._pool.shutdown(wait=True)
            if bar is not None:
                bar.close()
            manifest = writer.close(complete=complete, counts=self.counts)
        return manifest


def _cut_back(folder: Path, files: tuple[FileDigest, ...]) -> None:
    """Cut each WARC file back to the size its manifest entry records. A crawl killed with
    SIGKILL leaves the manifest of its last checkpoint (see SnapshotWriter.checkpoint) and a
    WARC file that may run on past it, up to half a record; only bytes whose digest the
    manifest records are kept, and the pages after them are fetched again."""
    for item in files:
        path = folder / item.name
        size = path.stat().st_size
        if size <= item.size:
            continue  # the same size, or shorter: verify names the damage
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            left = item.size
            while left > 0 and (chunk := fh.read(min(left, 1 << 20))):
                digest.update(chunk)
                left -= len(chunk)
        if digest.hexdigest() != item.sha256:
            raise DrarenaError(
                f"{path}: its first {item.size} bytes are not those the "
                "manifest records; cannot resume"
            )
        os.truncate(path, item.size)


def _covered(line: str, sizes: dict[str, int]) -> bool:
    """Whether a CDXJ line points inside the part of a WARC file the manifest covers (a kill
    between the CDXJ and the manifest of a checkpoint leaves lines past it)."""
    try:
        fields = json.loads(line.split(" ", 2)[2])
        return int(fields["offset"]) < sizes.get(fields["filename"], -1)
    except (ValueError, KeyError, TypeError, IndexError):
        return False


def run_crawl(
    spec: CrawlSpec, out: Path, *, resume: bool = False, progress: bool = True
) -> Manifest | None:
    """Synchronous entry point; Ctrl-C leaves a valid snapshot marked incomplete."""
    return asyncio.run(Crawler(spec, out, resume=resume, progress=progress).run())
