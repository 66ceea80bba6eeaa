"""`drarena serve-search` end to end: HTTP (native and SearXNG JSON) and MCP over streamable
HTTP and stdio, each driven by a real client against a real server process."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from loopback_servers import free_port, serve_search, serve_search_args, stop
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from drarena.search import server as search_server

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(
    snapshot: Path, index_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with serve_search(snapshot, index_root, log) as (base, _):
        yield base


def test_health_search_and_open(server: str) -> None:
    assert httpx.get(server + "/health").json() == {
        "status": "ok",
        "retriever": "bm25",
        "snapshot": "pydocs",
    }
    body = httpx.get(server + "/search", params={"q": "tarfile archive", "k": 3}).json()
    assert body["retriever"] == "bm25" and len(body["hits"]) == 3
    top = body["hits"][0]
    assert top["url"].endswith("/tarfile.html") and top["rank"] == 1
    posted = httpx.post(server + "/search", json={"query": "tarfile archive", "k": 3}).json()
    assert posted["hits"] == body["hits"]
    page = httpx.get(server + "/open", params={"id": top["docid"], "max_chars": 500}).json()
    assert page["docid"] == top["docid"] and len(page["text"]) <= 500
    assert page["next_offset"] is not None
    by_url = httpx.get(
        server + "/open", params={"url": top["url"], "offset": page["next_offset"]}
    ).json()
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
    page2 = httpx.get(
        server + "/search", params={"q": "tarfile archive", "format": "json", "pageno": 2}
    ).json()
    assert page2["results"][0]["positions"] == [11]
    assert {r["url"] for r in page2["results"]}.isdisjoint({r["url"] for r in body["results"]})


def test_http_errors_are_one_line_json(server: str) -> None:
    for params in ({"q": ""}, {"q": "x", "format": "rss"}, {"q": "json", "k": "many"}):
        resp = httpx.get(server + "/search", params=params)
        assert resp.status_code == 400 and resp.json()["error"]
    resp = httpx.get(server + "/open", params={"id": "no-such-page"})
    assert resp.status_code == 400 and "unknown docid" in resp.json()["error"]
    resp = httpx.post(
        server + "/search", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert resp.status_code == 400 and resp.json() == {"error": "request body is not JSON"}
    # a multipart form without its boundary was Starlette's plain-text 400
    resp = httpx.post(
        server + "/search", content=b"q=json", headers={"content-type": "multipart/form-data"}
    )
    assert resp.status_code == 400 and "boundary" in resp.json()["error"]
    resp = httpx.post(server + "/search", data={"q": "json", "k": "2"})  # a form still works
    assert resp.status_code == 200 and len(resp.json()["hits"]) == 2


async def exercise_mcp(session: ClientSession) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search", "open"}
    assert "query" in tools["search"].inputSchema["properties"]
    result = await session.call_tool("search", {"query": "tarfile archive", "k": 2})
    assert not result.isError
    hits = _payload(result)
    assert len(hits) == 2 and hits[0]["url"].endswith("/tarfile.html")
    opened = await session.call_tool("open", {"url_or_docid": hits[0]["docid"], "max_chars": 300})
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
    async with (
        streamable_http_client(server + "/mcp") as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await exercise_mcp(session)


async def test_mcp_stdio(snapshot: Path, index_root: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_search_args(snapshot, index_root, "--stdio"),
        cwd=str(REPO),
        env=dict(os.environ),
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await exercise_mcp(session)


# --- hostile requests: DNS rebinding, cross-site pages, nesting and size bombs ---------------


def test_every_endpoint_refuses_a_host_that_is_not_this_server(server: str) -> None:
    port = urlsplit(server).port
    assert port is not None
    mcp_headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    for host in (
        "evil.example",
        f"evil.example:{port}",
        f"localhost:{port + 1}",
        "127.0.0.1",
        f"127.0.0.1.evil.example:{port}",
    ):
        for method, path in (
            ("GET", "/health"),
            ("GET", "/search?q=tarfile"),
            ("POST", "/search?q=tarfile"),
            ("GET", "/open?id=x"),
            ("POST", "/mcp"),
            ("GET", "/mcp"),
        ):
            resp = httpx.request(
                method,
                server + path,
                headers={**mcp_headers, "Host": host},
                content=b"{}" if method == "POST" else None,
            )
            assert resp.status_code == 421, (host, path, resp.status_code)
            error = resp.json()["error"]  # at /mcp a JSON-RPC error object
            assert "Host" in (error["message"] if path == "/mcp" else error)
    for host in (f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}", f"127.0.0.1:{port}"):
        assert httpx.get(server + "/health", headers={"Host": host}).status_code == 200
    # a page on another site may not drive the server from the user's browser either
    for origin in (
        "http://evil.example",
        f"http://evil.example:{port}",
        "null",
        f"http://localhost:{port + 1}",
    ):
        resp = httpx.get(server + "/search", params={"q": "tarfile"}, headers={"Origin": origin})
        assert resp.status_code == 403 and "Origin" in resp.json()["error"]
    same = httpx.get(
        server + "/search", params={"q": "tarfile"}, headers={"Origin": f"http://127.0.0.1:{port}"}
    )
    assert same.status_code == 200


def test_nested_or_huge_bodies_are_refused_not_a_crash(server: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    json_headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    resp = httpx.post(server + "/mcp", content=deep, headers=json_headers)
    assert resp.status_code == 400
    body = resp.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32700
    resp = httpx.post(server + "/search", content=b'{"q": ' + deep + b"}", headers=json_headers)
    assert resp.status_code == 400 and "nested" in resp.json()["error"]
    resp = httpx.post(
        server + "/mcp", content=b'{"x": "' + b"a" * (5 << 20) + b'"}', headers=json_headers
    )
    assert resp.status_code == 413 and resp.json()["error"]["code"] == -32700
    assert httpx.get(server + "/health").status_code == 200  # still serving


@pytest.fixture
def small_app_server() -> Iterator[int]:
    """serve-search's own uvicorn settings around an app that answers 200: the HTTP layer
    alone, without an index."""
    import uvicorn

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    uv = uvicorn.Server(search_server.uvicorn_config(app))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not uv.started:
        time.sleep(0.05)
    try:
        yield int(sock.getsockname()[1])
    finally:
        uv.should_exit = True
        thread.join()
        sock.close()


def _raw_request(port: int, head: bytes) -> bytes:
    """Sends a request head, then reads the answer up to the server's close."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        with contextlib.suppress(OSError):  # refused mid-send: the answer is on its way
            conn.sendall(head)
        answer = b""
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except ConnectionResetError:  # closed with our unread bytes: the answer came first
            pass
        return answer


def test_request_heads_are_bounded(small_app_server: int) -> None:
    port = small_app_server
    start = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
    pad = b"X-Pad: " + b"b" * 8000 + b"\r\n"
    ok = _raw_request(port, start + pad * 4 + b"Connection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200"), ok[:80]
    for head in (
        start + pad * 512 + b"\r\n",  # 4 MiB of headers
        b"GET /search?q=" + b"a" * (4 << 20) + b" HTTP/1.1\r\n\r\n",  # a 4 MiB URL
    ):
        refused = _raw_request(port, head)
        assert refused.startswith(b"HTTP/1.1 431"), refused[:80]
        error = json.loads(refused.split(b"\r\n\r\n", 1)[1])["error"]
        assert str(search_server.MAX_HEAD_BYTES) in error
    again = _raw_request(port, start + b"Connection: close\r\n\r\n")
    assert again.startswith(b"HTTP/1.1 200")  # still serving


def test_live_retriever_needs_live_web_and_says_so(
    snapshot: Path, index_root: Path, tmp_path: Path
) -> None:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "drarena",
        "search",
        "serve",
        str(snapshot),
        "--index-root",
        str(index_root),
        "--retriever",
        "live",
        "--port",
        str(port),
    ]
    refused = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--live-web" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    log = tmp_path / "live.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*argv, "--live-web"], cwd=REPO, stdout=out, stderr=subprocess.STDOUT, text=True
        )
        try:
            deadline = time.monotonic() + 120
            while "serving" not in log.read_text() and proc.poll() is None:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            banner = log.read_text()
            assert "LIVE WEB" in banner and "public" in banner, banner
        finally:
            stop(proc)
