"""drarena.agents.sandbox.bridges: the Unix-socket relays from a command agent's network
namespace to the host's loopback. When an agent ends with a connection still open (its time
limit, or a harness that never closes), the bridges close under it: that must end the relay
quietly, not print an asyncio traceback into the tournament's output."""

from __future__ import annotations

import asyncio
from typing import Any

from drarena.agents import sandbox


async def test_closing_the_bridges_mid_connection_logs_no_traceback() -> None:
    """Seen in `make bench-agents` on Python 3.11: a relay cancelled at close made asyncio's
    stream callback log "Exception in callback ... CancelledError" with a traceback."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    held = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.set()  # the upstream accepts and never answers (a model call in progress)
        await reader.read()
        writer.close()

    upstream = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    try:
        async with sandbox.bridges([("127.0.0.1", port)]) as args:
            path = args[1].split("=", 1)[1]
            _reader, writer = await asyncio.open_unix_connection(path)
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\n")
            await writer.drain()
            await asyncio.wait_for(held.wait(), 10)
        for _ in range(5):  # the cancelled relay's callbacks run on the next turns
            await asyncio.sleep(0.05)
        writer.close()
    finally:
        upstream.close()
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == []
