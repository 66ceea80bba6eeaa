"""The emulated search APIs (drarena/webproxy/searchapi.py) over the real BM25 retriever of the
committed snapshot, checked with each API's official client from PyPI.

The clients reach the handlers through a plain loopback HTTP server (`serve_handler`) that
turns each request into a WebRequest for the emulated host: tavily-python and SearXNG by base
URL. The Brave client and ddgs only speak HTTPS to their fixed hosts, so without the frozen-web
proxy their own parsers are applied to the handler's answer: brave-search-python-client's
response model, and ddgs's DuckDuckGo engine `extract_results`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import requests

from drarena.search.base import build_retriever
from drarena.webproxy import searchapi
from drarena.webproxy.handlers import Handler, WebRequest, WebResponse

QUERY = "json encoder"


@pytest.fixture(scope="module")
def handlers(pydocs_indexed: tuple[Path, Path]) -> dict[str, Handler]:
    snapshot, index_root = pydocs_indexed
    return searchapi.search_handlers(build_retriever({"kind": "bm25"}, snapshot, index_root))


@pytest.fixture(scope="module")
def snapshot_urls(pydocs_indexed: tuple[Path, Path]) -> set[str]:
    docs = pydocs_indexed[0] / "docs.jsonl"
    return {json.loads(line)["url"] for line in docs.read_text(encoding="utf-8").splitlines()}


def call(handler: Handler, method: str, url: str, body: bytes = b"", **headers: str) -> Any:
    return handler(WebRequest(method, url, tuple(headers.items()), body))


def body_json(response: WebResponse) -> Any:
    return json.loads(response.body.decode("utf-8"))


class _Server(ThreadingHTTPServer):
    handler: Handler
    host_name: str


class _Adapter(BaseHTTPRequestHandler):
    """Loopback HTTP in front of one handler, as the proxy will put it: the request's URL is
    rewritten to the emulated host (https://<host><path>)."""

    server: _Server

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = WebRequest(
            self.command,
            f"https://{self.server.host_name}{self.path}",
            tuple(self.headers.items()),
            body,
        )
        response = self.server.handler(request)
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve_handler() -> Iterator[Any]:
    servers: list[_Server] = []

    def start(handler: Handler, host: str) -> str:
        server = _Server(("127.0.0.1", 0), _Adapter)
        server.handler, server.host_name = handler, host
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# --- Tavily -----------------------------------------------------------------------------


def test_tavily_client_searches_the_frozen_index(
    handlers: dict[str, Handler], serve_handler: Any, snapshot_urls: set[str]
) -> None:
    from tavily import TavilyClient

    base = serve_handler(handlers[searchapi.TAVILY_HOST], searchapi.TAVILY_HOST)
    client = TavilyClient(api_key="tvly-frozen", api_base_url=base)
    answer = client.search(QUERY, max_results=3, include_raw_content=True)
    assert answer["query"] == QUERY
    assert 1 <= len(answer["results"]) <= 3
    for result in answer["results"]:
        assert result["url"] in snapshot_urls
        assert result["title"] and result["content"]
        assert isinstance(result["score"], float)
        assert result["raw_content"] and len(result["raw_content"]) <= searchapi.RAW_CONTENT_CHARS
    extracted = client.extract([answer["results"][0]["url"], "https://example.invalid/x"])
    assert [r["url"] for r in extracted["results"]] == [answer["results"][0]["url"]]
    assert extracted["failed_results"][0]["url"] == "https://example.invalid/x"


def test_tavily_answer_is_logged_as_a_search(handlers: dict[str, Handler]) -> None:
    handler = handlers[searchapi.TAVILY_HOST]
    body = json.dumps({"query": QUERY, "max_results": 2}).encode()
    response = call(handler, "POST", "https://api.tavily.com/search", body)
    assert response.status == 200
    assert response.kind == "search" and response.query == QUERY
    assert response.urls == tuple(r["url"] for r in body_json(response)["results"])
    assert body_json(response)["results"][0]["raw_content"] is None
    assert response.read == ()  # snippets only: no page was read
    # replay identity: the same request gives the same bytes
    assert call(handler, "POST", "https://api.tavily.com/search", body).body == response.body


def test_tavily_pages_carried_whole_are_logged_as_read(handlers: dict[str, Handler]) -> None:
    """raw_content and /extract hand the agent whole pages: `read` names them, so the
    trajectory counts them as opened (an agent like Open Deep Research reads only so)."""
    handler = handlers[searchapi.TAVILY_HOST]
    body = json.dumps({"query": QUERY, "max_results": 2, "include_raw_content": True}).encode()
    response = call(handler, "POST", "https://api.tavily.com/search", body)
    assert response.read and response.read == response.urls
    first = response.urls[0]
    urls = json.dumps({"urls": [first, "https://example.invalid/x"]}).encode()
    extracted = call(handler, "POST", "https://api.tavily.com/extract", urls)
    assert extracted.read == (first,)  # the failed URL was not read


def test_page_chars_cuts_the_pages_a_search_answer_carries(
    pydocs_indexed: tuple[Path, Path],
) -> None:
    """CommandArgs.search_page_chars: an agent with a short-context model gets shorter pages
    in raw_content and /extract, and the same search results."""
    from drarena.agents.external import CommandArgs

    assert CommandArgs(command=["x"]).search_page_chars == searchapi.RAW_CONTENT_CHARS
    snapshot, index_root = pydocs_indexed
    retriever = build_retriever({"kind": "bm25"}, snapshot, index_root)
    full = searchapi.search_handlers(retriever)[searchapi.TAVILY_HOST]
    short = searchapi.search_handlers(retriever, page_chars=300)[searchapi.TAVILY_HOST]
    body = json.dumps({"query": QUERY, "max_results": 3, "include_raw_content": True}).encode()
    long_pages = body_json(call(full, "POST", "https://api.tavily.com/search", body))["results"]
    cut = body_json(call(short, "POST", "https://api.tavily.com/search", body))["results"]
    assert [r["url"] for r in cut] == [r["url"] for r in long_pages]
    assert max(len(r["raw_content"]) for r in long_pages) > 300
    assert all(0 < len(r["raw_content"]) <= 300 for r in cut)
    extract = json.dumps({"urls": [cut[0]["url"]]}).encode()
    extracted = body_json(call(short, "POST", "https://api.tavily.com/extract", extract))
    assert 0 < len(extracted["results"][0]["raw_content"]) <= 300


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"query": ""}).encode(), "query is missing"),
        (json.dumps({"query": 7}).encode(), "query is missing"),
        (json.dumps({"query": "x" * 1001}).encode(), "longer than 1000"),
        (json.dumps({"query": "a", "max_results": 21}).encode(), "0..20"),
        (json.dumps({"query": "a", "max_results": "many"}).encode(), "integer"),
        (b'{"query": "a", "max_results": 1e400}', "integer"),
    ],
)
def test_tavily_refuses_bad_requests_in_its_error_shape(
    handlers: dict[str, Handler], body: bytes, message: str
) -> None:
    response = call(handlers[searchapi.TAVILY_HOST], "POST", "https://api.tavily.com/search", body)
    assert response.status == 400 and response.kind == "refused"
    assert message in body_json(response)["detail"]["error"]


def test_tavily_client_raises_on_a_refused_request(
    handlers: dict[str, Handler], serve_handler: Any
) -> None:
    from tavily import TavilyClient

    base = serve_handler(handlers[searchapi.TAVILY_HOST], searchapi.TAVILY_HOST)
    with pytest.raises(Exception, match="longer than"):
        TavilyClient(api_key="tvly-frozen", api_base_url=base).search("x" * 1001)


def test_unknown_routes_are_404(handlers: dict[str, Handler]) -> None:
    tavily = call(handlers[searchapi.TAVILY_HOST], "GET", "https://api.tavily.com/search")
    brave = call(handlers[searchapi.BRAVE_HOST], "GET", "https://api.search.brave.com/res/v1/x")
    ddg = call(handlers[searchapi.DDG_HTML_HOST], "GET", "https://html.duckduckgo.com/other")
    assert (tavily.status, brave.status, ddg.status) == (404, 404, 404)


# --- SearXNG ----------------------------------------------------------------------------


def test_searxng_json_over_loopback_matches_drarena_search_serve(
    handlers: dict[str, Handler], serve_handler: Any, snapshot_urls: set[str]
) -> None:
    base = serve_handler(handlers[searchapi.SEARXNG_HOST], searchapi.SEARXNG_HOST)
    got = requests.get(f"{base}/search", params={"q": QUERY, "format": "json"}, timeout=30)
    assert got.status_code == 200
    answer = got.json()
    assert answer["query"] == QUERY and answer["results"]
    assert {r["url"] for r in answer["results"]} <= snapshot_urls
    assert answer["number_of_results"] == len(answer["results"])
    page2 = requests.post(
        f"{base}/search", data={"q": QUERY, "format": "json", "pageno": "2", "k": "2"}, timeout=30
    ).json()
    page1 = requests.get(
        f"{base}/search", params={"q": QUERY, "format": "json", "k": "4"}, timeout=30
    ).json()
    assert [r["url"] for r in page2["results"]] == [r["url"] for r in page1["results"][2:4]]


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"q": QUERY}, 400),  # HTML SearXNG page: not served
        ({"q": QUERY, "format": "json", "pageno": "0"}, 400),
        ({"q": QUERY, "format": "json", "pageno": "x"}, 400),
        ({"q": "", "format": "json"}, 400),
    ],
)
def test_searxng_bad_parameters(
    handlers: dict[str, Handler], query: dict[str, str], status: int
) -> None:
    url = f"https://{searchapi.SEARXNG_HOST}/search?{urlencode(query)}"
    response = call(handlers[searchapi.SEARXNG_HOST], "GET", url)
    assert response.status == status and "error" in body_json(response)


# --- Brave ------------------------------------------------------------------------------


def brave_get(handlers: dict[str, Handler], **params: str) -> WebResponse:
    url = f"https://{searchapi.BRAVE_HOST}/res/v1/web/search?{urlencode(params)}"
    headers = (("X-Subscription-Token", "k"),)
    return handlers[searchapi.BRAVE_HOST](WebRequest("GET", url, headers))


def test_brave_answer_parses_with_the_official_response_model(
    handlers: dict[str, Handler], snapshot_urls: set[str]
) -> None:
    from brave_search_python_client import WebSearchApiResponse

    response = brave_get(handlers, q=QUERY, count="4")
    assert response.status == 200 and response.kind == "search"
    parsed = WebSearchApiResponse.model_validate(body_json(response))
    assert parsed.query is not None and parsed.query.original == QUERY
    assert parsed.web is not None and 1 <= len(parsed.web.results) <= 4
    assert [r.url for r in parsed.web.results] == list(response.urls)
    assert {r.url for r in parsed.web.results} <= snapshot_urls
    second = WebSearchApiResponse.model_validate(
        body_json(brave_get(handlers, q=QUERY, count="2", offset="1"))
    )
    assert second.web is not None
    assert [r.url for r in second.web.results] == [r.url for r in parsed.web.results[2:4]]


@pytest.mark.parametrize(
    "params", [{"q": ""}, {"q": QUERY, "count": "21"}, {"q": QUERY, "offset": "10"}]
)
def test_brave_refuses_out_of_range_parameters(
    handlers: dict[str, Handler], params: dict[str, str]
) -> None:
    response = brave_get(handlers, **params)
    assert response.status == 400
    assert body_json(response)["type"] == "ErrorResponse"


# --- Serper -----------------------------------------------------------------------------


def serper_post(handlers: dict[str, Handler], body: Any) -> WebResponse:
    raw = json.dumps(body).encode()
    headers = (("X-API-KEY", "k"), ("Content-Type", "application/json"))
    return handlers[searchapi.SERPER_HOST](
        WebRequest("POST", f"https://{searchapi.SERPER_HOST}/search", headers, raw)
    )


def test_serper_answer_has_the_fields_storm_reads(
    handlers: dict[str, Handler], snapshot_urls: set[str]
) -> None:
    # knowledge-storm's SerperRM sends {num, autocorrect, page, q, type} and reads
    # organic[].link/.title/.snippet (and knowledgeGraph, absent here)
    body = {"num": 4, "autocorrect": True, "page": 1, "q": QUERY, "type": "search"}
    response = serper_post(handlers, body)
    assert response.status == 200 and response.kind == "search"
    value = body_json(response)
    assert value["searchParameters"]["q"] == QUERY and "knowledgeGraph" not in value
    organic = value["organic"]
    assert 1 <= len(organic) <= 4
    assert [o["position"] for o in organic] == list(range(1, len(organic) + 1))
    assert [o["link"] for o in organic] == list(response.urls)
    assert {o["link"] for o in organic} <= snapshot_urls
    assert all(o["title"] and o["snippet"] for o in organic)
    second = body_json(serper_post(handlers, {**body, "num": 2, "page": 2}))["organic"]
    assert [o["link"] for o in second] == [o["link"] for o in organic[2:4]]
    assert [o["position"] for o in second] == [3, 4][: len(second)]


@pytest.mark.parametrize(
    "body",
    [{"q": ""}, {"q": QUERY, "num": 101}, {"q": QUERY, "page": 0}, {"q": QUERY, "type": "images"}],
)
def test_serper_refuses_bad_requests_in_its_error_shape(
    handlers: dict[str, Handler], body: dict[str, Any]
) -> None:
    response = serper_post(handlers, body)
    assert response.status == 400 and response.kind == "refused"
    assert body_json(response)["statusCode"] == 400


# --- DuckDuckGo -------------------------------------------------------------------------


def test_ddg_html_page_parses_with_ddgs(
    handlers: dict[str, Handler], snapshot_urls: set[str]
) -> None:
    from ddgs.engines.duckduckgo import Duckduckgo

    engine = Duckduckgo()
    payload = urlencode(engine.build_payload(QUERY, "us-en", "moderate", None)).encode()
    response = call(
        handlers[searchapi.DDG_HTML_HOST],
        "POST",
        engine.search_url,
        payload,
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status == 200 and response.query == QUERY
    results = engine.post_extract_results(engine.extract_results(response.body.decode()))
    assert [r.href for r in results] == list(response.urls)
    assert results and {r.href for r in results} <= snapshot_urls
    assert all(r.title and r.body for r in results)


def test_ddg_pages_escape_untrusted_text(handlers: dict[str, Handler]) -> None:
    from ddgs.engines.duckduckgo import Duckduckgo

    hostile = '<script>alert(1)</script> "json"'
    for host, route in ((searchapi.DDG_HTML_HOST, "/html/"), (searchapi.DDG_LITE_HOST, "/lite/")):
        url = f"https://{host}{route}?{urlencode({'q': hostile})}"
        page = call(handlers[host], "GET", url).body.decode()
        assert "<script>" not in page and "&lt;script&gt;" in page
    assert Duckduckgo().extract_results(
        call(
            handlers[searchapi.DDG_HTML_HOST], "GET", f"https://html.duckduckgo.com/html/?q={QUERY}"
        ).body.decode()
    )


def test_ddg_lite_page_parses_with_smolagents_parser_shape(handlers: dict[str, Handler]) -> None:
    """smolagents' WebSearchTool reads lite.duckduckgo.com with an HTMLParser keyed on
    a.result-link, td.result-snippet and span.link-text; the same parse, written out here
    (smolagents lives in its own venv, see configs/agents/)."""
    from html.parser import HTMLParser

    class Lite(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.titles: list[str] = []
            self.links: list[str] = []
            self.field = ""

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            cls = dict(attrs).get("class")
            self.field = {"result-link": "title", "link-text": "link"}.get(cls or "", "")

        def handle_endtag(self, tag: str) -> None:
            self.field = ""

        def handle_data(self, data: str) -> None:
            if self.field == "title":
                self.titles.append(data.strip())
            elif self.field == "link":
                self.links.append(data.strip())

    url = f"https://lite.duckduckgo.com/lite/?{urlencode({'q': QUERY})}"
    response = call(handlers[searchapi.DDG_LITE_HOST], "GET", url)
    parser = Lite()
    parser.feed(response.body.decode())
    assert parser.links == [u.split("://", 1)[1] for u in response.urls]
    assert len(parser.titles) == len(response.urls) > 0


def test_ddg_offset_pages_and_bad_input(handlers: dict[str, Handler]) -> None:
    handler = handlers[searchapi.DDG_HTML_HOST]
    first = call(handler, "GET", f"https://html.duckduckgo.com/html/?q={QUERY}")
    second = call(handler, "GET", f"https://html.duckduckgo.com/html/?q={QUERY}&s=1")
    assert len(first.urls) > 1 and second.urls[: len(first.urls) - 1] == first.urls[1:]
    refused = call(handler, "GET", "https://html.duckduckgo.com/html/?q=a&s=-1")
    assert refused.status == 400 and refused.kind == "refused"


def test_search_handlers_cover_every_api_host(handlers: dict[str, Handler]) -> None:
    assert set(handlers) == {
        searchapi.SEARXNG_HOST,
        "api.tavily.com",
        "api.search.brave.com",
        "google.serper.dev",
        "html.duckduckgo.com",
        "lite.duckduckgo.com",
    }


def test_serve_web_search_table(pydocs_indexed: tuple[Path, Path]) -> None:
    """`drarena snapshot serve-web --search KIND` registers every emulated API over that
    retriever; `--search none` serves pages only; a kind without an index is one line."""
    from drarena.errors import DrarenaError
    from drarena.webproxy.commands import search_table

    snapshot, index_root = pydocs_indexed
    table = search_table("bm25", snapshot, index_root)
    hosts = {searchapi.SEARXNG_HOST, "api.tavily.com", "api.search.brave.com", "google.serper.dev"}
    assert table.hosts() == sorted(hosts | {"html.duckduckgo.com", "lite.duckduckgo.com"})
    handler = table.find(WebRequest("GET", "https://api.search.brave.com/res/v1/web/search?q=x"))
    assert handler is not None
    assert search_table("none", snapshot, index_root).hosts() == []
    with pytest.raises(DrarenaError) as err:
        search_table("bm25", snapshot, index_root / "missing")
    assert "\n" not in str(err.value)


# --- through the frozen-web proxy: each official client unchanged, only its environment ------

sys.path.insert(0, str(Path(__file__).resolve().parent))
from webproxy_helpers import ProxyThread, mitmdump_missing  # noqa: E402

from drarena.webproxy.handlers import HandlerTable  # noqa: E402
from drarena.webproxy.proxy import CA_VARIABLES, RunningProxy  # noqa: E402

MITM_MISSING = mitmdump_missing()
needs_proxy = pytest.mark.skipif(bool(MITM_MISSING), reason=f"no mitmproxy: {MITM_MISSING}")


@pytest.fixture(scope="module")
def search_proxy(
    handlers: dict[str, Handler],
    pydocs_indexed: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningProxy]:
    table = HandlerTable()
    table.update(handlers)
    runner = ProxyThread(pydocs_indexed[0], tmp_path_factory.mktemp("searchproxy"), table)
    running = runner.start()
    yield running
    runner.stop()


@pytest.fixture
def proxied_env(search_proxy: RunningProxy, monkeypatch: pytest.MonkeyPatch) -> RunningProxy:
    for name in (*CA_VARIABLES, "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in search_proxy.info.client_env().items():
        monkeypatch.setenv(name, value)
    search_proxy.frozen.log.take()  # this test's exchanges only
    return search_proxy


def logged_searches(proxy: RunningProxy) -> list[Any]:
    return [entry for entry in proxy.frozen.log.take() if entry.kind == "search"]


@needs_proxy
def test_tavily_client_at_its_default_url_through_the_proxy(
    proxied_env: RunningProxy, snapshot_urls: set[str]
) -> None:
    from tavily import TavilyClient

    answer = TavilyClient(api_key="tvly-frozen").search(QUERY, max_results=2)
    assert answer["results"] and {r["url"] for r in answer["results"]} <= snapshot_urls
    (entry,) = logged_searches(proxied_env)
    assert entry.url == "https://api.tavily.com/search"
    assert proxied_env.outside_connections() == 0


@needs_proxy
def test_brave_client_through_the_proxy(proxied_env: RunningProxy, snapshot_urls: set[str]) -> None:
    from brave_search_python_client import BraveSearch, WebSearchRequest

    client = BraveSearch(api_key="frozen")
    answer = asyncio.run(client.web(WebSearchRequest(q=QUERY, count=3)))
    assert answer.web is not None and 1 <= len(answer.web.results) <= 3
    assert {r.url for r in answer.web.results} <= snapshot_urls
    (entry,) = logged_searches(proxied_env)
    assert entry.url.startswith("https://api.search.brave.com/res/v1/web/search?")
    assert proxied_env.outside_connections() == 0


@needs_proxy
def test_serper_and_page_fetches_as_storm_makes_them_through_the_proxy(
    proxied_env: RunningProxy, snapshot_urls: set[str]
) -> None:
    # the two calls of knowledge-storm's SerperRM with ENABLE_EXTRA_SNIPPET_EXTRACTION: the
    # search (requests, JSON body) and each result's page (its WebPageHelper: httpx,
    # verify=False, proxy from the environment); knowledge-storm itself is 6 GB, so its
    # calls are made here as it makes them (configs/agents/storm_agent.py runs the package)
    import httpx

    body: dict[str, Any] = {"num": 3, "autocorrect": True, "page": 1, "q": QUERY, "type": "search"}
    headers = {"X-API-KEY": "frozen", "Content-Type": "application/json"}
    answer = requests.request(
        "POST", "https://google.serper.dev/search", headers=headers, json=body, timeout=30
    ).json()
    links = [o["link"] for o in answer["organic"]]
    assert links and set(links) <= snapshot_urls
    with httpx.Client(verify=False) as client:
        pages = [client.get(link, timeout=30) for link in links]
    assert all(p.status_code == 200 and len(p.content) > 150 for p in pages)
    log = proxied_env.frozen.log.take()
    assert [e.url for e in log if e.kind == "search"] == ["https://google.serper.dev/search"]
    assert [e.url for e in log if e.kind != "search"] == links
    assert proxied_env.outside_connections() == 0


@needs_proxy
def test_ddgs_through_the_proxy(proxied_env: RunningProxy, snapshot_urls: set[str]) -> None:
    from ddgs import DDGS

    ca = str(proxied_env.info.ca_cert)
    results = DDGS(proxy=proxied_env.info.url, verify=ca).text(
        QUERY, backend="duckduckgo", max_results=5
    )
    assert results and {r["href"] for r in results} <= snapshot_urls
    assert all(
        e.url.startswith("https://html.duckduckgo.com/html") for e in logged_searches(proxied_env)
    )
    assert proxied_env.outside_connections() == 0
