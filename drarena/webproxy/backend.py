"""The proxy's answering side: every request is answered from the handler table or the snapshot.

Why a separate loopback HTTP server: the interception (CONNECT, TLS with a per-run CA, HTTP/2)
is mitmproxy's job, and mitmproxy lives in its own virtual environment (its pinned dependencies
conflict with drarena's; docs/frozen-web.md). Its addon (drarena/webproxy/mitm_addon.py)
rewrites every request it receives to this server, with the URL the agent asked for in
TARGET_HEADER. This server never opens a connection itself: it reads the snapshot (the web
room's CDXJ lookup, one WARC member per request, bodies capped by the snapshot's decode limit)
or calls a handler. Every exchange is logged (bounded) so the round's trajectory says what the
agent read.
"""

from __future__ import annotations

import asyncio
import html
import re
import threading
from collections.abc import AsyncIterator, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from aiohttp import web

from drarena.errors import DrarenaError
from drarena.web.serving.serve import MAX_HEAD_BYTES, serving
from drarena.web.warc.snapshot import Snapshot, StoredResponse
from drarena.webproxy.handlers import MAX_REQUEST_BODY, HandlerTable, WebRequest, WebResponse

TARGET_HEADER = "X-Drarena-Target"  # set (always overwritten) by the mitmproxy addon
MISSING_HEADER = "X-Drarena-Not-In-Snapshot"  # on the 404 page for an uncaptured URL
MAX_LOG = 20_000  # exchanges kept per proxy (one answer); later ones are counted only
# Characters of one log (one answer's exchanges become its trajectory's tool events, saved in
# matches.jsonl): URLs, queries and errors, plus ENTRY_CHARS for each entry's other fields.
# Without it an agent asking 20,000 URLs of 8 KB each put 160 MB in memory and in one record.
MAX_LOG_CHARS = 4 << 20
ENTRY_CHARS = 256

# Hop-by-hop and coding headers: the replayed body is the decoded payload, sent afresh.
SKIP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "proxy-connection",
        "proxy-authenticate",
        "upgrade",
        "te",
        "trailer",
        "alt-svc",  # would invite HTTP/3 straight to the host, past the proxy
        "strict-transport-security",
    }
)
# What an HTTP/1 message can carry (RFC 9110 5.1, 5.5): a field name is a token, a value has no
# control characters but HTAB. A foreign archive (or a server the crawler recorded) may hold
# anything else; aiohttp refuses to send such a field (the connection closed, no answer) and
# mitmproxy answers 502 to a name that is no token, so the field is dropped from the replay.
_FIELD_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Statuses a capture is replayed with: a final response of three digits. Anything else in an
# archive (0, 99, 1000) is no status line a client can read, and an interim 1xx as the only
# answer leaves a client waiting for the final one; it is answered 502, marked.
REPLAYABLE_STATUS = range(200, 1000)
UNREPLAYABLE_HEADER = "X-Drarena-Unreplayable"  # on the 502 for a capture that cannot be sent
# Printable ASCII: kept as is when a URL's stray bytes are percent-encoded.
_URL_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))


@dataclass(frozen=True, slots=True)
class FetchEntry:
    """One logged exchange: what was asked, what it got, and from where."""

    method: str
    url: str
    status: int
    kind: str  # handlers.KINDS
    served_url: str = ""  # the capture that answered (another scheme's, after a fallback)
    query: str = ""
    urls: tuple[str, ...] = ()
    bytes: int = 0
    error: str = ""
    read: tuple[str, ...] = ()  # pages whose text a search API's answer carried (WebResponse)

    def chars(self) -> int:
        """What this entry costs of the log's MAX_LOG_CHARS (see there)."""
        return (
            ENTRY_CHARS
            + len(self.method)
            + len(self.url)
            + len(self.served_url)
            + len(self.query)
            + len(self.error)
            + sum(len(u) for u in self.urls)
            + sum(len(u) for u in self.read)
        )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "method": self.method,
            "url": self.url,
            "status": self.status,
            "kind": self.kind,
            "bytes": self.bytes,
        }
        for name in ("served_url", "query", "error"):
            if value := getattr(self, name):
                out[name] = value
        if self.urls:
            out["urls"] = list(self.urls)
        if self.read:  # absent when empty: logs written before the field read the same
            out["read"] = list(self.read)
        return out


@dataclass
class FetchLog:
    """The exchanges of one proxy, in order, capped at `cap` entries and `max_chars` (see
    MAX_LOG_CHARS); exchanges past either are only counted, in `dropped`."""

    cap: int = MAX_LOG
    max_chars: int = MAX_LOG_CHARS
    entries: list[FetchEntry] = field(default_factory=list)
    dropped: int = 0
    chars: int = 0

    def add(self, entry: FetchEntry) -> None:
        size = entry.chars()
        if len(self.entries) < self.cap and self.chars + size <= self.max_chars:
            self.entries.append(entry)
            self.chars += size
        else:
            self.dropped += 1

    def drain(self) -> tuple[list[FetchEntry], int]:
        """(the entries so far, how many more were only counted), clearing the log."""
        out, dropped = self.entries, self.dropped
        self.entries, self.dropped, self.chars = [], 0, 0
        return out, dropped

    def take(self) -> list[FetchEntry]:
        """The entries so far, clearing the log (the count of dropped ones too: drain keeps
        it)."""
        return self.drain()[0]


def not_in_snapshot(url: str, snapshot_name: str, method: str = "GET") -> WebResponse:
    """The 404 page for anything not captured: marked in a header and in the page itself."""
    what = "" if method in ("GET", "HEAD") else f" (only GET requests were captured; got {method})"
    page = (
        "<!doctype html><html><head><meta charset=utf-8><title>Not in the snapshot</title>"
        "</head><body><h1>Not in the snapshot</h1><p>drarena's frozen web "
        f"({html.escape(snapshot_name)}) has no capture of <code>{html.escape(url)}</code>"
        f"{html.escape(what)}. Nothing outside the snapshot is reachable.</p></body></html>\n"
    )
    headers = (("Content-Type", "text/html; charset=utf-8"), (MISSING_HEADER, "1"))
    return WebResponse(404, headers, page.encode("utf-8"), kind="missing")


def unreplayable(url: str, why: str) -> WebResponse:
    """The 502 for a capture the proxy cannot send as captured (or cannot read)."""
    text = f"drarena frozen web: the capture of {url} cannot be replayed ({why})\n"
    headers = (("Content-Type", "text/plain; charset=utf-8"), (UNREPLAYABLE_HEADER, "1"))
    return WebResponse(502, headers, text.encode("utf-8"), kind="refused")


def sendable_headers(headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """`headers` less hop-by-hop and coding fields and any field HTTP/1 cannot carry."""
    return tuple(
        (k, v)
        for k, v in headers
        if k.lower() not in SKIP_HEADERS and _FIELD_NAME.fullmatch(k) and not _CONTROL.search(v)
    )


def request_url(target: str) -> str:
    """The URL asked for, as text that encodes: aiohttp decodes header bytes that are not
    UTF-8 to lone surrogates, which no log, page or JSON answer can hold; they are
    percent-encoded, as a browser sends such bytes."""
    try:
        target.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = target.encode("utf-8", "surrogateescape")  # aiohttp's decoding undone
        except UnicodeEncodeError:  # another lone surrogate (no byte it stood for)
            raw = target.encode("utf-8", "surrogatepass")
        return quote(raw, safe=_URL_SAFE)
    return target


@dataclass
class ProxyTally:
    """Counts over proxies (one per answer): what the run header's `web_proxy` records."""

    proxies: int = 0
    requests: int = 0
    missing: int = 0
    searches: int = 0
    outside_connections: int = 0  # upstream connections toward anything but the backend

    def add(self, other: ProxyTally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def minus(self, earlier: ProxyTally) -> ProxyTally:
        fields = self.__dataclass_fields__
        return ProxyTally(**{n: getattr(self, n) - getattr(earlier, n) for n in fields})

    def copy(self) -> ProxyTally:
        return self.minus(ProxyTally())

    def to_dict(self) -> dict[str, int]:
        return {n: getattr(self, n) for n in self.__dataclass_fields__}


class FrozenWeb:
    """Answers a WebRequest from the handler table, else the snapshot (pure of I/O besides the
    snapshot's reads). A URL captured under the other scheme answers too (an agent asking
    https:// for a page crawled over http://, as archive replay does)."""

    def __init__(self, snap: Snapshot, handlers: HandlerTable | None = None) -> None:
        self.snap = snap
        self.handlers = handlers or HandlerTable()
        self.log = FetchLog()
        self.tally = ProxyTally(proxies=1)

    def lookup(self, url: str) -> StoredResponse | None:
        return self.snap.lookup_any_scheme(url)

    def from_snapshot(self, request: WebRequest) -> tuple[WebResponse, str, str]:
        """(response, URL of the capture used, error for the log) for a page request. A
        capture the snapshot cannot read, or one no client could be sent (a status that is
        not a final three-digit one), is a marked 502, never an exception."""
        if request.method not in ("GET", "HEAD"):
            return not_in_snapshot(request.url, self.snap.name, request.method), "", ""
        try:
            stored = self.lookup(request.url)
        except DrarenaError as exc:
            error = " ".join(str(exc).split())[:300]
            return unreplayable(request.url, "the snapshot cannot read it"), "", error
        if stored is None:
            return not_in_snapshot(request.url, self.snap.name), "", ""
        if stored.status not in REPLAYABLE_STATUS:
            error = f"captured status {stored.status}"
            return unreplayable(stored.url, error), stored.url, error
        body = b"" if request.method == "HEAD" else stored.body
        return WebResponse(stored.status, sendable_headers(stored.headers), body), stored.url, ""

    def record(self, request: WebRequest, response: WebResponse, served: str, error: str) -> None:
        self.tally.requests += 1
        self.tally.missing += response.kind == "missing"
        self.tally.searches += response.kind == "search"
        self.log.add(
            FetchEntry(
                method=request.method,
                url=request.url,
                status=response.status,
                kind=response.kind,
                served_url=served if served and served != request.url else "",
                query=response.query,
                urls=response.urls,
                bytes=len(response.body),
                error=error,
                read=response.read,
            )
        )


def _refused(status: int, text: str) -> WebResponse:
    return WebResponse.text_response(text + "\n", status, kind="refused")


def backend_app(frozen: FrozenWeb) -> web.Application:
    """The aiohttp app the mitmproxy addon forwards to (absolute-form requests also work, so
    it is a plain-HTTP forward proxy by itself)."""
    # One thread runs handlers (a retriever may be slow, and is not assumed thread-safe).
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webproxy-handler")
    lock = threading.Lock()

    def call(handler: object, request: WebRequest) -> tuple[WebResponse, str]:
        with lock:
            try:
                return handler(request), ""  # type: ignore[operator]
            except Exception as exc:  # a handler bug is the agent's 500, logged
                error = f"{type(exc).__name__}: {str(exc)[:200]}"
                return _refused(500, f"drarena: search handler failed ({error})"), error

    async def handle(request: web.Request) -> web.StreamResponse:
        target = request_url(request.headers.get(TARGET_HEADER) or request.raw_path)
        if not target.lower().startswith(("http://", "https://")):
            response = _refused(400, "drarena frozen web: send requests through the proxy")
            return _to_aiohttp(response)
        body = await _read_capped(request, MAX_REQUEST_BODY + 1)
        headers = tuple(
            (k, v) for k, v in request.headers.items() if k.lower() != TARGET_HEADER.lower()
        )
        asked = WebRequest(request.method.upper(), target, headers, body[:MAX_REQUEST_BODY])
        served, error = "", ""
        try:
            urlsplit(target)  # `http://[::1/`: what the handler table and the lookup split
        except ValueError as exc:
            answer, error = _refused(400, "drarena frozen web: not a valid URL"), str(exc)[:200]
        else:
            if len(body) > MAX_REQUEST_BODY:
                answer, error = _refused(413, "drarena: request body too large"), "body too large"
            elif (handler := frozen.handlers.find(asked)) is not None:
                loop = asyncio.get_running_loop()
                answer, error = await loop.run_in_executor(pool, call, handler, asked)
            else:
                answer, served, error = frozen.from_snapshot(asked)
        frozen.record(asked, answer, served, error)
        return _to_aiohttp(answer)

    async def close_pool(_: web.Application) -> None:
        pool.shutdown(wait=False, cancel_futures=True)

    app = web.Application(client_max_size=MAX_REQUEST_BODY + 1)
    app.router.add_route("*", "/{tail:.*}", handle)
    app.on_cleanup.append(close_pool)
    return app


async def _read_capped(request: web.Request, cap: int) -> bytes:
    data = bytearray()
    while len(data) < cap and (chunk := await request.content.read(cap - len(data))):
        data += chunk
    return bytes(data)


def _to_aiohttp(answer: WebResponse) -> web.Response:
    response = web.Response(status=answer.status, body=answer.body)
    for key, value in sendable_headers(answer.headers):
        response.headers.add(key, value)
    return response


@asynccontextmanager
async def backend(frozen: FrozenWeb, port: int = 0) -> AsyncIterator[int]:
    """Serve `frozen` on 127.0.0.1 for the block; yields the port."""
    # a request body counts as head bytes in `serving` (its servers take no uploads)
    head_cap = MAX_HEAD_BYTES + MAX_REQUEST_BODY
    async with serving(backend_app(frozen), "127.0.0.1", port, max_head_bytes=head_cap) as bound:
        yield bound
