"""Fuzzing the HTTP search services drarena serves to agents: `drarena search serve`
(drarena/search/server.py: /search, native and SearXNG JSON, /open, /health and /mcp behind
LoopbackGuard, on uvicorn with the head-bounded httptools protocol) and the search APIs the
frozen-web proxy emulates (drarena/webproxy/searchapi.py: SearXNG, Tavily, Brave, DuckDuckGo's
html and lite pages).

Both answer from a tiny in-memory retriever (a DocStore of a few pages whose titles and texts
are hostile markup; search checks k and the query as the BM25 retriever does), so an example
costs milliseconds, not a Lucene call. The server is the app `serve_http` runs (`http_app`,
`uvicorn_config`) on a real loopback port, driven with raw bytes so nothing normalises the
request on its way; the proxy's handlers are called with WebRequests.

Inputs: query strings built of hostile pieces (NUL, a lone surrogate and non-UTF-8 bytes
percent-encoded, invalid percent escapes, repeated names, numbers negative, huge, fractional,
NaN or empty, a query of up to a MB), JSON bodies that are not objects, nest deep or hold
every JSON type in every field (lone surrogate escapes too), bodies that are not JSON, content
types that lie, multipart bodies without names, boundaries or ends, mutated JSON-RPC at /mcp,
/open targets that are not in the snapshot, not URLs at all, very long, with fragments or other
schemes; raw request heads and bodies mutated (lying Content-Length, broken chunking); hits
with hostile titles, snippets and URLs for the DuckDuckGo pages.

Properties: every request gets a well-formed answer below 500 in the service's own error
shape (JSON `{error}`, a JSON-RPC error at /mcp, Tavily `{detail: {error}}`, Brave's
ErrorResponse, DuckDuckGo's HTML page), no traceback text, its size bounded; a handler never
raises; a body is read only up to MAX_BODY_BYTES; json_too_deep agrees with the real depth;
untrusted text on the DuckDuckGo pages is escaped exactly (the parsed page has the template's
tags and attributes only, and its text and attribute values are the input's); the server
keeps serving after every bad request.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote, unquote, urlencode

import pytest
from fuzz_inputs import mutated
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.records import Hit
from drarena.search import server
from drarena.search.base import check_k
from drarena.search.docstore import DocStore, PageText, clean_query
from drarena.search.passages import SourceDoc
from drarena.webproxy import searchapi
from drarena.webproxy.handlers import Handler, WebRequest, WebResponse

HOSTILE = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)",
    "</title><title>owned",
    "&amp; &lt;b&gt; &#x3c;i>",
    "<!-- comment --> <![CDATA[ x ]]> <?pi x?>",
    "</textarea></div></form><form action=//evil>",
    "\x00 nul \x1b[31m \u202e rtl \ufeff bom",
)
PAGES = [
    SourceDoc(
        id=f"d{i}",
        url=f"https://ex.org/p{i}" if i % 3 else f'https://ex.org/q?a=1&b="{i}"<x>#frag',
        title=HOSTILE[i % len(HOSTILE)] if i % 4 else "",
        contents=f"alpha beta page {i} {HOSTILE[(i + 1) % len(HOSTILE)]} " * (5 + i * 20),
    )
    for i in range(12)
]
MAX_ANSWER = 256 << 10  # bytes of an answer beyond what the request itself echoes


class TinyRetriever:
    """Pages that hold every query word, best first; k and the query checked as BM25 does."""

    name = "tiny"

    def __init__(self) -> None:
        self.docs = DocStore(PAGES, "tiny")

    def search(self, query: str, k: int = 10) -> list[Hit]:
        k = check_k(k)
        words = clean_query(query).lower().split()
        scored = sorted(
            ((sum(w in p.contents.lower() for w in words), p.id) for p in PAGES), reverse=True
        )
        hits = []
        for rank, (score, docid) in enumerate(scored[:k], 1):
            doc = self.docs.get(docid)
            hits.append(Hit(docid, doc.url, doc.title, doc.contents[:200], float(score), rank))
        return hits

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        return self.docs.open(url_or_docid, offset, max_chars)


# --- the server on a loopback port ----------------------------------------------------------


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """`drarena search serve`'s app and uvicorn settings over the tiny retriever."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    number = int(sock.getsockname()[1])
    app = server.http_app(TinyRetriever(), "tiny", "127.0.0.1", number)
    uv = uvicorn.Server(server.uvicorn_config(app))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not uv.started:
        time.sleep(0.02)
    try:
        yield number
    finally:
        uv.should_exit = True
        thread.join(60)
        sock.close()


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


class _Received:
    """What http.client reads an answer from: the bytes already received."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.data)


def exchange(port: int, raw: bytes, half_close: bool = False) -> bytes:
    """Sends raw bytes on a connection of their own and reads to the server's close.
    half_close: then closes our side, so a request promising more body than it sent ends
    (uvicorn closes the connection on that EOF, an answer under way with it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        with contextlib.suppress(OSError):  # refused mid-send: the answer is on its way
            conn.sendall(raw)
            if half_close:
                conn.shutdown(socket.SHUT_WR)
        answer = b""
        with contextlib.suppress(ConnectionResetError):  # closed on our unread bytes
            while chunk := conn.recv(65536):
                answer += chunk
        return answer


def send(port: int, raw: bytes, method: str = "GET") -> Answer:
    """One request as raw bytes; the answer parsed by http.client."""
    response = http.client.HTTPResponse(_Received(exchange(port, raw)), method=method)  # type: ignore[arg-type]
    response.begin()
    headers = {k.lower(): v for k, v in response.getheaders()}
    return Answer(response.status, headers, response.read())


def request_bytes(
    port: int,
    method: str,
    target: bytes,
    headers: dict[str, str],
    body: bytes,
) -> bytes:
    head = [f"{method} ".encode() + target + b" HTTP/1.1", f"Host: 127.0.0.1:{port}".encode()]
    head += [f"{k}: {v}".encode("latin-1") for k, v in headers.items()]
    head += [f"Content-Length: {len(body)}".encode(), b"Connection: close"]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def health(port: int) -> Answer:
    return send(port, request_bytes(port, "GET", b"/health", {}, b""))


# --- strategies -----------------------------------------------------------------------------

NUMBERS: tuple[str, ...] = ("", "0", "-1", "1", "3", "20", "100", "1000", "1001", "1" + "0" * 30)
NUMBERS += ("-" + "9" * 40, "1.5", "2.0", "NaN", "inf", "-inf", "1e3", " 7 ", "0x10", "1_0")
NUMBERS += ("\uff15", "٣", "+4")
TEXT_VALUES = (
    "alpha",
    "alpha beta",
    "",
    " ",
    "!!",
    "json",
    "d1",
    "d1#x",
    "d999",
    "https://ex.org/p1",
    "https://ex.org/p1#frag",
    "http://[x#f",
    "http://a\uff03b/#x",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/html,<b>x</b>",
    "https://ex.org/" + "a" * 3000,
    *HOSTILE,
)
RAW_ESCAPES = ("%00", "%ED%A0%80", "%FF%FE", "%C0%AF", "%G1", "%", "%%", "+", "%2B", "&", "=", "#")
NAMES = ("q", "query", "k", "format", "pageno", "id", "url", "docid", "offset", "max_chars")

raw_value = st.one_of(
    st.sampled_from(NUMBERS).map(lambda v: quote(v).encode()),
    st.sampled_from(TEXT_VALUES).map(lambda v: quote(v).encode()),
    st.lists(st.sampled_from((*RAW_ESCAPES, "a", "json", "+")), max_size=8).map(
        lambda parts: "".join(parts).encode()
    ),
    st.text(max_size=20).map(lambda v: quote(v, safe="").encode()),
    st.binary(max_size=12).map(lambda v: quote(v, safe="%&=+").encode()),
)
# a valid start the hostile pairs after it override (the last of a repeated name wins), so
# examples reach searching and opening as well as the refusals
VALID = (b"", b"q=alpha&", b"q=alpha+beta&format=json&", b"id=d1&", b"url=https://ex.org/p2&")
query_string = st.tuples(
    st.sampled_from(VALID),
    st.lists(st.tuples(st.sampled_from((*NAMES, "", "x", "q[]")), raw_value), max_size=4),
).map(lambda t: t[0] + b"&".join(k.encode() + b"=" + v for k, v in t[1]))
# bytes that are not a URL at all (NUL, space, controls): httptools refuses the request line
raw_query = st.binary(min_size=1, max_size=12)

json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NUMBERS + TEXT_VALUES + ("\ud800", "alpha \udfff", "\udbff\udc00")),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)
    ),
    max_leaves=6,
)
BODY_VALID: tuple[dict[str, Any], ...] = (
    {},
    {"q": "alpha"},
    {"id": "d3", "offset": 10},
    {"q": "beta page", "format": "json", "k": 3, "pageno": 2},
)
json_object = st.tuples(
    st.sampled_from(BODY_VALID),
    st.dictionaries(st.sampled_from((*NAMES, "", "jsonrpc")), json_value, max_size=3),
).map(lambda t: {**t[0], **t[1]})

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
).encode()


def multipart(parts: list[tuple[bytes, bytes]], end: bool) -> bytes:
    body = b"".join(b"--b\r\n" + head + b"\r\n\r\n" + value + b"\r\n" for head, value in parts)
    return body + (b"--b--\r\n" if end else b"")


part_head = st.sampled_from(
    (
        b'Content-Disposition: form-data; name="q"',
        b'Content-Disposition: form-data; name="k"',
        b'Content-Disposition: form-data; name="q"; filename="a.txt"',
        b"Content-Disposition: form-data",
        b'Content-Disposition: form-data; name="q\xff"',
        b'Content-Disposition: form-data; name="q"\r\nContent-Type: text/plain; charset=nope',
        b"X-Other: 1",
    )
)
body_strategy = st.one_of(
    st.just(b""),
    json_object.map(lambda v: json.dumps(v).encode()),
    json_value.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 200).map(lambda n: b'{"q": ' + b"[" * n + b"]" * n + b"}"),
    query_string,
    st.tuples(
        st.lists(
            st.tuples(part_head, st.sampled_from((b"alpha", b"\xff\xfe", b"", b"5"))), max_size=3
        ),
        st.booleans(),
    ).map(lambda t: multipart(*t)),
    st.binary(max_size=64),
    mutated(INITIALIZE, max_ops=3),
    st.just(INITIALIZE),
)
CONTENT_TYPES = (
    None,
    "application/json",
    "application/json; charset=latin-1",
    "application/jsonx",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "multipart/form-data; boundary=b",
    "multipart/form-data; boundary=",
    "text/plain",
)
PATHS = (b"/search", b"/open", b"/health", b"/mcp", b"/mcp/", b"/nope", b"//search", b"/search/")
server_request = st.tuples(
    st.sampled_from(("GET", "GET", "GET", "POST", "POST", "POST", "PUT", "HEAD", "OPTIONS")),
    st.sampled_from((*PATHS, b"/search", b"/search", b"/open", b"/mcp")),
    st.tuples(st.sampled_from(range(8)), query_string, raw_query).map(
        lambda t: t[2] if t[0] == 0 else t[1]  # bytes that are not a URL: one in eight
    ),
    st.sampled_from(CONTENT_TYPES),
    body_strategy,
    st.sampled_from((0, 0, 0, 0, 0, 0, 10_000, 70_000, 1 << 20)),  # bytes of q= in the URL
)


def check_answer(answer: Answer, method: str, path: bytes, sent: int) -> None:
    """The server's answer is below 500, bounded, JSON in the right shape, no traceback."""
    assert answer.status < 500, (answer.status, answer.body[:300])
    assert b"Traceback" not in answer.body
    assert len(answer.body) <= MAX_ANSWER + 2 * sent
    if method == "HEAD":
        assert answer.body == b""
        return
    if answer.status in (307, 308):  # /search/ -> /search, as Starlette redirects
        assert answer.headers["location"].startswith("http://127.0.0.1:")
        return
    if path.startswith(b"/mcp"):
        if "json" in answer.headers.get("content-type", ""):
            value = answer.json()
            assert isinstance(value, dict) and ("error" in value or "result" in value)
        elif answer.status == 200:  # an event stream: each event a JSON-RPC message
            events = [line[5:] for line in answer.body.split(b"\r\n") if line.startswith(b"data:")]
            assert events and all("jsonrpc" in json.loads(e) for e in events)
        return
    assert answer.headers.get("content-type", "").startswith("application/json"), answer.body[:200]
    value = answer.json()
    assert isinstance(value, dict)
    if answer.status >= 400:
        assert isinstance(value.get("error"), str) and value["error"]
    elif path.rstrip(b"/").endswith(b"/search"):
        assert "hits" in value or "results" in value
    elif path == b"/open":
        assert value["docid"] in {p.id for p in PAGES}


UPLOAD = multipart([(b'Content-Disposition: form-data; name="q"; filename="a"', b"alpha")], True)


@given(server_request)
@example(("GET", b"/open", b"id=http://[x%23f", None, b"", 0))  # urllib's ValueError: a 500
@example(("GET", b"/open", b"id=http://a%EF%BC%83b/%23x", None, b"", 0))  # NFKC netloc: 500
@example(("POST", b"/search", b"", "application/json", b'{"q": "alpha \\ud800"}', 0))  # 500
@example(("POST", b"/mcp", b"", "application/json", b"\xff", 0))  # MCP's parser: a 500
@example(("POST", b"/mcp", b"", "application/json", INITIALIZE.replace(b"1", b'"\\udfff"', 1), 0))
@example(("POST", b"/search", b"", "application/json", b'{"q": null}', 0))  # searched "None"
@example(("POST", b"/search", b"", "multipart/form-data; boundary=b", UPLOAD, 0))  # its repr
@example(("PUT", b"/search", b"q=alpha", None, b"", 0))  # a plain-text 405
@example(("POST", b"/mcp", b"", "text/plain", INITIALIZE, 0))  # MCP's plain-text 400
@example(("GET", b"/search", b"q=\x00", None, b"", 0))  # not HTTP: uvicorn's plain-text 400
@example(("GET", b"/search", b"", None, b"", 1 << 20))  # the head bound: a JSON 431
def test_server_answers_every_request(
    port: int, req: tuple[str, bytes, bytes, str | None, bytes, int]
) -> None:
    method, path, query, content_type, body, big = req
    if big:
        query += b"&q=" + b"alpha+" * (big // 6)
    target = path + (b"?" + query if query else b"")
    headers = {"Accept": "application/json, text/event-stream"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    raw = request_bytes(port, method, target, headers, body)
    answer = send(port, raw, method)
    if answer.status == 431:  # the head bound counts what came with the head
        assert len(raw) > server.MAX_HEAD_BYTES
        assert method == "HEAD" or "error" in answer.json()
    else:  # a head is held whole when it came in one read (256 KiB) with its end
        not_http = answer.status == 400 and (method == "HEAD" or b"Invalid HTTP" in answer.body)
        assert not_http or len(raw) - len(body) <= server.MAX_HEAD_BYTES + (256 << 10)
        check_answer(answer, method, path, len(raw))
    assert health(port).status == 200


SEED_POST = (
    b"POST /search?k=2 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    b'Content-Length: 16\r\n\r\n{"q": "alpha"}\r\n'
)


@given(mutated(SEED_POST, max_ops=4))
@example(SEED_POST.replace(b"16", b"1000000000000"))  # more promised than sent
@example(SEED_POST.replace(b"16", b"-1"))
@example(SEED_POST.replace(b"Content-Length: 16", b"Transfer-Encoding: chunked"))
def test_server_survives_mangled_framing(port: int, raw: bytes) -> None:
    """Heads and bodies cut, flipped and repeated; the client then closes its side, so a
    request promising more body than it sends ends there rather than hanging."""
    answer = exchange(port, raw.replace(b"{port}", str(port).encode()), half_close=True)
    if answer:
        assert answer.startswith(b"HTTP/1.1 "), answer[:80]
        assert int(answer[9:12]) < 500, answer[:300]
        assert b"Traceback" not in answer
    assert health(port).status == 200


# --- the guard alone: bodies read only up to the cap -----------------------------------------


@given(st.integers(1, 300_000), st.sampled_from(("/search", "/mcp", "/health")))
@example(1, "/search")
def test_guard_reads_a_body_only_up_to_the_cap(chunk: int, path: str) -> None:
    """An endless body: the guard stops reading one chunk past MAX_BODY_BYTES, answers 413
    in the path's error shape and never calls the app."""
    read = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        read += chunk
        return {"type": "http.request", "body": b"[" * chunk, "more_body": True}

    async def send_message(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app was called with an over-long body")

    if chunk == 1:  # a byte at a time: a million awaits; a larger step shows the same
        chunk = 1 << 16
    guard = server.LoopbackGuard(app, 8000)
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
    }
    asyncio.run(guard(scope, receive, send_message))
    assert read <= server.MAX_BODY_BYTES + chunk
    assert sent[0]["status"] == 413
    error = json.loads(sent[1]["body"])["error"]
    assert (error["message"] if path == "/mcp" else error).startswith("request body over")


# --- json_too_deep against the real nesting --------------------------------------------------


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


nested = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(alphabet='[]{}"\\ab', max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), inner, max_size=3),
    ),
    max_leaves=30,
)


@given(nested, st.integers(0, 8))
@example([[["]]]]"]]], 2)  # brackets inside strings do not count
def test_json_too_deep_is_the_real_depth(value: Any, limit: int) -> None:
    assert server.json_too_deep(json.dumps(value).encode(), limit) == (depth(value) > limit)


# --- the proxy's emulated APIs ---------------------------------------------------------------

HANDLERS: dict[str, Handler] = searchapi.search_handlers(TinyRetriever())
API_PATHS = {
    searchapi.SEARXNG_HOST: ("/search", "/", "/other"),
    searchapi.TAVILY_HOST: ("/search", "/extract", "/search/", "/crawl"),
    searchapi.BRAVE_HOST: ("/res/v1/web/search", "/res/v1/web/search/", "/res/v1/news"),
    searchapi.SERPER_HOST: ("/search", "/search/", "/images"),
    searchapi.DDG_HTML_HOST: ("/html/", "/html", "/lite/"),
    searchapi.DDG_LITE_HOST: ("/lite/", "/lite", "/html/"),
}
API_NAMES = ("q", "format", "pageno", "k", "count", "offset", "s", "kl", "df")
API_VALID = (b"", b"q=alpha&", b"q=alpha&format=json&", b"q=beta+page&s=3&count=4&")
api_query = st.tuples(
    st.sampled_from(API_VALID),
    st.lists(st.tuples(st.sampled_from((*API_NAMES, "x")), raw_value), max_size=3),
).map(lambda t: t[0] + b"&".join(k.encode() + b"=" + v for k, v in t[1]))
TAVILY_VALID: tuple[dict[str, Any], ...] = (
    {},
    {"query": "alpha"},
    {"query": "beta page", "max_results": 3, "include_raw_content": True},
    {"urls": ["https://ex.org/p1", "d2", "https://ex.org/nope"]},
    {"q": "alpha", "num": 3, "page": 2, "type": "search", "autocorrect": True},
)
tavily_object = st.tuples(
    st.sampled_from(TAVILY_VALID),
    st.dictionaries(
        st.sampled_from(
            (
                *("query", "max_results", "include_raw_content", "urls", "search_depth", "topic"),
                *("q", "num", "page", "type"),  # Serper's
            )
        ),
        st.one_of(json_value, st.lists(st.sampled_from(TEXT_VALUES), max_size=25)),
        max_size=2,
    ),
).map(lambda t: {**t[0], **t[1]})
api_body = st.one_of(
    st.just(b""),
    tavily_object.map(lambda v: json.dumps(v).encode()),
    json_value.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),
    api_query,
    st.binary(max_size=64),
)
api_request = st.tuples(
    st.sampled_from(sorted(API_PATHS)),
    st.sampled_from(("GET", "GET", "POST", "POST", "PUT")),
    st.sampled_from((0, 0, 0, 1, 2, 3)),
    api_query,
    api_body,
)
DDG_TAGS = {"html", "head", "meta", "title", "body", "form", "input", "div", "h2", "a", "p"}
DDG_TAGS |= {"table", "tr", "td", "span"}
DDG_ATTRS = {"lang", "charset", "action", "method", "type", "name", "value", "class", "rel"}
DDG_ATTRS |= {"href", "valign", "id"}


class Skeleton(HTMLParser):
    """A page's tags with their attribute names, its text, and its attribute values."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, ...]] = []
        self.text: list[str] = []
        self.values: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, *(name for name, _ in attrs)))
        self.values.extend(attrs)

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(("/" + tag,))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.tags.append(("<!--", data))

    def handle_pi(self, data: str) -> None:
        self.tags.append(("<?", data))

    def unknown_decl(self, data: str) -> None:
        self.tags.append(("<![", data))


def skeleton(page: str) -> Skeleton:
    parser = Skeleton()
    parser.feed(page)
    parser.close()
    return parser


# Tavily's raw_content: up to 20 pages of RAW_CONTENT_CHARS characters, 4 UTF-8 bytes each
MAX_RAW_CONTENT = searchapi.MAX_TAVILY_RESULTS * searchapi.RAW_CONTENT_CHARS * 4


def check_api_answer(host: str, response: WebResponse, sent: int) -> None:
    """A handler's answer: a 200 or the API's 4xx, in that API's shape, bounded; a
    DuckDuckGo page holds the template's tags and attributes only."""
    assert response.status in (200, 400, 404), (response.status, response.body[:300])
    assert len(response.body) <= MAX_ANSWER + 2 * sent + MAX_RAW_CONTENT
    assert b"Traceback" not in response.body
    text = response.body.decode("utf-8")
    if host in (searchapi.DDG_HTML_HOST, searchapi.DDG_LITE_HOST):
        page = skeleton(text)
        assert {t[0].lstrip("/") for t in page.tags} <= DDG_TAGS, page.tags
        assert {a for t in page.tags for a in t[1:]} <= DDG_ATTRS, page.tags
        return
    value = json.loads(text)
    if response.status == 200:
        assert response.kind == "search"
        return
    assert response.kind == "refused"
    if host == searchapi.TAVILY_HOST:
        assert isinstance(value["detail"]["error"], str)
    elif host == searchapi.BRAVE_HOST:
        assert value["type"] == "ErrorResponse" and value["error"]["status"] == response.status
    elif host == searchapi.SERPER_HOST:
        assert value["statusCode"] == response.status and isinstance(value["message"], str)
    else:
        assert isinstance(value["error"], str)


@given(api_request)
@example((searchapi.SEARXNG_HOST, "GET", 0, b"q=alpha&format=json&k=100&pageno=100", b""))  # 502
@example((searchapi.SEARXNG_HOST, "GET", 0, b"q=%21%21&format=json", b""))  # 502
@example((searchapi.TAVILY_HOST, "POST", 0, b"", b'{"query": "alpha \\ud800"}'))  # raised
@example((searchapi.TAVILY_HOST, "POST", 1, b"", b'{"urls": ["http://[x#f"]}'))  # raised
@example((searchapi.TAVILY_HOST, "POST", 1, b"", b'{"urls": "\\udc00"}'))  # raised
@example((searchapi.TAVILY_HOST, "POST", 0, b"", b'{"query": "alpha", "max_results": 3.7}'))
@example((searchapi.BRAVE_HOST, "GET", 0, b"q=%00", b""))  # 502
@example((searchapi.BRAVE_HOST, "POST", 0, b"", b""))  # a 404 in SearXNG's shape
@example((searchapi.DDG_HTML_HOST, "POST", 0, b"", b"q=%3Cscript%3E%21&s=1"))
@example((searchapi.DDG_LITE_HOST, "GET", 0, b"q=!%22%3E%3Cimg", b""))  # 502
def test_api_handlers_answer_every_request(req: tuple[str, str, int, bytes, bytes]) -> None:
    host, method, which, query, body = req
    paths = API_PATHS[host]
    url = f"https://{host}{paths[which % len(paths)]}?" + query.decode("latin-1")
    response = HANDLERS[host](WebRequest(method, url, (), body))
    check_api_answer(host, response, len(url) + len(body))


hostile_text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40))
hostile_hit = st.builds(
    lambda url, title, snippet: Hit("d", url, title, snippet, 1.0, 1),
    st.one_of(
        st.sampled_from(('https://ex.org/"a<b>&c', "javascript:alert(1)", "")),
        hostile_text.map(lambda t: "https://ex.org/" + t),
    ),
    hostile_text,
    hostile_text,
)


@given(hostile_text, st.lists(hostile_hit, max_size=4))
@example("</title><script>alert(1)</script>", [Hit("d", '"><x y=z>', "<i>", "&amp;", 1.0, 1)])
def test_ddg_pages_escape_untrusted_text_exactly(query: str, hits: list[Hit]) -> None:
    """The page of a hostile query and hits has the same tags and attributes as the page of
    a plain one, and reads back (parsed) to exactly the query, titles, snippets and URLs."""
    plain = [Hit("d", "https://ex.org/", "title", "snippet", 1.0, 1)] * len(hits)
    for render in (searchapi.ddg_html_page, searchapi.ddg_lite_page):
        page = skeleton(render(query, hits))
        assert page.tags == skeleton(render("q", plain)).tags
        assert ("value", query) in page.values
        hrefs = [v for name, v in page.values if name == "href"]
        per_hit = 3 if render is searchapi.ddg_html_page else 1
        assert hrefs == [hit.url for hit in hits for _ in range(per_hit)]
        text = "".join(page.text)
        assert f"{query} at DuckDuckGo" in text
        for hit in hits:
            assert (hit.title or hit.url) in text and hit.snippet in text


@given(
    st.one_of(
        json_scalar,
        st.lists(json_scalar, max_size=2),
        st.dictionaries(st.text(max_size=2), json_scalar, max_size=2),
    )
)
@example(3.7)
@example(True)
@example(float("nan"))
@example(10**30)
def test_int_param_is_an_int_in_range_or_refused(raw: Any) -> None:
    try:
        value = searchapi.int_param(raw, "n", 5, 0, 20)
    except searchapi.BadRequest:
        return
    assert type(value) is int and 0 <= value <= 20
    if raw is None or raw == "":
        assert value == 5
    else:
        assert value == int(raw) and not isinstance(raw, bool | list | dict)
        assert not isinstance(raw, float) or raw == value


# --- regressions: each defect the fuzzing found, as a plain test --------------------------------


def get(port: int, target: str) -> Answer:
    return send(port, request_bytes(port, "GET", target.encode(), {}, b""))


def post(port: int, path: str, body: bytes, content_type: str) -> Answer:
    headers = {"Content-Type": content_type, "Accept": "application/json, text/event-stream"}
    return send(port, request_bytes(port, "POST", path.encode(), headers, body), "POST")


@pytest.mark.parametrize("target", ["http://[x#f", "http://a\uff03b/#x"])
def test_open_of_a_target_that_is_no_url_is_a_400(port: int, target: str) -> None:
    answer = get(port, "/open?" + urlencode({"id": target}))
    assert answer.status == 400 and "unknown docid or URL" in answer.json()["error"]


def test_lone_surrogates_and_bad_utf8_in_json_bodies_are_a_400(port: int) -> None:
    answer = post(port, "/search", b'{"q": "alpha \\ud800"}', "application/json")
    assert answer.status == 400 and "surrogate" in answer.json()["error"]
    for body in (b"\xff", INITIALIZE.replace(b"1", b'"\\udfff"', 1)):
        answer = post(port, "/mcp", body, "application/json")
        assert answer.status == 400
        assert answer.json()["error"]["code"] == server.PARSE_ERROR
    assert post(port, "/search", b'{"q": "alpha \\u00e9"}', "application/json").status == 200


@pytest.mark.parametrize(
    ("body", "kind"),
    [(b'{"q": null}', "null"), (b'{"q": ["alpha"]}', "an array"), (b'{"k": true}', "boolean")],
)
def test_json_fields_of_the_wrong_type_are_refused(port: int, body: bytes, kind: str) -> None:
    answer = post(port, "/search", body, "application/json")
    assert answer.status == 400 and kind in answer.json()["error"]


def test_an_uploaded_file_is_not_searched_as_its_repr(port: int) -> None:
    body = multipart(
        [(b'Content-Disposition: form-data; name="q"; filename="a.txt"', b"alpha")], True
    )
    answer = post(port, "/search", body, "multipart/form-data; boundary=b")
    assert answer.status == 400 and "is a file" in answer.json()["error"]


def test_mcp_post_without_a_json_content_type_is_a_jsonrpc_error(port: int) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        answer = post(port, "/mcp", INITIALIZE, content_type)
        assert answer.status == 415 and "Content-Type" in answer.json()["error"]["message"]


def test_bytes_that_are_not_http_get_a_json_400(port: int) -> None:
    for raw in (b"GET /search?q=\x00 HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\r\n\r\n"):
        answer = send(port, raw)
        assert answer.status == 400 and answer.json() == {"error": "Invalid HTTP request received."}
    assert health(port).status == 200


def test_unknown_paths_and_methods_are_json_errors(port: int) -> None:
    missing = get(port, "/nope")
    assert missing.status == 404 and missing.json() == {"error": "Not Found"}
    raw = request_bytes(port, "PUT", b"/search?q=alpha", {}, b"")
    wrong = send(port, raw, "PUT")
    assert wrong.status == 405 and wrong.json() == {"error": "Method Not Allowed"}
    assert "GET" in wrong.headers["allow"]


def searxng(query: str) -> WebResponse:
    url = f"https://{searchapi.SEARXNG_HOST}/search?{query}"
    return HANDLERS[searchapi.SEARXNG_HOST](WebRequest("GET", url))


def test_searxng_k_over_what_is_searched_is_a_400_not_a_502() -> None:
    for query in ("k=100&pageno=100", "k=2000", "k=0"):
        response = searxng(f"q=alpha&format=json&{query}")
        assert response.status == 400 and "k" in json.loads(response.body)["error"]


@pytest.mark.parametrize("q", ["!!", "%00", "%E2%80%8B", "---"])
def test_a_query_without_words_is_each_apis_400_not_a_502(q: str) -> None:
    tavily = json.dumps({"query": unquote(q)}).encode()
    for host, method, url, body in (
        (
            searchapi.SEARXNG_HOST,
            "GET",
            f"https://{searchapi.SEARXNG_HOST}/search?q={q}&format=json",
            b"",
        ),
        (searchapi.TAVILY_HOST, "POST", "https://api.tavily.com/search", tavily),
        (
            searchapi.BRAVE_HOST,
            "GET",
            f"https://{searchapi.BRAVE_HOST}/res/v1/web/search?q={q}",
            b"",
        ),
        (
            searchapi.SERPER_HOST,
            "POST",
            "https://google.serper.dev/search",
            json.dumps({"q": unquote(q)}).encode(),
        ),
        (searchapi.DDG_HTML_HOST, "GET", f"https://html.duckduckgo.com/html/?q={q}", b""),
        (searchapi.DDG_LITE_HOST, "POST", "https://lite.duckduckgo.com/lite/", f"q={q}".encode()),
    ):
        response = HANDLERS[host](WebRequest(method, url, (), body))
        assert response.status == 400 and response.kind == "refused", (host, response.body)
        assert b"no searchable words" in response.body


def test_tavily_lone_surrogates_are_a_400_not_an_exception() -> None:
    handler = HANDLERS[searchapi.TAVILY_HOST]
    for route, body in (
        ("search", b'{"query": "alpha \\ud800"}'),
        ("extract", b'{"urls": ["\\udc00"]}'),
    ):
        response = handler(WebRequest("POST", f"https://api.tavily.com/{route}", (), body))
        assert (
            response.status == 400 and "surrogate" in json.loads(response.body)["detail"]["error"]
        )


def test_tavily_extract_of_a_target_that_is_no_url_fails_that_url_only() -> None:
    body = json.dumps({"urls": ["http://[x#f", "https://ex.org/p1"]}).encode()
    response = HANDLERS[searchapi.TAVILY_HOST](
        WebRequest("POST", "https://api.tavily.com/extract", (), body)
    )
    value = json.loads(response.body)
    assert response.status == 200
    assert [r["url"] for r in value["failed_results"]] == ["http://[x#f"]
    assert [r["url"] for r in value["results"]] == ["https://ex.org/p1"]


def test_tavily_fractional_max_results_is_refused_not_truncated() -> None:
    body = json.dumps({"query": "alpha", "max_results": 3.7}).encode()
    response = HANDLERS[searchapi.TAVILY_HOST](
        WebRequest("POST", "https://api.tavily.com/search", (), body)
    )
    assert response.status == 400 and "integer" in json.loads(response.body)["detail"]["error"]
    body = json.dumps({"query": "alpha", "max_results": 3.0}).encode()
    ok = HANDLERS[searchapi.TAVILY_HOST](
        WebRequest("POST", "https://api.tavily.com/search", (), body)
    )
    assert ok.status == 200 and len(json.loads(ok.body)["results"]) == 3


def test_unknown_api_routes_are_404s_in_each_apis_error_shape() -> None:
    tavily = HANDLERS[searchapi.TAVILY_HOST](WebRequest("GET", "https://api.tavily.com/search"))
    assert tavily.status == 404 and "not served" in json.loads(tavily.body)["detail"]["error"]
    brave = HANDLERS[searchapi.BRAVE_HOST](
        WebRequest("POST", f"https://{searchapi.BRAVE_HOST}/res/v1/web/search")
    )
    value = json.loads(brave.body)
    assert brave.status == 404 and value["type"] == "ErrorResponse"
    assert value["error"]["status"] == 404 and value["error"]["code"] == "NOT_FOUND"
