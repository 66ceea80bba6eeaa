"""What the frozen-web proxy answers with, and the table of hosts answered by code.

Why a table: most requests are pages, answered from the snapshot as captured; a few hosts are
APIs (the search services agents call: SearXNG, Tavily, Brave, DuckDuckGo) whose answers are
computed from the snapshot's index instead (drarena.webproxy.searchapi). The proxy consults
the table first, by host, and falls back to the snapshot. Requests and responses are plain
frozen records, so a handler knows nothing of the proxy underneath (mitmproxy, aiohttp) and is
tested by calling it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from drarena.errors import DrarenaError

MAX_REQUEST_BODY = 1 << 20  # bytes of a request body the proxy reads (a search query is small)

# What a logged exchange was: a captured page, a page the snapshot lacks, an API call answered
# by a handler (a search), or a request the proxy refused (bad request, body too large).
KINDS = ("page", "missing", "search", "refused")


@dataclass(frozen=True, slots=True)
class WebRequest:
    """One request as the agent sent it: absolute URL (scheme, host, port, path, query)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    @property
    def host(self) -> str:
        """Lower-case host name without port (what the handler table is keyed by)."""
        return (urlsplit(self.url).hostname or "").lower()

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"

    def header(self, name: str, default: str = "") -> str:
        low = name.lower()
        return next((v for k, v in self.headers if k.lower() == low), default)

    def query(self) -> dict[str, str]:
        """Query-string parameters (the last of a repeated name wins)."""
        return dict(parse_qsl(urlsplit(self.url).query, keep_blank_values=True))

    def form(self) -> dict[str, str]:
        """An application/x-www-form-urlencoded body's fields (DuckDuckGo's HTML form posts)."""
        return dict(parse_qsl(self.body.decode("utf-8", "replace"), keep_blank_values=True))

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not (a handler answers 400 then)."""
        return json.loads(self.body.decode("utf-8"))


@dataclass(frozen=True, slots=True)
class WebResponse:
    """An answer. `kind` and `query`/`urls` are for the log (the round's trajectory): a search
    handler sets kind="search", the query it answered and the result URLs it returned, and
    `read` the URLs whose whole page text the answer carried (Tavily's raw_content and
    /extract): the agent read those pages without fetching them, so they count as opened."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    kind: str = "page"
    query: str = ""
    urls: tuple[str, ...] = ()
    read: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"WebResponse.kind must be one of {', '.join(KINDS)}")

    @classmethod
    def json_response(cls, value: Any, status: int = 200, **log: Any) -> WebResponse:
        body = json.dumps(value, ensure_ascii=False).encode("utf-8")
        headers = (("Content-Type", "application/json; charset=utf-8"),)
        return cls(status, headers, body, **log)

    @classmethod
    def text_response(
        cls, text: str, status: int = 200, content_type: str = "text/plain", **log: Any
    ) -> WebResponse:
        headers = (("Content-Type", f"{content_type}; charset=utf-8"),)
        return cls(status, headers, text.encode("utf-8"), **log)


# A handler answers every request for its host(s); it must not raise for bad input (answer
# 4xx instead): an exception becomes a 500 page and is logged as refused.
Handler = Callable[[WebRequest], WebResponse]


@dataclass
class HandlerTable:
    """host -> handler, consulted before the snapshot. Hosts are matched exactly
    (lower-case, no port): register "api.tavily.com", not a pattern."""

    handlers: dict[str, Handler] = field(default_factory=dict)

    def register(self, host: str, handler: Handler) -> None:
        key = host.strip().lower()
        if not key or "/" in key or ":" in key:
            raise DrarenaError(f"handler host {host!r}: give a bare host name (no scheme/port)")
        self.handlers[key] = handler

    def update(self, handlers: Mapping[str, Handler] | Iterable[tuple[str, Handler]]) -> None:
        for host, handler in dict(handlers).items():
            self.register(host, handler)

    def find(self, request: WebRequest) -> Handler | None:
        return self.handlers.get(request.host)

    def hosts(self) -> list[str]:
        return sorted(self.handlers)
