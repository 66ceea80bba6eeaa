"""Search and open over HTTP (native JSON and SearXNG JSON) and as MCP tools.

Why three faces of one retriever: agents that already speak SearXNG's JSON API or MCP can
research the frozen web unchanged, and the tournament's own agents use the native endpoints.
One Starlette app serves them all on 127.0.0.1:

- `GET|POST /search?q=...&k=10`: {query, retriever, hits: [Hit]};
  with `format=json` (SearXNG): {query, number_of_results, results: [{url, title, content,
  score, engine, ...}], answers, corrections, infoboxes, suggestions, unresponsive_engines};
  `pageno` pages through results k at a time, as SearXNG does.
- `GET /open?id=<docid or url>&offset=0&max_chars=4000`: a PageText.
- `GET /health`: retriever, snapshot and page count.
- `/mcp`: MCP over streamable HTTP with tools `search` and `open` (also over stdio).

Retriever calls run on the event loop's thread one at a time: they take milliseconds, and the
JVM behind BM25 is happiest with a single attached thread.

Why every request passes `LoopbackGuard` first: a loopback server is still reachable from the
user's browser. A page on another site can rebind its own name to 127.0.0.1 (DNS rebinding)
or post to 127.0.0.1 directly, so a request is answered only when its Host is this server
(a loopback name or address with this port) and its Origin, when a browser sends one, is too.
Bodies are capped (MAX_BODY_BYTES) and JSON nesting bounded (MAX_JSON_DEPTH) before any
parser sees them: a 100,000-level array once took the MCP endpoint to a RecursionError (500).
The request line and headers are capped (MAX_HEAD_BYTES) below the guard, in the HTTP parser
(`HeadBoundedHttpTools`): httptools has no limit of its own and buffers them whole before any
middleware runs, so 400 MiB of headers once got a 200 and cost 400 MiB of memory.
Every refusal is JSON, `{error}` (a JSON-RPC error at /mcp), whoever makes it: the guard,
the routes (a wrong parameter type, a page not in the snapshot), Starlette (404, 405) and the
HTTP parser (bytes that are not HTTP: 400). JSON bodies must be UTF-8 without lone surrogate
escapes: echoing one (a query, a JSON-RPC id) once failed mid-answer with a 500.
The `live` retriever fetches public pages for whoever asks, so it is served only on request
(`--live-web`), and says so when it starts.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from drarena.errors import DrarenaError
from drarena.records import Hit, lone_surrogate
from drarena.search.base import MAX_K, Retriever
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText, clean_query

if TYPE_CHECKING:
    import asyncio

MAX_PAGENO = 100
MAX_BODY_BYTES = 1 << 20  # search and MCP requests are a few hundred bytes
MAX_JSON_DEPTH = 64
MAX_HEAD_BYTES = 64 << 10  # request line + headers; a 1,000-character query URL is a few KiB
# A connection must complete its request head this soon after it opens (or after its last
# answer): one that sends part of a head, or nothing, is dropped, so thousands of half-open
# connections are not held (they were held until the client gave up).
HEAD_TIMEOUT_S = 10.0
# MCP sessions over HTTP: each `initialize` opens one (a task and its streams, ~65 KB), kept
# until the client deletes it; 6,000 initialize posts grew the server from 178 to 569 MB.
# At most this many live at once (another initialize gets a 503 until one ends) and one
# unused this long is closed: a tournament's agents open one or two each.
MCP_MAX_SESSIONS = 256
MCP_SESSION_IDLE_S = 600.0
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
PARSE_ERROR = -32700  # JSON-RPC
JSON_TYPE = "application/json"


class BadParameter(DrarenaError):
    """A request's own fault (a parameter out of range, a query with no words, a page that
    is not in the snapshot): a 400 here, the API's 4xx in drarena.webproxy.searchapi, where
    other DrarenaErrors (the retriever failing) are a 502."""


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays/objects deeper than `limit` (one linear pass; brackets
    inside strings do not count). Malformed text is left for the parser to refuse."""
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def json_text_problem(body: bytes) -> str | None:
    """Why a JSON request body cannot be answered, or None (malformed JSON is left for the
    parser to refuse). Not UTF-8: the MCP transport's parser raised on it (a 500). A lone
    surrogate ("\\ud800" is an escape JSON allows): parsed, it cannot be written back as
    UTF-8, so echoing it (a query, a JSON-RPC id) failed after the answer began (a 500, or a
    200 with an empty event stream at /mcp)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "request body is not UTF-8 text"
    if "\\u" not in text:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if lone_surrogate(text, data):
        return "request body holds a lone UTF-16 surrogate escape (not text)"
    return None


class LoopbackGuard:
    """ASGI middleware in front of every endpoint: Host and Origin must be this loopback
    server, POST bodies are capped and their JSON nesting bounded (see the module docstring).
    Refusals are JSON: `{error}`, or a JSON-RPC error at /mcp."""

    def __init__(self, app: Any, port: int) -> None:
        self.app = app
        self.port = port
        self.hosts = frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        mcp = scope.get("path", "").startswith("/mcp")
        host = headers.get("host", "")
        if host.lower() not in self.hosts:
            await self._refuse(
                scope,
                send,
                421,
                mcp,
                f"Host {host[:80]!r} is not this server (127.0.0.1:{self.port}); "
                "requests for other names are refused (DNS rebinding)",
            )
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            await self._refuse(
                scope,
                send,
                403,
                mcp,
                f"Origin {origin[:80]!r} is not this server; pages of other sites may not use it",
            )
            return
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if mcp and not headers.get("content-type", "").lower().startswith(JSON_TYPE):
            # the MCP transport's own answer was a plain-text 400, not JSON-RPC
            await self._refuse(scope, send, 415, mcp, f"POST /mcp needs Content-Type: {JSON_TYPE}")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # client gone
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_BODY_BYTES:
                await self._refuse(
                    scope, send, 413, mcp, f"request body over {MAX_BODY_BYTES} bytes"
                )
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = (
            f"request body is JSON nested deeper than {MAX_JSON_DEPTH} levels"
            if json_too_deep(body)
            else None
        )
        if problem is None and (mcp or headers.get("content-type", "").startswith(JSON_TYPE)):
            problem = json_text_problem(body)
        if problem is not None:
            await self._refuse(scope, send, 400, mcp, problem)
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(scope: Any, send: Any, status: int, mcp: bool, message: str) -> None:
        from starlette.responses import JSONResponse

        content: dict[str, Any] = (
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": PARSE_ERROR if status in (400, 413) else -32600,
                    "message": message,
                },
            }
            if mcp
            else {"error": message}
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await JSONResponse(content, status_code=status)(scope, _no_body, send)


async def _no_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def check_live(spec: dict[str, Any], allowed: bool) -> bool:
    """Whether `spec` is the live retriever reaching the network (True), refused unless the
    user asked for it (`--live-web`); a live retriever replaying a capture is offline."""
    if spec.get("kind") != "live" or spec.get("args", {}).get("replay_from"):
        return False
    if not allowed:
        raise DrarenaError(
            "--retriever live fetches public web pages for any program on this "
            "machine that calls /search or /open; pass --live-web to serve it "
            "anyway (or replay a capture with --retriever-args "
            '\'{"replay_from": "snapshots/<capture>"}\')'
        )
    return True


def native_results(query: str, hits: list[Hit], retriever: str) -> dict[str, Any]:
    return {"query": query, "retriever": retriever, "hits": [h.to_dict() for h in hits]}


def searxng_results(query: str, hits: list[Hit], engine: str) -> dict[str, Any]:
    """Hits in the shape of SearXNG's `format=json` answer."""
    results = []
    for hit in hits:
        parts = urlsplit(hit.url)
        results.append(
            {
                "url": hit.url,
                "title": hit.title,
                "content": hit.snippet,
                "score": hit.score,
                "engine": engine,
                "engines": [engine],
                "positions": [hit.rank],
                "category": "general",
                "template": "default.html",
                "publishedDate": None,
                "parsed_url": [
                    parts.scheme,
                    parts.netloc,
                    parts.path,
                    "",
                    parts.query,
                    parts.fragment,
                ],
                "docid": hit.docid,
            }
        )
    return {
        "query": query,
        "number_of_results": len(results),
        "results": results,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [],
    }


def _int(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadParameter(f"parameter {name!r} must be an integer, got {raw[:40]!r}") from None


def handle_search(retriever: Retriever, params: dict[str, str]) -> dict[str, Any]:
    """The body of a /search request (native or SearXNG), from its query parameters.
    Bad parameters and queries without words are BadParameter, before the retriever runs."""
    query = params.get("q", params.get("query", ""))
    fmt = params.get("format", "")
    k = _int(params, "k", 10)
    if fmt not in ("", "json"):
        raise BadParameter(f"format {fmt[:20]!r} is not served; use format=json")
    if not 1 <= k <= MAX_K:
        raise BadParameter(f"k must be an integer in 1..{MAX_K}, got {k}")
    try:
        clean_query(query)
    except DrarenaError as exc:
        raise BadParameter(str(exc)) from None
    if fmt == "json":
        pageno = _int(params, "pageno", 1)
        if not 1 <= pageno <= MAX_PAGENO:
            raise BadParameter(f"pageno must be in 1..{MAX_PAGENO}, got {pageno}")
        if k * pageno > MAX_K:  # the retriever would name k * pageno as its k
            raise BadParameter(
                f"k x pageno must be at most {MAX_K} (the results searched), got {k} x {pageno}"
            )
        hits = retriever.search(query, k * pageno)[k * (pageno - 1) :]
        return searxng_results(query, hits, f"drarena-{retriever.name}")
    return native_results(query, retriever.search(query, k), retriever.name)


def open_page(retriever: Retriever, target: str, offset: int, max_chars: int) -> PageText:
    """retriever.open, with a target that is not a URL at all (`http://[x#f`: urllib's
    ValueError, once a 500) refused as a BadParameter like any page the snapshot lacks."""
    try:
        return retriever.open(target, offset, max_chars)
    except ValueError as exc:
        raise BadParameter(f"unknown docid or URL {target[:200]!r} ({str(exc)[:100]})") from None


def handle_open(retriever: Retriever, params: dict[str, str]) -> dict[str, Any]:
    target = params.get("id") or params.get("url") or params.get("docid") or ""
    if not target:
        raise BadParameter("open needs id=<docid or url>")
    offset = _int(params, "offset", 0)
    max_chars = _int(params, "max_chars", DEFAULT_PAGE_CHARS)
    return open_page(retriever, target, offset, max_chars).to_dict()


def body_params(body: dict[str, Any]) -> dict[str, str]:
    """A JSON body's fields as parameters: strings and numbers only. Why: a null, a list or
    an object was searched as its Python repr ("None", "['a']") and answered 200."""
    params = {}
    for key, value in body.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise BadParameter(
                f"field {key[:40]!r} must be a string or a number, not {_json_type(value)}"
            )
        params[key] = str(value)
    return params


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "an array" if isinstance(value, list) else "an object"


def make_mcp(retriever: Retriever, snapshot: str, host: str = "127.0.0.1", port: int = 8000) -> Any:
    """A FastMCP server with `search` and `open` tools plus the HTTP routes above."""
    from mcp.server.fastmcp import FastMCP
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    mcp = FastMCP(
        "drarena-search",
        host=host,
        port=port,
        log_level="WARNING",
        max_sessions=MCP_MAX_SESSIONS,
        session_idle_timeout=MCP_SESSION_IDLE_S,
        instructions=f"Search and read the frozen web snapshot {snapshot!r} "
        f"({retriever.name} retriever). Use `search`, then `open` a docid.",
    )

    @mcp.tool(
        name="search",
        description="Search the frozen web; returns ranked pages "
        "(docid, url, title, snippet, score). Open a docid to read the page.",
    )
    def search_tool(query: str, k: int = 10) -> list[dict[str, Any]]:
        return [h.to_dict() for h in retriever.search(query, k)]

    @mcp.tool(
        name="open",
        description="Read a page of the frozen web by docid or URL, "
        "max_chars characters from offset; next_offset continues, null at the end.",
    )
    def open_tool(
        url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> dict[str, Any]:
        return open_page(retriever, url_or_docid, offset, max_chars).to_dict()

    async def answer(request: Request, handler: Any) -> JSONResponse:
        params = dict(request.query_params)
        if request.method == "POST":
            if request.headers.get("content-type", "").startswith("application/json"):
                try:
                    body = await request.json()
                except (ValueError, RecursionError):
                    return JSONResponse({"error": "request body is not JSON"}, status_code=400)
                if not isinstance(body, dict):
                    return JSONResponse(
                        {"error": "request body must be a JSON object"}, status_code=400
                    )
                try:
                    params.update(body_params(body))
                except BadParameter as exc:
                    return JSONResponse({"error": str(exc)}, status_code=400)
            else:
                try:
                    form = await request.form()
                except HTTPException as exc:  # multipart without a boundary, bad parts
                    return JSONResponse({"error": f"request form: {exc.detail}"}, status_code=400)
                for key, value in form.items():
                    if not isinstance(value, str):  # an uploaded file: was searched as its repr
                        message = f"form field {key[:40]!r} is a file; send text"
                        return JSONResponse({"error": message}, status_code=400)
                    params[key] = value
        try:
            return JSONResponse(handler(retriever, params))
        except DrarenaError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    @mcp.custom_route("/search", methods=["GET", "POST"])
    async def search_route(request: Request) -> JSONResponse:
        return await answer(request, handle_search)

    @mcp.custom_route("/open", methods=["GET", "POST"])
    async def open_route(request: Request) -> JSONResponse:
        return await answer(request, handle_open)

    @mcp.custom_route("/health", methods=["GET"])
    async def health_route(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "retriever": retriever.name, "snapshot": snapshot})

    return mcp


def http_app(retriever: Retriever, snapshot: str, host: str, port: int) -> LoopbackGuard:
    """The ASGI app `serve_http` runs: every route, the loopback guard in front, and the
    app's own refusals (unknown path, method) as JSON `{error}` like the others."""
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    app = make_mcp(retriever, snapshot, host, port).streamable_http_app()

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return JSONResponse({"error": exc.detail}, exc.status_code, headers=exc.headers)

    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        # the traceback goes to the server's log (Starlette re-raises), never to the client
        return JSONResponse({"error": "internal error (see the server's log)"}, 500)

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, server_error)
    return LoopbackGuard(app, port)


def check_loopback(host: str) -> None:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise DrarenaError(f"--host {host}: the search server listens on loopback only")


def live_banner(live: bool) -> str:
    return (
        "; LIVE WEB: /search and /open fetch public pages for any caller on this machine "
        "(--live-web)"
        if live
        else ""
    )


@functools.cache
def head_bounded_protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the request line and headers capped at MAX_HEAD_BYTES.

    Why a subclass rather than uvicorn's h11 parser (which has such a cap): h11 is pure Python
    and httptools is what keeps serve-search's latency low (docs/search.md). Bytes are counted
    per received chunk while a request's head is open, so at most MAX_HEAD_BYTES plus one read
    (256 KiB) is held before the answer: 431 with a JSON `{error}`, as the guard's refusals;
    bytes httptools cannot parse get a JSON 400 the same way."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    too_long = f"request line and headers over {MAX_HEAD_BYTES} bytes"

    class HeadBoundedHttpTools(HttpToolsProtocol):
        _head_open = False
        _head_bytes = 0
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._start_head_timer()  # nothing sent yet: the head must still come in time

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_head_timer()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head_open = True
            self._head_bytes = 0
            if self._head_timer is None:  # a request begun on a kept-alive connection
                self._start_head_timer()

        def on_headers_complete(self) -> None:
            self._head_open = False
            self._stop_head_timer()
            super().on_headers_complete()

        def _start_head_timer(self) -> None:
            self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

        def _stop_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            """No complete head in HEAD_TIMEOUT_S (a head completed stops the timer; a kept-
            alive connection between requests is uvicorn's timeout_keep_alive's)."""
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._head_open or self.transport.is_closing():
                return
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._head_open = False
                self._refuse(b"431 Request Header Fields Too Large", too_long)

        def send_400_response(self, msg: str) -> None:
            """Bytes that are not HTTP (a NUL in the request line, a bad chunk size): uvicorn
            answered a plain-text 400; a JSON `{error}` like every other refusal here."""
            self._refuse(b"400 Bad Request", msg)

        def _refuse(self, status: bytes, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            self.transport.write(
                b"HTTP/1.1 " + status + b"\r\n"
                b"content-type: application/json\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n"
                b"connection: close\r\n\r\n" + body
            )
            self.transport.close()

    return HeadBoundedHttpTools


def uvicorn_config(app: Any) -> Any:
    """The uvicorn settings of `serve_http` (tests start the same server around a small app)."""
    import uvicorn

    return uvicorn.Config(app, log_level="warning", http=head_bounded_protocol())


def serve_http(
    retriever: Retriever, snapshot: str, host: str, port: int, live: bool = False
) -> None:
    """Bound here (port 0: any free port) so the Host check knows the real port."""
    import socket

    import uvicorn

    check_loopback(host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DrarenaError(f"--port {port}: cannot listen on {host} ({exc.strerror})") from None
    port = sock.getsockname()[1]
    app = http_app(retriever, snapshot, host, port)
    print(
        f"serving {retriever.name} search over {snapshot} on http://{host}:{port} "
        f"(/search, /open, /health, MCP at /mcp){live_banner(live)}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(uvicorn_config(app)).run(sockets=[sock])


def serve_stdio(retriever: Retriever, snapshot: str, live: bool = False) -> None:
    """MCP over stdin/stdout; anything else writing to fd 1 is sent to stderr instead."""
    import anyio
    from mcp.server.stdio import stdio_server

    if live:
        print(
            f"serving {retriever.name} search over stdio{live_banner(live)}",
            file=sys.stderr,
            flush=True,
        )
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    mcp = make_mcp(retriever, snapshot)

    async def run() -> None:
        server = mcp._mcp_server
        with open(protocol_out, "w", encoding="utf-8", newline="\n") as out:
            async with stdio_server(stdout=anyio.wrap_file(out)) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
