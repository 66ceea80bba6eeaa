"""`drarena serve-search` end to end: HTTP (native and SearXNG JSON) and MCP over streamable
HTTP and stdio, each driven by a real client against a real server process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback_servers import serve_search, serve_search_args
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(snapshot: Path, index_root: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[str]:
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with serve_search(snapshot, index_root, log) as (base, _):
        yield base


def test_health_search_and_open(server: str) -> None:
    assert httpx.get(server + "/health").json() == {"status": "ok", "retriever": "bm25",
                                                    "snapshot": "pydocs"}
    body = httpx.get(server + "/search", params={"q": "tarfile archive", "k": 3}).json()
    assert body["retriever"] == "bm25" and len(body["hits"]) == 3
    top = body["hits"][0]
    assert top["url"].endswith("/tarfile.html") and top["rank"] == 1
    posted = httpx.post(server + "/search", json={"query": "tarfile archive", "k": 3}).json()
    assert posted["hits"] == body["hits"]
    page = httpx.get(server + "/open", params={"id": top["docid"], "max_chars": 500}).json()
    assert page["docid"] == top["docid"] and len(page["text"]) <= 500
    assert page["next_offset"] is not None
    by_url = httpx.get(server + "/open", params={"url": top["url"],
                                                 "offset": page["next_offset"]}).json()
    assert by_url["offset"] == page["next_offset"]


def test_searxng_json_format(server: str) -> None:
    resp = httpx.get(server + "/search", params={"q": "tarfile archive", "format": "json"})
    assert resp.status_code == 200
    body = resp.json()
    assert body["query"] == "tarfile archive"
    assert body["number_of_results"] == len(body["results"]) == 10
    first = body["results"][0]
    assert {"url", "title", "content", "score", "engine", "parsed_url"} <= set(first)
    assert first["url"].endswith("/tarfile.html") and first["engine"] == "drarena-bm25"
    page2 = httpx.get(server + "/search", params={"q": "tarfile archive", "format": "json",
                                                  "pageno": 2}).json()
    assert page2["results"][0]["positions"] == [11]
    assert {r["url"] for r in page2["results"]}.isdisjoint({r["url"] for r in body["results"]})


def test_http_errors_are_one_line_json(server: str) -> None:
    for params in ({"q": ""}, {"q": "x", "format": "rss"}, {"q": "json", "k": "many"}):
        resp = httpx.get(server + "/search", params=params)
        assert resp.status_code == 400 and resp.json()["error"]
    resp = httpx.get(server + "/open", params={"id": "no-such-page"})
    assert resp.status_code == 400 and "unknown docid" in resp.json()["error"]
    resp = httpx.post(server + "/search", content=b"{not json",
                      headers={"content-type": "application/json"})
    assert resp.status_code == 400


async def exercise_mcp(session: ClientSession) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search", "open"}
    assert "query" in tools["search"].inputSchema["properties"]
    result = await session.call_tool("search", {"query": "tarfile archive", "k": 2})
    assert not result.isError
    hits = _payload(result)
    assert len(hits) == 2 and hits[0]["url"].endswith("/tarfile.html")
    opened = await session.call_tool("open", {"url_or_docid": hits[0]["docid"],
                                              "max_chars": 300})
    page = _payload(opened)
    assert page["docid"] == hits[0]["docid"] and 0 < len(page["text"]) <= 300
    bad = await session.call_tool("open", {"url_or_docid": "no-such-page"})
    assert bad.isError and "unknown docid" in bad.content[0].text  # type: ignore[union-attr]


def _payload(result: Any) -> Any:
    if result.structuredContent is not None:
        data = result.structuredContent
        return data.get("result", data)
    return json.loads(result.content[0].text)


async def test_mcp_streamable_http(server: str) -> None:
    async with (streamable_http_client(server + "/mcp") as (read, write, _),
                ClientSession(read, write) as session):
        await exercise_mcp(session)


async def test_mcp_stdio(snapshot: Path, index_root: Path) -> None:
    params = StdioServerParameters(command=sys.executable,
                                   args=serve_search_args(snapshot, index_root, "--stdio"),
                                   cwd=str(REPO), env=dict(os.environ))
    with open(os.devnull, "w") as errlog:
        async with (stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session):
            await exercise_mcp(session)
