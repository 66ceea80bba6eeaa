"""Public search APIs answered from the frozen index, each in its own response format.

Why emulate the APIs rather than ask agents to use drarena's: research agents ship with a
search client for SearXNG, Tavily, Brave or DuckDuckGo and nothing else. When the frozen-web
proxy answers those services' hosts from the snapshot's retriever (BM25, dense or hybrid),
an agent searches the frozen web with its own client, unchanged; only its environment points
it at the proxy (or, for SearXNG, at a base URL).

Served here, one handler per host (`search_handlers`), each a pure function of a
`WebRequest` (drarena.webproxy.handlers) to a `WebResponse`:

- SearXNG (`GET|POST /search?q=..&format=json`) at `SEARXNG_HOST`, or any host you name:
  drarena's own SearXNG answer (drarena.search.server.handle_search), not a copy.
- Tavily (`POST https://api.tavily.com/search`, JSON body; `/extract` reads pages by URL):
  {query, answer, images, results: [{title, url, content, score, raw_content}], ...}.
- Brave Search (`GET https://api.search.brave.com/res/v1/web/search?q=..&count=..&offset=..`):
  {type: search, query: {original}, mixed, web: {type: search, results: [...]}}.
- Serper, Google results as JSON (`POST https://google.serper.dev/search`, body {q, num, page}):
  {searchParameters, organic: [{title, link, snippet, position}], credits}; STORM's SerperRM
  reads it, then fetches each `link` itself through the proxy.
- DuckDuckGo's HTML results page (`GET|POST https://html.duckduckgo.com/html/`, the page the
  `ddgs` library and many agents scrape) and its lite page (`lite.duckduckgo.com/lite/`,
  scraped by smolagents' WebSearchTool), with the markup classes those parsers look for.

Queries are untrusted data: capped at MAX_QUERY_CHARS (over it: the API's 4xx error, as
the real services refuse long queries), result counts clamped to each API's own maximum,
titles and snippets HTML-escaped on the DuckDuckGo pages. Handlers never raise for bad input:
a bad request gets that API's error shape (4xx); a retriever error is a 502. Every answered
search is marked kind="search" with its query and result URLs, which the proxy records in
the round's trajectory; an answer that carries whole pages (Tavily's raw_content, /extract)
also names them in `read`, and the trajectory counts those pages as opened. Retriever calls
are serialised by a lock (the proxy may call from several threads; the JVM behind BM25
prefers one).
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from drarena.errors import DrarenaError
from drarena.records import Hit, lone_surrogate
from drarena.search.base import Retriever
from drarena.search.docstore import clean_query
from drarena.search.server import BadParameter, handle_search, open_page
from drarena.webproxy.handlers import Handler, WebRequest, WebResponse

SEARXNG_HOST = "searxng.drarena.test"  # `.test` is reserved: it never resolves outside the proxy
TAVILY_HOST = "api.tavily.com"
BRAVE_HOST = "api.search.brave.com"
SERPER_HOST = "google.serper.dev"
DDG_HTML_HOST = "html.duckduckgo.com"
DDG_LITE_HOST = "lite.duckduckgo.com"

MAX_QUERY_CHARS = 1000
MAX_TAVILY_RESULTS = 20  # Tavily's max_results range is 0..20
MAX_BRAVE_COUNT = 20  # Brave's count range is 1..20, offset 0..9
MAX_BRAVE_OFFSET = 9
MAX_SERPER_NUM = 100  # Serper's num goes up to 100 results a page
MAX_SERPER_PAGE = 10
DDG_PAGE_RESULTS = 10
MAX_DDG_OFFSET = 500
RAW_CONTENT_CHARS = 20_000  # Tavily raw_content / extract: one page's text, capped
MAX_EXTRACT_URLS = 20  # Tavily extract accepts up to 20 URLs


class BadRequest(ValueError):
    """Input the API refuses; the handler answers with that API's 4xx error shape."""


class Searcher:
    """One retriever, called one request at a time; every API handler searches through it."""

    def __init__(self, retriever: Retriever, page_chars: int = RAW_CONTENT_CHARS) -> None:
        self.retriever = retriever
        self.page_chars = page_chars  # what one page's text is cut to (raw_content, extract)
        self.lock = threading.Lock()

    def search(self, query: str, k: int) -> list[Hit]:
        with self.lock:
            return self.retriever.search(query, k)

    def page_text(self, url: str) -> str:
        with self.lock:
            return open_page(self.retriever, url, 0, self.page_chars).text

    def searxng(self, params: dict[str, str]) -> dict[str, Any]:
        with self.lock:
            return handle_search(self.retriever, params)


def check_query(raw: Any) -> str:
    """The query to answer; a missing, overlong or wordless one (punctuation, control
    characters only: every retriever refuses it) is the API's 400, not a failed search."""
    if not isinstance(raw, str) or not raw.strip():
        raise BadRequest("query is missing")
    if len(raw) > MAX_QUERY_CHARS:
        raise BadRequest(f"query is longer than {MAX_QUERY_CHARS} characters")
    try:
        clean_query(raw)
    except DrarenaError as exc:
        raise BadRequest(str(exc)) from None
    return raw.strip()


def int_param(raw: Any, name: str, default: int, low: int, high: int) -> int:
    """An integer parameter in [low, high]; refused (not clamped) outside, as the APIs do."""
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
        raise BadRequest(f"{name} must be an integer")  # 3.7 was taken as 3
    try:
        value = int(raw)
    except (TypeError, ValueError, OverflowError):  # OverflowError: JSON's 1e400 is inf
        raise BadRequest(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise BadRequest(f"{name} must be in {low}..{high}")
    return value


def search_log(query: str, hits: list[Hit]) -> dict[str, Any]:
    return {"kind": "search", "query": query, "urls": tuple(h.url for h in hits)}


def guarded(
    answer: Callable[[WebRequest], WebResponse],
    refuse: Callable[[int, str], WebResponse],
) -> Handler:
    """`answer`, with bad input (BadRequest) as a 400 and retriever errors as a 502, both in
    the API's own error shape: a handler must not raise."""

    def handler(request: WebRequest) -> WebResponse:
        try:
            return answer(request)
        except BadRequest as exc:
            return refuse(400, str(exc))
        except DrarenaError as exc:
            return refuse(502, f"search failed: {str(exc)[:300]}")

    return handler


def json_error(status: int, message: str) -> WebResponse:
    return WebResponse.json_response({"error": message}, status, kind="refused")


def not_served(request: WebRequest) -> str:
    return f"{request.method} {request.path[:100]} is not served here"


def not_found(request: WebRequest, status: int = 404) -> WebResponse:
    return json_error(status, not_served(request))


# --- SearXNG ----------------------------------------------------------------------------


def searxng_handler(searcher: Searcher) -> Handler:
    def answer(request: WebRequest) -> WebResponse:
        if request.path.rstrip("/") not in ("", "/search") or request.method not in (
            "GET",
            "POST",
        ):
            return not_found(request)
        params = request.query()
        if request.method == "POST":
            params.update(request.form())
        query = check_query(params.get("q", ""))
        if params.get("format", "") != "json":
            raise BadRequest("only format=json is served (the HTML search page is not)")
        params["q"] = query
        try:
            result = searcher.searxng(params)
        except BadParameter as exc:  # k x pageno over MAX_K was a 502 "search failed"
            raise BadRequest(str(exc)) from None
        urls = tuple(r["url"] for r in result["results"])
        return WebResponse.json_response(result, kind="search", query=query, urls=urls)

    return guarded(answer, json_error)


# --- Tavily -----------------------------------------------------------------------------


def tavily_error(status: int, message: str) -> WebResponse:
    return WebResponse.json_response({"detail": {"error": message}}, status, kind="refused")


def tavily_body(request: WebRequest) -> dict[str, Any]:
    try:
        body = request.json()
    except (ValueError, RecursionError):
        raise BadRequest("request body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    if lone_surrogate(request.body.decode("utf-8"), body):  # could not be echoed as UTF-8
        raise BadRequest("request body holds a lone UTF-16 surrogate escape (not text)")
    return body


def tavily_search(searcher: Searcher, body: dict[str, Any]) -> WebResponse:
    query = check_query(body.get("query"))
    k = int_param(body.get("max_results"), "max_results", 5, 0, MAX_TAVILY_RESULTS)
    raw = body.get("include_raw_content", False)
    hits = searcher.search(query, k) if k else []
    results = []
    for hit in hits:
        results.append(
            {
                "title": hit.title,
                "url": hit.url,
                "content": hit.snippet,
                "score": hit.score,
                "raw_content": searcher.page_text(hit.url) if raw else None,
            }
        )
    answer = {
        "query": query,
        "follow_up_questions": None,
        "answer": None,  # no model writes answers here: the agent reads the pages itself
        "images": [],
        "results": results,
        "response_time": 0.0,  # fixed: a replay must produce the same bytes
    }
    read = tuple(str(r["url"]) for r in results if r["raw_content"] is not None)
    return WebResponse.json_response(answer, **search_log(query, hits), read=read)


def tavily_extract(searcher: Searcher, body: dict[str, Any]) -> WebResponse:
    urls = body.get("urls")
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise BadRequest("urls must be a URL or a list of URLs")
    if len(urls) > MAX_EXTRACT_URLS:
        raise BadRequest(f"at most {MAX_EXTRACT_URLS} urls")
    results, failed = [], []
    for url in urls:
        try:
            results.append({"url": url, "raw_content": searcher.page_text(url), "images": []})
        except DrarenaError:
            failed.append({"url": url, "error": "not in the snapshot"})
    answer = {"results": results, "failed_results": failed, "response_time": 0.0}
    read = tuple(str(r["url"]) for r in results)
    return WebResponse.json_response(answer, kind="search", query="extract", urls=read, read=read)


def tavily_handler(searcher: Searcher) -> Handler:
    def answer(request: WebRequest) -> WebResponse:
        route = request.path.rstrip("/")
        if request.method != "POST" or route not in ("/search", "/extract"):
            return tavily_error(404, not_served(request))
        body = tavily_body(request)
        if route == "/search":
            return tavily_search(searcher, body)
        return tavily_extract(searcher, body)

    return guarded(answer, tavily_error)


# --- Brave ------------------------------------------------------------------------------


def brave_error(status: int, message: str) -> WebResponse:
    error = {
        "id": "drarena",
        "status": status,
        "code": {400: "VALIDATION", 404: "NOT_FOUND"}.get(status, "UNAVAILABLE"),
        "detail": message,
        "meta": {},
    }
    return WebResponse.json_response(
        {"type": "ErrorResponse", "error": error, "time": 0}, status, kind="refused"
    )


def brave_result(hit: Hit) -> dict[str, Any]:
    parts = urlsplit(hit.url)
    return {
        "type": "search_result",
        "subtype": "generic",
        "title": hit.title,
        "url": hit.url,
        "description": html.escape(hit.snippet, quote=False),  # Brave's text is HTML
        "is_source_local": False,
        "is_source_both": False,
        "family_friendly": True,
        "language": "en",
        "profile": {"name": parts.netloc, "url": hit.url, "long_name": parts.netloc, "img": ""},
        "meta_url": {
            "scheme": parts.scheme,
            "netloc": parts.netloc,
            "hostname": parts.hostname or "",
            "favicon": "",
            "path": parts.path or "/",
        },
    }


def brave_handler(searcher: Searcher) -> Handler:
    def answer(request: WebRequest) -> WebResponse:
        if request.method != "GET" or request.path.rstrip("/") != "/res/v1/web/search":
            return brave_error(404, not_served(request))
        params = request.query()
        query = check_query(params.get("q"))
        count = int_param(params.get("count"), "count", 20, 1, MAX_BRAVE_COUNT)
        offset = int_param(params.get("offset"), "offset", 0, 0, MAX_BRAVE_OFFSET)
        hits = searcher.search(query, count * (offset + 1))[count * offset :]
        results = [brave_result(hit) for hit in hits]
        value = {
            "type": "search",
            "query": {"original": query, "more_results_available": len(hits) == count},
            "mixed": {
                "type": "mixed",
                "main": [{"type": "web", "index": i, "all": False} for i in range(len(results))],
                "top": [],
                "side": [],
            },
            "web": {"type": "search", "results": results, "family_friendly": True},
        }
        return WebResponse.json_response(value, **search_log(query, hits))

    return guarded(answer, brave_error)


# --- Serper -----------------------------------------------------------------------------


def serper_error(status: int, message: str) -> WebResponse:
    return WebResponse.json_response(
        {"message": message, "statusCode": status}, status, kind="refused"
    )


def serper_handler(searcher: Searcher) -> Handler:
    """Serper's Google search (`POST /search`, JSON body {q, num, page, type, ...}). Fields
    this snapshot has no counterpart for (gl, hl, location, autocorrect) are accepted and
    ignored; `type` other than "search" (images, news, places) is a 400: there is only text."""

    def answer(request: WebRequest) -> WebResponse:
        if request.method != "POST" or request.path.rstrip("/") != "/search":
            return serper_error(404, not_served(request))
        body = tavily_body(request)  # the same JSON-object checks
        query = check_query(body.get("q"))
        if body.get("type", "search") != "search":
            raise BadRequest("only type=search is served")
        num = int_param(body.get("num"), "num", 10, 1, MAX_SERPER_NUM)
        page = int_param(body.get("page"), "page", 1, 1, MAX_SERPER_PAGE)
        hits = searcher.search(query, num * page)[num * (page - 1) :]
        organic = [
            {"title": hit.title, "link": hit.url, "snippet": hit.snippet, "position": i}
            for i, hit in enumerate(hits, start=num * (page - 1) + 1)
        ]
        value = {
            "searchParameters": {
                "q": query,
                "type": "search",
                "num": num,
                "page": page,
                "engine": "google",
            },
            "organic": organic,
            "credits": 1,
        }
        return WebResponse.json_response(value, **search_log(query, hits))

    return guarded(answer, serper_error)


# --- DuckDuckGo -------------------------------------------------------------------------

DDG_HEAD = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
    "<title>{title} at DuckDuckGo</title></head><body>\n"
)


def ddg_error(status: int, message: str) -> WebResponse:
    page = DDG_HEAD.format(title="Error") + f"<p>{html.escape(message)}</p></body></html>\n"
    return WebResponse.text_response(page, status, "text/html", kind="refused")


def ddg_params(request: WebRequest) -> tuple[str, int]:
    params = request.query()
    if request.method == "POST":
        params.update(request.form())
    query = check_query(params.get("q"))
    offset = int_param(params.get("s"), "s", 0, 0, MAX_DDG_OFFSET)
    return query, offset


def ddg_html_page(query: str, hits: list[Hit]) -> str:
    """The markup of html.duckduckgo.com/html/: `ddgs` reads each `div.result__body`
    (title from its h2, URL from its direct `a`, snippet from that a's text)."""
    q = html.escape(query)
    rows = []
    for hit in hits:
        url, title = html.escape(hit.url), html.escape(hit.title or hit.url)
        shown = html.escape(hit.url.split("://", 1)[-1])
        rows.append(
            '<div class="result results_links results_links_deep web-result">'
            '<div class="links_main links_deep result__body">'
            f'<h2 class="result__title"><a rel="nofollow" class="result__a" href="{url}">'
            f"{title}</a></h2>"
            f'<div class="result__extras"><div class="result__extras__url">'
            f'<a class="result__url" href="{url}">{shown}</a></div></div>'
            f'<a class="result__snippet" href="{url}">{html.escape(hit.snippet)}</a>'
            "</div></div>\n"
        )
    if not rows:
        rows.append('<div class="no-results">No results.</div>\n')
    form = (
        '<form action="/html/" method="post">'
        f'<input type="text" name="q" value="{q}"><input type="submit" value="Search"></form>\n'
    )
    return (
        DDG_HEAD.format(title=q)
        + form
        + '<div id="links" class="results">\n'
        + "".join(rows)
        + "</div></body></html>\n"
    )


def ddg_lite_page(query: str, hits: list[Hit]) -> str:
    """The markup of lite.duckduckgo.com/lite/: a table, `a.result-link` per title,
    `td.result-snippet` and `span.link-text` (the URL without its scheme) per result."""
    q = html.escape(query)
    rows = []
    for rank, hit in enumerate(hits, 1):
        url, title = html.escape(hit.url), html.escape(hit.title or hit.url)
        shown = html.escape(hit.url.split("://", 1)[-1])
        rows.append(
            f'<tr><td valign="top">{rank}.&nbsp;</td><td>'
            f'<a rel="nofollow" href="{url}" class="result-link">{title}</a></td></tr>\n'
            f'<tr><td>&nbsp;</td><td class="result-snippet">{html.escape(hit.snippet)}</td></tr>\n'
            f'<tr><td>&nbsp;</td><td><span class="link-text">{shown}</span></td></tr>\n'
            "<tr><td>&nbsp;</td><td>&nbsp;</td></tr>\n"
        )
    if not rows:
        rows.append("<tr><td>No results.</td></tr>\n")
    form = (
        '<form action="/lite/" method="post">'
        f'<input type="text" name="q" value="{q}"><input type="submit" value="Search"></form>\n'
    )
    return (
        DDG_HEAD.format(title=q) + form + "<table>\n" + "".join(rows) + "</table></body></html>\n"
    )


def ddg_handler(searcher: Searcher, route: str, render: Callable[[str, list[Hit]], str]) -> Handler:
    def answer(request: WebRequest) -> WebResponse:
        if request.method not in ("GET", "POST") or request.path.rstrip("/") != route:
            return ddg_error(404, f"{request.path[:100]} is not served here")
        query, offset = ddg_params(request)
        hits = searcher.search(query, offset + DDG_PAGE_RESULTS)[offset:]
        return WebResponse.text_response(
            render(query, hits), content_type="text/html", **search_log(query, hits)
        )

    return guarded(answer, ddg_error)


def search_handlers(
    retriever: Retriever, searxng_host: str = SEARXNG_HOST, page_chars: int = RAW_CONTENT_CHARS
) -> dict[str, Handler]:
    """host -> handler for every emulated search API, all answering from `retriever`; a page
    a search answer carries whole (Tavily's raw_content, /extract) is cut to `page_chars`."""
    searcher = Searcher(retriever, page_chars)
    return {
        searxng_host: searxng_handler(searcher),
        TAVILY_HOST: tavily_handler(searcher),
        BRAVE_HOST: brave_handler(searcher),
        SERPER_HOST: serper_handler(searcher),
        DDG_HTML_HOST: ddg_handler(searcher, "/html", ddg_html_page),
        DDG_LITE_HOST: ddg_handler(searcher, "/lite", ddg_lite_page),
    }
