"""The live web as one object: fetch pages and search-provider answers, record every exchange
into a new capture snapshot, or answer from a finished capture without any network.

Why one object with a private event loop: agents, the Examiner and tree expansion call it from
worker threads and from inside their own asyncio loops. A background loop thread owns the
aiohttp sessions, the per-host politeness gates and the WARC writer, so records are written by
one thread. Each URL is fetched at most once per run and its first answer is the answer
(failures included): a page reads the same for every agent, and the capture replays exactly.
Fetches go through the crawler's layer (drarena/web/crawling/fetch.py): private addresses and
non-HTTP schemes refused, bodies capped, robots.txt obeyed per origin (itself captured).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import weakref
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from pydantic import BaseModel, ConfigDict, Field, field_validator

from drarena import __version__
from drarena.corpus.page import PageExtract, detect_encoding, extract_page
from drarena.errors import DrarenaError
from drarena.quoting import shown
from drarena.web.crawling.crawl import (
    POLICY_FAILURES,
    Hop,
    hop_counts,
    hop_from_exchange,
    software_versions,
)
from drarena.web.crawling.fetch import FetchPolicy, HostGate, fetch_once, make_session
from drarena.web.crawling.spec import MAX_DELAY_S, MAX_TIMEOUT_S
from drarena.web.warc.manifest import Counts
from drarena.web.warc.snapshot import Snapshot, StoredResponse
from drarena.web.warc.urls import ALLOWED_SCHEMES, canonicalize_url, safe_file_name, url_host_port
from drarena.web.warc.warcfile import MAX_BODY_BYTES, sha1_b32
from drarena.web.warc.writer import (
    Clock,
    Exchange,
    FetchFailure,
    IdFactory,
    SnapshotWriter,
    new_record_id,
    storable_field,
    utc_now,
    warc_date,
)

if TYPE_CHECKING:
    import aiohttp

T = TypeVar("T")
REDACTED = "[redacted]"
# Request headers whose values never reach the WARC (API keys, tokens, cookies).
SECRET_HEADER = re.compile(r"auth|token|key|secret|cookie|session", re.I)
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$")


class LiveWebSettings(BaseModel):
    """How live mode fetches: the crawler's protections, with live-mode defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_agent: str = Field(
        default=f"drarena/{__version__} (deep-research arena; live mode)", min_length=1
    )
    timeout_s: float = Field(default=20.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    max_bytes: int = Field(
        default=2_000_000,
        ge=1,
        le=MAX_BODY_BYTES,
        description="cap on one response body, and where decoding stops (at most 64 MiB)",
    )
    per_host_concurrency: int = Field(default=2, ge=1)
    per_host_delay_s: float = Field(default=1.0, ge=0, le=MAX_DELAY_S, allow_inf_nan=False)
    respect_robots: bool = True
    allow_private_addresses: bool = False
    connect_to: dict[str, str] = Field(
        default_factory=dict,
        description='"host:port" -> "host:port" actually connected to '
        "(curl --connect-to); URLs and records keep the original origin",
    )
    max_redirects: int = Field(default=5, ge=0, le=20)

    @field_validator("connect_to")
    @classmethod
    def _host_ports(cls, value: dict[str, str]) -> dict[str, str]:
        for item in (*value, *value.values()):
            if not _HOST_PORT.match(item):
                raise ValueError(f"{item!r} is not host:port")
        return value

    def policy(self, *, trusted: bool = False) -> FetchPolicy:
        """`trusted`: a search provider's configured endpoint, which may be on loopback
        (a self-hosted SearXNG); pages found on the web never are."""
        return FetchPolicy(
            self.user_agent,
            self.timeout_s,
            self.max_bytes,
            self.allow_private_addresses or trusted,
            tuple(sorted(self.connect_to.items())),
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """A fetch without a response (refused, unreachable, robots), as recorded."""

    url: str
    kind: str
    detail: str

    def message(self) -> str:
        return f"cannot fetch {self.url[:300]}: {self.kind}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Probe:
    """An unrecorded request's outcome, for provider preflight checks."""

    status: int = 0
    body: bytes = b""
    content_type: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class LivePage:
    """A fetched page and its text, extracted as the frozen corpus extracts pages."""

    requested_url: str
    response: StoredResponse
    extract: PageExtract

    @property
    def url(self) -> str:
        """Canonical URL of the final hop (after redirects)."""
        return self.response.canonical_url

    @property
    def title(self) -> str:
        return self.extract.title

    @property
    def text(self) -> str:
        return self.extract.text


def one_line(text: str) -> str:
    """As the WARC writer stores failure details, so live and replayed messages match."""
    return " ".join(text.split())[:500]


def check_url(url: str) -> str:
    """The canonical http(s) URL to fetch, or a one-line error."""
    if not isinstance(url, str) or not url.strip():
        raise DrarenaError("live fetch needs a URL")
    url = url.strip()
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:  # `http://[oops/`
        raise DrarenaError(f"{shown(url)}: not a valid URL ({shown(str(exc))})") from None
    if scheme not in ALLOWED_SCHEMES:
        raise DrarenaError(
            f"{shown(url)}: scheme {shown(scheme, 40) or '(none)'!r} is not http(s); "
            "live mode fetches web pages only"
        )
    try:
        canonical = canonicalize_url(url)
    except ValueError as exc:
        raise DrarenaError(f"{shown(url)}: not a valid URL ({shown(str(exc))})") from None
    if not urlsplit(canonical).hostname:
        raise DrarenaError(f"{shown(url)}: URL has no host")
    if not canonical.isprintable() or " " in canonical:  # `http://\x00/`: path and query
        # are percent-encoded by now, a host is not; aiohttp refused it only at the fetch
        raise DrarenaError(f"{shown(url)}: not a valid URL (a control character or blank)")
    return canonical


def robots_rules(outcome: StoredResponse | Failure) -> tuple[list[str], str]:
    """robots.txt lines per RFC 9309 as the crawler reads them (4xx means no rules, 5xx or
    unreachable means disallow all; a robots.txt our own policy refused blocks nothing, the
    page meets the same refusal), and what a blocked page is told."""
    everything = ["User-agent: *", "Disallow: /"]
    if isinstance(outcome, Failure):
        if outcome.kind in POLICY_FAILURES:
            return [], ""
        return everything, f"robots.txt unreachable ({outcome.kind}: {outcome.detail})"
    if outcome.status >= 500:
        return everything, f"robots.txt answered HTTP {outcome.status}"
    if outcome.location or (300 <= outcome.status < 400 and outcome.header("Location")):
        # the chain ended on a redirect: too many, or to no http(s) URL (ftp:, a bad port,
        # a Location that is no URL), which the crawler reads as unavailable: disallow all
        return everything, "robots.txt redirects too many times, or to no http(s) URL"
    if outcome.status >= 400:
        return [], ""
    return outcome.body.decode("utf-8", "replace").splitlines(), "disallowed by robots.txt"


def extract_response(response: StoredResponse) -> PageExtract:
    """Text of a successful HTML (or plain text) response; anything else is one line."""
    from drarena.corpus.extract import full_content_type, is_html

    where = response.url[:300]
    if not 200 <= response.status < 300:
        raise DrarenaError(f"{where}: HTTP {response.status}")
    if is_html(response):
        page = extract_page(response.body, response.canonical_url, full_content_type(response))
        if page.error:
            raise DrarenaError(f"{where}: {page.error}")
        return page
    if response.content_type == "text/plain":
        encoding = detect_encoding(response.body, full_content_type(response))
        text = response.body.decode(encoding, errors="replace").strip()
        return PageExtract(
            url=response.canonical_url,
            text=text,
            encoding=encoding,
            extractor="fallback",
            truncated=response.truncated,
        )
    raise DrarenaError(f"{where}: not a web page ({response.content_type or 'no content type'})")


def _stop_loop(
    loop: asyncio.AbstractEventLoop,
    thread: threading.Thread,
    sessions: dict[Any, aiohttp.ClientSession],
) -> None:
    if not thread.is_alive():
        return

    async def close_sessions() -> None:
        for session in sessions.values():
            await session.close()

    try:
        asyncio.run_coroutine_threadsafe(close_sessions(), loop).result(timeout=5)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)


class LiveWeb:
    """Live mode (`capture_dir`: record into a new snapshot there; None: record nothing) or
    replay mode (`replay_from`: a capture snapshot; a miss is an error, no network)."""

    def __init__(
        self,
        settings: LiveWebSettings | None = None,
        *,
        capture_dir: Path | None = None,
        replay_from: Path | None = None,
        clock: Clock = utc_now,
        new_id: IdFactory = new_record_id,
        name: str = "live",
    ) -> None:
        if capture_dir is not None and replay_from is not None:
            raise DrarenaError(
                "live web: give capture_dir (live) or replay_from (replay), not both"
            )
        self.settings = settings or LiveWebSettings()
        self.capture_dir = Path(capture_dir) if capture_dir is not None else None
        self.replay_from = Path(replay_from) if replay_from is not None else None
        self.clock = clock
        self.new_id = new_id
        self.name = safe_file_name(name, "capture name")
        self.providers: list[dict[str, Any]] = []
        if (
            self.capture_dir is not None
            and self.capture_dir.exists()
            and (not self.capture_dir.is_dir() or any(self.capture_dir.iterdir()))
        ):
            raise DrarenaError(
                f"{self.capture_dir}: capture folder exists and is not empty; "
                "a live run records into a new folder"
            )
        self._snapshot = Snapshot.open(self.replay_from) if self.replay_from else None
        self._replay_failures: dict[str, Failure] | None = None
        self._writer: SnapshotWriter | None = None
        self._counts = Counts()  # replaced as pages are fetched, never changed
        self._pinned: datetime | None = None
        self._issued: list[str] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._finalizer: weakref.finalize[Any, LiveWeb] | None = None
        self._result: Path | None = None
        self._cache: dict[str, asyncio.Future[StoredResponse | Failure]] = {}
        self._robots: dict[str, asyncio.Future[tuple[RobotFileParser, str]]] = {}
        self._gates: dict[str, HostGate] = {}
        self._sessions: dict[tuple[tuple[str, str], ...] | None, aiohttp.ClientSession] = {}
        self._pages: dict[str, LivePage] = {}
        self._pages_lock = threading.Lock()

    # -- identity ----------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        return self._snapshot is None

    @property
    def mode(self) -> str:
        return "live" if self.live else "replay"

    def record_provider(self, spec: Mapping[str, Any]) -> None:
        """Note a search provider's resolved {kind, args} (no secrets) in the capture's spec."""
        item = json.loads(json.dumps(dict(spec), sort_keys=True, default=str))
        if item not in self.providers:
            self.providers.append(item)

    def capture_spec(self) -> dict[str, Any]:
        return {
            "kind": "live-capture",
            "live": True,
            "name": self.name,
            "providers": list(self.providers),
            "settings": self.settings.model_dump(mode="json"),
            "user_agent": self.settings.user_agent,
            "robots": self.settings.respect_robots,
        }

    # -- public, synchronous -----------------------------------------------------------------

    def fetch(self, url: str) -> StoredResponse:
        """The final response for `url`, redirects followed (every hop recorded)."""
        return self._submit(self._fetch_chain(url))

    def fetch_api(
        self, url: str, headers: Mapping[str, str] | None = None, *, secret: Iterable[str] = ()
    ) -> StoredResponse:
        """A search provider's answer: no robots.txt, no redirects followed. Values of
        headers named in `secret` or looking secret (key, token, auth) are sent but recorded
        as [redacted]."""
        pairs = tuple(sorted((str(k), str(v)) for k, v in (headers or {}).items()))
        hidden = frozenset(s.lower() for s in secret) | frozenset(
            k.lower() for k, _ in pairs if SECRET_HEADER.search(k)
        )
        outcome = self._submit(self._get(check_url(url), robots=False, api=pairs, secret=hidden))
        if isinstance(outcome, Failure):
            raise DrarenaError(outcome.message())
        return outcome

    def page(self, url: str) -> LivePage:
        """The page at `url`, fetched and extracted once per run."""
        key = check_url(url)
        with self._pages_lock:
            cached = self._pages.get(key)
        if cached is not None:
            return cached
        response = self.fetch(key)
        page = LivePage(url, response, extract_response(response))
        with self._pages_lock:
            return self._pages.setdefault(key, page)

    def probe(self, url: str, headers: Mapping[str, str] | None = None) -> Probe:
        """One request that is neither recorded nor cached (provider preflight)."""
        if not self.live:
            raise DrarenaError("live web: replay mode makes no requests")
        pairs = tuple(sorted((str(k), str(v)) for k, v in (headers or {}).items()))
        return self._submit(self._probe(check_url(url), pairs))

    def close(self) -> Path | None:
        """Finish the capture (WARC, sorted CDXJ, manifest; complete) and return its folder;
        None without a capture. Call it once the other calls have returned; idempotent."""
        with self._lock:
            if self._closed:
                return self._result
            self._closed = True
            loop, thread = self._loop, self._thread
        if self._finalizer is not None:
            self._finalizer.detach()
        if loop is not None and thread is not None:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
        if self.capture_dir is not None:
            writer = self._open_writer()
            writer.spec = self.capture_spec()
            writer.close(complete=True, counts=self._counts)
            self._result = self.capture_dir
        if self._snapshot is not None:
            self._snapshot.close()
        return self._result

    def __enter__(self) -> LiveWeb:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the loop thread ---------------------------------------------------------------------

    def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._closed:
                coro.close()
                raise DrarenaError("live web: already closed")
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, daemon=True, name=f"drarena-live-{self.name}"
                )
                self._thread.start()
                # a web nobody closed (`drarena agent ask`) still closes its sessions at exit
                self._finalizer = weakref.finalize(
                    self, _stop_loop, self._loop, self._thread, self._sessions
                )
            loop = self._loop
        if threading.current_thread() is self._thread:
            coro.close()
            raise DrarenaError("live web: blocking call from its own event loop thread")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def _shutdown(self) -> None:
        pending: list[asyncio.Future[Any]] = [*self._cache.values(), *self._robots.values()]
        for future in pending:
            future.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for session in self._sessions.values():
            await session.close()

    async def _fetch_chain(self, url: str) -> StoredResponse:
        current = check_url(url)
        if self.live and current not in self._cache:
            self._counts = self._counts.plus(Counts(pages=1))
        chain = {current}
        for _ in range(self.settings.max_redirects + 1):
            outcome = await self._get(current, robots=self.settings.respect_robots)
            if isinstance(outcome, Failure):
                raise DrarenaError(outcome.message())
            target = outcome.location
            if target is None:
                return outcome
            try:
                current = check_url(target)
            except DrarenaError as exc:
                raise DrarenaError(f"cannot fetch {shown(url, 300)}: redirect: {exc}") from None
            if current in chain:
                raise DrarenaError(f"cannot fetch {shown(url, 300)}: redirect loop at {current}")
            chain.add(current)
        raise DrarenaError(
            f"cannot fetch {shown(url, 300)}: more than {self.settings.max_redirects} redirects"
        )

    async def _get(
        self,
        url: str,
        *,
        robots: bool,
        api: tuple[tuple[str, str], ...] | None = None,
        secret: frozenset[str] = frozenset(),
    ) -> StoredResponse | Failure:
        """One hop, at most once per canonical URL per run (`url` is canonical)."""
        future = self._cache.get(url)
        if future is None:
            future = self._cache[url] = asyncio.ensure_future(
                self._obtain(url, robots, api, secret)
            )
        return await asyncio.shield(future)

    async def _obtain(
        self,
        url: str,
        robots: bool,
        api: tuple[tuple[str, str], ...] | None,
        secret: frozenset[str],
    ) -> StoredResponse | Failure:
        if self._snapshot is not None:
            return self._replayed(url)
        if robots:
            parser, reason = await self._robots_for(url)
            if not parser.can_fetch(self.settings.user_agent, url):
                return self._record_failure(FetchFailure(url, "robots", reason))
        result = await fetch_once(
            self._session(api), url, self.settings.policy(trusted=api is not None), self._gate(url)
        )
        if isinstance(result, FetchFailure):
            return self._record_failure(result)
        return self._record(result, secret)

    async def _probe(self, url: str, pairs: tuple[tuple[str, str], ...]) -> Probe:
        result = await fetch_once(
            self._session(pairs), url, self.settings.policy(trusted=True), self._gate(url)
        )
        if isinstance(result, FetchFailure):
            return Probe(error=f"{result.kind}: {one_line(result.detail)}")
        hop = hop_from_exchange(result, self.settings.max_bytes)
        return Probe(result.status, hop.body, hop.content_type)

    async def _robots_for(self, url: str) -> tuple[RobotFileParser, str]:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        future = self._robots.get(origin)
        if future is None:
            future = self._robots[origin] = asyncio.ensure_future(self._load_robots(origin))
        return await asyncio.shield(future)

    async def _load_robots(self, origin: str) -> tuple[RobotFileParser, str]:
        url = origin + "/robots.txt"
        outcome = await self._get(url, robots=False)
        for _ in range(self.settings.max_redirects):
            target = outcome.location if isinstance(outcome, StoredResponse) else None
            if target is None:
                break
            try:  # a redirect to a bad port or no URL ends the chain, as one to ftp: does
                target = check_url(target)
            except DrarenaError:
                break
            outcome = await self._get(target, robots=False)
        lines, reason = robots_rules(outcome)
        parser = RobotFileParser()
        parser.parse(lines)
        return parser, reason

    def _session(self, api: tuple[tuple[str, str], ...] | None) -> aiohttp.ClientSession:
        session = self._sessions.get(api)
        if session is None:
            session = make_session(self.settings.policy(trusted=api is not None), 16)
            session.headers.update(dict(api or ()))
            self._sessions[api] = session
        return session

    def _gate(self, url: str) -> HostGate:
        key = url_host_port(url)
        if key not in self._gates:
            self._gates[key] = HostGate(
                self.settings.per_host_concurrency, self.settings.per_host_delay_s
            )
        return self._gates[key]

    # -- replay ------------------------------------------------------------------------------

    def _replayed(self, url: str) -> StoredResponse | Failure:
        assert self._snapshot is not None
        stored = self._snapshot.lookup(url)
        if stored is not None:
            return stored
        if self._replay_failures is None:
            self._replay_failures = {
                f.canonical_url: Failure(f.url, f.kind, f.detail)
                for f in self._snapshot.iter_failures()
            }
        failure = self._replay_failures.get(url)
        if failure is not None:
            return failure
        raise DrarenaError(
            f"{url[:300]}: not in the capture {self.replay_from} (replay "
            "answers only what the live run fetched)"
        )

    # -- recording ---------------------------------------------------------------------------

    def _writer_clock(self) -> datetime:
        return self._pinned if self._pinned is not None else self.clock()

    def _writer_id(self) -> str:
        record_id = self.new_id()
        self._issued.append(record_id)
        return record_id

    def _open_writer(self) -> SnapshotWriter:
        if self._writer is None:
            assert self.capture_dir is not None
            self._writer = SnapshotWriter(
                self.capture_dir,
                self.name,
                self.capture_spec(),
                software_versions(),
                clock=self._writer_clock,
                new_id=self._writer_id,
            )
            self._writer.open()
        return self._writer

    def _record(self, exchange: Exchange, secret: frozenset[str]) -> StoredResponse:
        exchange = replace(
            exchange,
            reason=storable_field(exchange.reason),
            response_headers=tuple(
                (storable_field(k), storable_field(v)) for k, v in exchange.response_headers
            ),
        )
        if secret:
            exchange = replace(
                exchange,
                request_headers=tuple(
                    (k, REDACTED if k.lower() in secret else v) for k, v in exchange.request_headers
                ),
            )
        hop = hop_from_exchange(exchange, self.settings.max_bytes)
        self._counts = self._counts.plus(hop_counts(hop))
        moment = self.clock()
        record_id, warc_file, offset = "", "", 0
        digest, revisit = sha1_b32(exchange.entity), False
        if self.capture_dir is not None:
            writer = self._open_writer()
            self._pinned = moment
            self._issued.clear()
            try:
                digest, revisit = writer.write_exchange(exchange)
            finally:
                self._pinned = None
            # write_exchange draws the response record's id first; its CDXJ line says where
            # the record went (tests check the result equals what replay reads back).
            record_id = self._issued[0]
            where = json.loads(writer._cdxj[-1].split(" ", 2)[2])
            warc_file, offset = str(where["filename"]), int(where["offset"])
            self._counts = self._counts.plus(Counts(revisits=int(revisit)))
        return StoredResponse(
            url=exchange.url,
            canonical_url=canonicalize_url(exchange.url),
            status=exchange.status,
            headers=exchange.response_headers,
            body=hop.body,
            content_type=hop.content_type,
            record_id=record_id,
            payload_digest=digest,
            warc_date=warc_date(moment),
            warc_file=warc_file,
            offset=offset,
            truncated=hop.truncated,
            revisit=revisit,
        )

    def _record_failure(self, failure: FetchFailure) -> Failure:
        self._counts = self._counts.plus(hop_counts(Hop(failure.url, failure=failure.kind)))
        if self.capture_dir is not None:
            writer = self._open_writer()
            self._pinned = self.clock()
            try:
                writer.write_failure(failure)
            finally:
                self._pinned = None
        return Failure(failure.url, failure.kind, one_line(failure.detail))
