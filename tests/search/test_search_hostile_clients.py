"""Clients that hold the search server's resources (issue 38, item 7): MCP sessions that are
never closed (6,000 `initialize` posts grew the server from 178 to 569 MB, and growing) and
connections that never complete a request head (3,000 were held 27 s).

The server's own settings (uvicorn_config, http_app) run in a thread around a retriever of
two pages, without an index. Each test failed before its fix.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from drarena.records import Hit
from drarena.search import server as search_server
from drarena.search.docstore import PageText


class TwoPages:
    name = "two-pages"

    def search(self, query: str, k: int = 10) -> list[Hit]:
        return []

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        raise KeyError(url_or_docid)


@pytest.fixture
def quick_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The real app (MCP and routes) with small limits: 4 sessions, idle after 1 s, a head
    due within 1 s."""
    monkeypatch.setattr(search_server, "MCP_MAX_SESSIONS", 4)
    monkeypatch.setattr(search_server, "MCP_SESSION_IDLE_S", 1.0)
    monkeypatch.setattr(search_server, "HEAD_TIMEOUT_S", 1.0)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    app = search_server.http_app(TwoPages(), "snap", "127.0.0.1", port)
    import uvicorn

    uv = uvicorn.Server(search_server.uvicorn_config(app))
    listen = socket.socket()
    listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listen.bind(("127.0.0.1", port))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [listen]}, daemon=True)
    thread.start()
    while not uv.started:
        time.sleep(0.05)
    try:
        yield port
    finally:
        uv.should_exit = True
        thread.join()
        listen.close()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"},
    },
}


def _initialize(client: httpx.Client, port: int) -> int:
    answer = client.post(
        f"http://127.0.0.1:{port}/mcp",
        json=INITIALIZE,
        headers={"Accept": "application/json, text/event-stream"},
    )
    return answer.status_code


def test_mcp_sessions_are_capped_and_expire(quick_server: int) -> None:
    with httpx.Client(timeout=30) as client:
        assert [_initialize(client, quick_server) for _ in range(4)] == [200] * 4
        assert _initialize(client, quick_server) == 503  # before: a fifth, and a 6,000th
        deadline = time.monotonic() + 60  # idle after 1 s: room again
        while _initialize(client, quick_server) != 200:
            assert time.monotonic() < deadline, "no MCP session expired"
            time.sleep(0.2)


def _closed_by_server(conn: socket.socket) -> bool:
    try:
        return conn.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:  # still held when the test gave up
        return False


def test_half_open_connections_are_dropped(quick_server: int) -> None:
    conns = []
    for n in range(40):
        conn = socket.create_connection(("127.0.0.1", quick_server), timeout=30)
        if n % 2:  # part of a head; the others send nothing at all
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        conns.append(conn)
    try:
        assert all(_closed_by_server(conn) for conn in conns)
    finally:
        for conn in conns:
            conn.close()
    with httpx.Client(timeout=30) as client:  # and it still serves
        health = client.get(f"http://127.0.0.1:{quick_server}/health")
        assert health.status_code == 200


def test_a_slow_but_complete_client_is_served(quick_server: int) -> None:
    with socket.create_connection(("127.0.0.1", quick_server), timeout=30) as conn:
        conn.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{quick_server}\r\n".encode())
        time.sleep(0.3)
        conn.sendall(b"Connection: close\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
