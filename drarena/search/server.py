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
"""

from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import urlsplit

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search.base import Retriever
from drarena.search.docstore import DEFAULT_PAGE_CHARS

MAX_PAGENO = 100


def native_results(query: str, hits: list[Hit], retriever: str) -> dict[str, Any]:
    return {"query": query, "retriever": retriever, "hits": [h.to_dict() for h in hits]}


def searxng_results(query: str, hits: list[Hit], engine: str) -> dict[str, Any]:
    """Hits in the shape of SearXNG's `format=json` answer."""
    results = []
    for hit in hits:
        parts = urlsplit(hit.url)
        results.append({
            "url": hit.url, "title": hit.title, "content": hit.snippet, "score": hit.score,
            "engine": engine, "engines": [engine], "positions": [hit.rank],
            "category": "general", "template": "default.html", "publishedDate": None,
            "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query,
                           parts.fragment],
            "docid": hit.docid,
        })
    return {"query": query, "number_of_results": len(results), "results": results,
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
            "unresponsive_engines": []}


def _int(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise DrarenaError(f"parameter {name!r} must be an integer, got {raw[:40]!r}") from None


def handle_search(retriever: Retriever, params: dict[str, str]) -> dict[str, Any]:
    """The body of a /search request (native or SearXNG), from its query parameters."""
    query = params.get("q", params.get("query", ""))
    fmt = params.get("format", "")
    k = _int(params, "k", 10)
    if fmt not in ("", "json"):
        raise DrarenaError(f"format {fmt[:20]!r} is not served; use format=json")
    if fmt == "json":
        pageno = _int(params, "pageno", 1)
        if not 1 <= pageno <= MAX_PAGENO:
            raise DrarenaError(f"pageno must be in 1..{MAX_PAGENO}, got {pageno}")
        hits = retriever.search(query, k * pageno)[k * (pageno - 1):]
        return searxng_results(query, hits, f"drarena-{retriever.name}")
    return native_results(query, retriever.search(query, k), retriever.name)


def handle_open(retriever: Retriever, params: dict[str, str]) -> dict[str, Any]:
    target = params.get("id") or params.get("url") or params.get("docid") or ""
    if not target:
        raise DrarenaError("open needs id=<docid or url>")
    page = retriever.open(target, _int(params, "offset", 0),
                          _int(params, "max_chars", DEFAULT_PAGE_CHARS))
    return page.to_dict()


def make_mcp(retriever: Retriever, snapshot: str, host: str = "127.0.0.1",
             port: int = 8000) -> Any:
    """A FastMCP server with `search` and `open` tools plus the HTTP routes above."""
    from mcp.server.fastmcp import FastMCP
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    mcp = FastMCP(
        "drarena-search", host=host, port=port, log_level="WARNING",
        instructions=f"Search and read the frozen web snapshot {snapshot!r} "
                     f"({retriever.name} retriever). Use `search`, then `open` a docid.")

    @mcp.tool(name="search", description="Search the frozen web; returns ranked pages "
              "(docid, url, title, snippet, score). Open a docid to read the page.")
    def search_tool(query: str, k: int = 10) -> list[dict[str, Any]]:
        return [h.to_dict() for h in retriever.search(query, k)]

    @mcp.tool(name="open", description="Read a page of the frozen web by docid or URL, "
              "max_chars characters from offset; next_offset continues, null at the end.")
    def open_tool(url_or_docid: str, offset: int = 0,
                  max_chars: int = DEFAULT_PAGE_CHARS) -> dict[str, Any]:
        return retriever.open(url_or_docid, offset, max_chars).to_dict()

    async def answer(request: Request, handler: Any) -> JSONResponse:
        params = dict(request.query_params)
        if request.method == "POST":
            if request.headers.get("content-type", "").startswith("application/json"):
                try:
                    body = await request.json()
                except ValueError:
                    return JSONResponse({"error": "request body is not JSON"}, status_code=400)
                if not isinstance(body, dict):
                    return JSONResponse({"error": "request body must be a JSON object"},
                                        status_code=400)
                params.update({str(k): str(v) for k, v in body.items()})
            else:
                form = await request.form()
                params.update({k: str(v) for k, v in form.items()})
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


def check_loopback(host: str) -> None:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise DrarenaError(f"--host {host}: the search server listens on loopback only")


def serve_http(retriever: Retriever, snapshot: str, host: str, port: int) -> None:
    import uvicorn

    check_loopback(host)
    app = make_mcp(retriever, snapshot, host, port).streamable_http_app()
    print(f"serving {retriever.name} search over {snapshot} on http://{host}:{port} "
          f"(/search, /open, /health, MCP at /mcp)", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def serve_stdio(retriever: Retriever, snapshot: str) -> None:
    """MCP over stdin/stdout; anything else writing to fd 1 is sent to stderr instead."""
    import anyio
    from mcp.server.stdio import stdio_server

    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    mcp = make_mcp(retriever, snapshot)

    async def run() -> None:
        server = mcp._mcp_server
        with open(protocol_out, "w", encoding="utf-8", newline="\n") as out:
            async with stdio_server(stdout=anyio.wrap_file(out)) as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())

    anyio.run(run)
