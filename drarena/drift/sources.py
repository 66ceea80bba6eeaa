"""Where the current version of each snapshot page comes from: the live web or a later snapshot.

Why the crawler's fetch layer: a live re-fetch must keep the crawler's protections (no
private addresses unless allowed, http(s) only, size caps, per-host politeness, robots.txt),
and redirects are followed one hop at a time so every hop is recorded. New bodies are then
extracted with the very extractor that made the snapshot's docs.jsonl; a body byte-identical
to the snapshot's is not extracted again (same bytes, same extractor: same text).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from drarena.drift.pages import NewVersion
from drarena.web.warc.snapshot import Snapshot, StoredResponse
from drarena.web.warc.urls import ALLOWED_SCHEMES, canonicalize_url, scheme_of, url_host_port

if TYPE_CHECKING:
    from aiohttp import ClientSession

    from drarena.corpus.extract import ResponseLike
    from drarena.web.crawling.fetch import FetchPolicy, HostGate
    from drarena.web.warc.writer import Exchange, FetchFailure, SnapshotWriter


@dataclasses.dataclass(frozen=True, slots=True)
class Fetched:
    """A page's current bytes before extraction (body decoded; content_type is the full
    Content-Type header, charset included, as extraction wants it)."""

    url: str
    final_url: str
    status: int
    hops: tuple[str, ...] = ()
    failure: str = ""
    detail: str = ""
    body: bytes = b""
    content_type: str = ""

    @property
    def media_type(self) -> str:
        return self.content_type.split(";", 1)[0].strip().lower()


@dataclasses.dataclass(frozen=True, slots=True)
class LiveOptions:
    """Politeness and safety of a live re-fetch (defaults come from the snapshot's spec)."""

    user_agent: str
    timeout_s: float = 20.0
    max_bytes: int = 4 * 1024 * 1024
    allow_private: bool = False
    connect_to: tuple[tuple[str, str], ...] = ()
    concurrency: int = 8
    per_host_concurrency: int = 2
    delay_s: float = 0.5
    max_redirects: int = 5
    robots: bool = True


def _header(headers: Iterable[tuple[str, str]], name: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return ""


# -- live ---------------------------------------------------------------------------------


class LiveSource:
    """Re-fetches pages over HTTP through drarena.web.crawling.fetch; one instance per drift run."""

    def __init__(
        self, options: LiveOptions, progress: bool = True, capture: SnapshotWriter | None = None
    ) -> None:
        from drarena.web.crawling.fetch import FetchPolicy

        self.options = options
        self.progress = progress
        self.capture = capture  # an opened writer: every exchange and failure goes into it
        self.policy: FetchPolicy = FetchPolicy(
            options.user_agent,
            options.timeout_s,
            options.max_bytes,
            options.allow_private,
            options.connect_to,
        )
        self._gates: dict[str, HostGate] = {}
        self._robots: dict[str, asyncio.Task[RobotFileParser | None]] = {}

    def fetch(self, urls: Sequence[str]) -> list[Fetched]:
        return asyncio.run(self.fetch_all(urls))

    async def fetch_all(self, urls: Sequence[str]) -> list[Fetched]:
        from tqdm import tqdm

        from drarena.web.crawling.fetch import make_session

        session = make_session(self.policy, max(1, self.options.concurrency) * 2)
        window = asyncio.Semaphore(max(1, self.options.concurrency))
        bar = tqdm(
            total=len(urls),
            desc="drift fetch",
            unit="page",
            file=sys.stderr,
            disable=not self.progress,
            mininterval=0.5,
        )

        async def one(url: str) -> Fetched:
            async with window:
                result = await self._page(session, url)
            bar.update()
            return result

        try:
            return list(await asyncio.gather(*(one(u) for u in urls)))
        finally:
            for task in self._robots.values():
                task.cancel()
            await asyncio.gather(*self._robots.values(), return_exceptions=True)
            await session.close()
            bar.close()

    def _gate(self, url: str) -> HostGate:
        from drarena.web.crawling.fetch import HostGate

        key = url_host_port(url)
        if key not in self._gates:
            self._gates[key] = HostGate(
                max(1, self.options.per_host_concurrency), self.options.delay_s
            )
        return self._gates[key]

    async def _get(self, session: ClientSession, url: str) -> Exchange | FetchFailure:
        from drarena.web.crawling.fetch import fetch_once
        from drarena.web.warc.writer import FetchFailure

        result = await fetch_once(session, url, self.policy, self._gate(url))
        if self.capture is not None:
            if isinstance(result, FetchFailure):
                self.capture.write_failure(result)
            else:
                self.capture.write_exchange(result)
        return result

    async def _load_robots(self, session: ClientSession, origin: str) -> RobotFileParser | None:
        """RFC 9309: 4xx means no rules, 5xx means disallow all. Unlike the crawler, an
        unreachable robots.txt imposes nothing: the page fetch then fails and says why."""
        from drarena.web.crawling.crawl import hop_from_exchange
        from drarena.web.warc.writer import FetchFailure

        url = origin + "/robots.txt"
        for _ in range(self.options.max_redirects + 1):
            result = await self._get(session, url)
            if isinstance(result, FetchFailure):
                return None
            hop = hop_from_exchange(result, self.options.max_bytes)
            if hop.location:
                url = hop.location
                if scheme_of(url) not in ALLOWED_SCHEMES:  # or no URL at all: no rules
                    return None
                continue
            parser = RobotFileParser()
            if hop.status >= 500:
                parser.parse(["User-agent: *", "Disallow: /"])
            elif hop.status >= 400:
                parser.parse([])
            else:
                parser.parse(hop.body.decode("utf-8", "replace").splitlines())
            return parser
        return None

    async def _allowed(self, session: ClientSession, url: str) -> bool:
        if not self.options.robots:
            return True
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            self._robots[origin] = asyncio.ensure_future(self._load_robots(session, origin))
        parser = await self._robots[origin]
        return parser is None or parser.can_fetch(self.options.user_agent, url)

    async def _page(self, session: ClientSession, url: str) -> Fetched:
        from drarena.web.crawling.crawl import hop_from_exchange
        from drarena.web.warc.writer import FetchFailure

        hops: list[str] = []
        seen = {canonicalize_url(url)}
        current = url
        for _ in range(self.options.max_redirects + 1):
            if not await self._allowed(session, current):
                if self.capture is not None:
                    self.capture.write_failure(
                        FetchFailure(current, "robots", "disallowed by robots.txt")
                    )
                where = "" if current == url else f" (at {current})"
                return Fetched(
                    url, current, 0, tuple(hops), "robots", f"disallowed by robots.txt{where}"
                )
            result = await self._get(session, current)
            if isinstance(result, FetchFailure):
                return Fetched(url, current, 0, tuple(hops), result.kind, result.detail)
            hop = hop_from_exchange(result, self.options.max_bytes)
            hops.append(f"{hop.status} {current}")
            if not hop.location:
                return Fetched(
                    url,
                    current,
                    hop.status,
                    tuple(hops),
                    body=hop.body,
                    content_type=_header(result.response_headers, "content-type"),
                )
            target = hop.location
            if scheme_of(target) not in (*ALLOWED_SCHEMES, None):  # None: bad_url below
                return Fetched(
                    url,
                    target,
                    hop.status,
                    tuple(hops),
                    "bad_scheme",
                    f"redirect to non-http(s) URL {target[:200]}",
                )
            try:
                canonical = canonicalize_url(target)
            except ValueError:
                return Fetched(
                    url,
                    target,
                    hop.status,
                    tuple(hops),
                    "bad_url",
                    f"redirect to malformed URL {target[:200]}",
                )
            if canonical in seen:
                return Fetched(
                    url,
                    target,
                    hop.status,
                    tuple(hops),
                    "redirect_loop",
                    f"redirect back to {canonical}",
                )
            seen.add(canonical)
            current = target
        return Fetched(
            url,
            current,
            0,
            tuple(hops),
            "too_many_redirects",
            f"more than {self.options.max_redirects} redirects",
        )


# -- a later snapshot ---------------------------------------------------------------------


def read_snapshot(snap: Snapshot, urls: Sequence[str], max_redirects: int = 5) -> list[Fetched]:
    """What `snap` holds at each URL, its recorded redirects followed; a URL it never
    captured is `absent` (or the failure it recorded for it)."""
    failures: dict[str, tuple[str, str]] | None = None
    out = []
    for url in urls:
        hops: list[str] = []
        current = url
        result: Fetched | None = None
        for _ in range(max_redirects + 1):
            stored = snap.lookup(current)
            if stored is None:
                if failures is None:
                    failures = {f.canonical_url: (f.kind, f.detail) for f in snap.iter_failures()}
                kind, detail = failures.get(
                    canonicalize_url(current), ("absent", f"not in snapshot {snap.name}")
                )
                result = Fetched(url, current, 0, tuple(hops), kind, detail)
                break
            hops.append(f"{stored.status} {current}")
            target = stored.location
            if not target and 300 <= stored.status < 400 and stored.header("Location"):
                target = stored.header("Location")  # no URL (`http://[oops/`): bad_url below
            if not target:
                result = Fetched(
                    url,
                    current,
                    stored.status,
                    tuple(hops),
                    body=stored.body,
                    content_type=stored.header("Content-Type") or stored.content_type,
                )
                break
            try:
                target_key = canonicalize_url(target)
            except ValueError:  # the capture's bad_url (a bad port, an unparsable Location)
                result = Fetched(
                    url,
                    target,
                    stored.status,
                    tuple(hops),
                    "bad_url",
                    f"redirect to malformed URL {target[:200]}",
                )
                break
            if target_key in {canonicalize_url(h.split(" ", 1)[1]) for h in hops}:
                result = Fetched(
                    url,
                    target,
                    stored.status,
                    tuple(hops),
                    "redirect_loop",
                    f"redirect back to {target}",
                )
                break
            current = target
        out.append(
            result
            or Fetched(
                url,
                current,
                0,
                tuple(hops),
                "too_many_redirects",
                f"more than {max_redirects} redirects",
            )
        )
    return out


# -- extraction ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Body:
    content_type: str
    body: bytes


def _is_html(fetched: Fetched) -> bool:
    from drarena.corpus.extract import is_html

    return is_html(cast("ResponseLike", _Body(fetched.media_type, fetched.body)))


def to_versions(
    fetched: Sequence[Fetched],
    old: Mapping[str, StoredResponse | None],
    workers: int | None = None,
    progress: bool = True,
) -> dict[str, NewVersion]:
    """Extract every new 2xx HTML body that differs from the snapshot's; keyed by URL."""
    import os

    from drarena.corpus.extract import run_extraction
    from drarena.corpus.page import MAX_PAGE_BYTES

    same: set[str] = set()
    jobs = []
    todo: list[Fetched] = []
    for item in fetched:
        if item.failure or not 200 <= item.status < 300 or not _is_html(item):
            continue
        before = old.get(item.url)
        if (
            before is not None
            and before.body == item.body
            and item.final_url == item.url
            and (before.header("Content-Type") or before.content_type) == item.content_type
        ):
            same.add(item.url)
            continue
        todo.append(item)
        jobs.append(
            (item.body, canonicalize_url(item.final_url), item.content_type, MAX_PAGE_BYTES)
        )
    n = workers if workers is not None else min(4, os.cpu_count() or 1)
    pages = run_extraction(jobs, n if len(jobs) >= 16 else 1, progress=progress and bool(jobs))
    texts = {item.url: page for item, page in zip(todo, pages, strict=True)}
    versions = {}
    for item in fetched:
        page = texts.get(item.url)
        text = page.text if page is not None and not page.error else None
        detail = page.error if page is not None and page.error else item.detail
        versions[item.url] = NewVersion(
            url=item.url,
            final_url=item.final_url,
            status=item.status,
            hops=item.hops,
            failure=item.failure,
            detail=detail,
            content_type=item.content_type,
            text=text,
            same_bytes=item.url in same,
        )
    return versions
