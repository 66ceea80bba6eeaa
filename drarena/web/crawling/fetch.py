"""One polite HTTP fetch, recorded as it went over the wire, plus link extraction.

Why a separate layer: the crawl loop (crawl.py) is ordering and bookkeeping; everything that
touches the network and can fail (DNS, private-address policy, timeouts, size caps, per-host
politeness) lives here and turns every failure into a value instead of an exception.
"""

from __future__ import annotations

import asyncio
import html
import re
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from drarena.web.warc.urls import ALLOWED_SCHEMES, is_public_address
from drarena.web.warc.writer import Exchange, FetchFailure

# Hop-by-hop coding already undone by aiohttp: stored headers must describe the stored entity.
_DROP_RESPONSE_HEADERS = frozenset({"transfer-encoding"})


class PrivateAddressRefused(OSError):
    """Raised by the resolver for a host that resolves to a non-public address."""


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that refuses private, loopback and link-local results."""

    def __init__(self, allow_private: bool) -> None:
        self._inner = DefaultResolver()
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if not self._allow_private:
            bad = [r["host"] for r in results if not is_public_address(r["host"])]
            if bad:
                raise PrivateAddressRefused(f"{host} resolves to non-public address {bad[0]}")
        return results

    async def close(self) -> None:
        await self._inner.close()


@dataclass
class HostGate:
    """Per-host politeness: at most `concurrency` requests at once, `delay` s between starts."""

    concurrency: int
    delay: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _sem: asyncio.Semaphore | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _next_start: float = 0.0

    async def __aenter__(self) -> None:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        await self._sem.acquire()
        try:
            async with self._lock:
                wait = self._next_start - self.clock()
                if wait > 0:
                    await self.sleep(wait)
                self._next_start = self.clock() + self.delay
        except BaseException:
            self._sem.release()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._sem is not None
        self._sem.release()


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """`connect_to` maps "host:port" to the "host:port" actually connected to, like curl's
    --connect-to: the URL, Host header and record stay those of the original origin (used to
    fetch a site from a mirror or a loopback replay without rewriting its URLs)."""

    user_agent: str
    timeout_s: float
    max_bytes: int
    allow_private_addresses: bool
    connect_to: tuple[tuple[str, str], ...] = ()


def connect_target(url: str, policy: FetchPolicy) -> tuple[str, dict[str, str]]:
    """The URL to connect to and the extra request headers that keep the original Host."""
    if not policy.connect_to:
        return url, {}
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    key = f"{parts.hostname}:{port}"
    for source, target in policy.connect_to:
        if source == key:
            return parts._replace(netloc=target).geturl(), {"Host": parts.netloc}
    return url, {}


def literal_address_refused(url: str, policy: FetchPolicy) -> str | None:
    """aiohttp skips the resolver for IP literals, so those are checked here."""
    host = urlsplit(url).hostname or ""
    try:
        public = is_public_address(host)
    except ValueError:
        return None  # a name: the resolver checks it
    if public or policy.allow_private_addresses:
        return None
    return f"{host} is a non-public address"


def make_session(policy: FetchPolicy, total_connections: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(
        resolver=GuardedResolver(policy.allow_private_addresses),
        limit=total_connections,
        ttl_dns_cache=300,
    )
    return aiohttp.ClientSession(
        connector=connector,
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        headers={
            "User-Agent": policy.user_agent,
            "Accept": "text/html,application/xhtml+xml,*/*;q=0.8",
            "Accept-Encoding": "gzip, deflate",
        },
    )


async def fetch_once(
    session: aiohttp.ClientSession, url: str, policy: FetchPolicy, gate: HostGate
) -> Exchange | FetchFailure:
    """GET `url` without following redirects; any failure comes back as a FetchFailure."""
    scheme = urlsplit(url).scheme
    if scheme not in ALLOWED_SCHEMES:
        return FetchFailure(url, "bad_scheme", f"scheme {scheme!r} is not http(s)")
    target, extra_headers = connect_target(url, policy)
    refused = literal_address_refused(target, policy)
    if refused:
        return FetchFailure(url, "private_address", refused)
    timeout = aiohttp.ClientTimeout(total=policy.timeout_s)
    try:
        async with (
            gate,
            session.get(
                target, allow_redirects=False, timeout=timeout, headers=extra_headers
            ) as resp,
        ):
            peer = (
                resp.connection.transport.get_extra_info("peername")
                if resp.connection and resp.connection.transport
                else None
            )
            chunks: list[bytes] = []
            size = 0
            truncated = False
            async for chunk in resp.content.iter_chunked(1 << 16):
                if size + len(chunk) > policy.max_bytes:
                    chunks.append(chunk[: policy.max_bytes - size])
                    truncated = True
                    break
                chunks.append(chunk)
                size += len(chunk)
            headers = tuple(
                (k.decode("latin-1"), v.decode("latin-1"))
                for k, v in resp.raw_headers
                if k.decode("latin-1").lower() not in _DROP_RESPONSE_HEADERS
            )
            return Exchange(
                url=url,
                request_headers=tuple(resp.request_info.headers.items()),
                status=resp.status,
                reason=resp.reason or "",
                response_headers=headers,
                entity=b"".join(chunks),
                http_version=f"{resp.version.major}.{resp.version.minor}"
                if resp.version
                else "1.1",
                ip_address=str(peer[0]) if peer else "",
                truncated=truncated,
            )
    except TimeoutError:
        return FetchFailure(url, "timeout", f"no complete response within {policy.timeout_s} s")
    except aiohttp.ClientConnectorError as exc:
        if isinstance(exc.os_error, PrivateAddressRefused):
            return FetchFailure(url, "private_address", str(exc.os_error))
        return FetchFailure(url, "connection_error", str(exc))
    except aiohttp.InvalidURL as exc:
        return FetchFailure(url, "bad_url", str(exc))
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        return FetchFailure(url, "fetch_error", f"{type(exc).__name__}: {exc}")


# A small lexer instead of a DOM: link discovery runs on every page of a crawl and a full
# lxml parse costs ~5x more. Comments, scripts and styles are cut first so their text never
# yields links; tests check it finds the same links as lxml on the committed fixture.
_NOISE = re.compile(rb"<!--.*?-->|<(script|style)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(rb"<(a|area|base)\s([^>]*)>", re.I)
_HREF = re.compile(rb"""(?:^|\s)href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.I)


def _decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return html.unescape(text).strip()


def extract_links(body: bytes, base_url: str) -> list[str]:
    """Absolute http(s) targets of <a>/<area> hrefs, in document order, duplicates and
    fragments removed; <base href> respected."""
    base = base_url
    seen_hrefs: set[str] = set()
    seen: set[str] = set()
    links: list[str] = []
    for tag in _TAG.finditer(_NOISE.sub(b"", body)):
        match = _HREF.search(tag.group(2))
        if match is None:
            continue
        href = _decode(match.group(1) or match.group(2) or match.group(3) or b"")
        if tag.group(1).lower() == b"base":
            if href and base is base_url:
                base = urljoin(base_url, href)
            continue
        href = href.split("#", 1)[0]
        if not href or href in seen_hrefs:  # same-page anchors and repeats: no urljoin
            continue
        seen_hrefs.add(href)
        try:
            target = urljoin(base, href)
        except ValueError:
            continue
        if urlsplit(target).scheme in ALLOWED_SCHEMES and target not in seen:
            seen.add(target)
            links.append(target)
    return links
