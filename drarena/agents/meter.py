"""A command agent's tokens: a loopback HTTP relay in front of its model endpoint that reads
the `usage` block of each reply.

Why: a command agent (an unmodified harness) calls the model itself, so drarena's model client
never sees those calls, and report.html showed 0 tokens per answer for every such agent. The
agent is given the relay's URL as DRARENA_MODEL_API_BASE; the relay forwards each request and
its reply unchanged (a streamed reply streams, compressed bytes stay compressed) and reads the
OpenAI-style `usage` of a JSON reply, or the last one of a streamed (server-sent events)
reply (or llama.cpp's `timings`, which its server always streams). A POST whose reply carries
none (a server that reports no usage in a stream the client did not ask it for, a compressed or
oversized reply, a call the agent abandoned) is counted as `unmetered`, never guessed.
Reading is pure (`UsageReader`); the relay is the thin I/O around it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from drarena.records import Record

MAX_REQUEST_BYTES = 64 << 20  # a request body the relay forwards (prompts with many pages)
MAX_JSON_BYTES = 16 << 20  # a JSON reply read for its usage; larger ones are unmetered
MAX_EVENT_BYTES = 4 << 20  # one server-sent-events line
MAX_TOKENS = 10**9  # a usage figure above this is not believed
# hop-by-hop headers (RFC 9110 7.6.1), and what the relay sets itself
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


@dataclasses.dataclass(frozen=True, slots=True)
class Usage(Record):
    """What an agent's model calls used in one answer: POSTs relayed, tokens read from their
    replies, and POSTs whose reply reported none."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unmetered: int = 0

    def plus(self, prompt: int, completion: int) -> Usage:
        return dataclasses.replace(
            self,
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + prompt,
            completion_tokens=self.completion_tokens + completion,
        )

    def missed(self) -> Usage:
        return dataclasses.replace(self, calls=self.calls + 1, unmetered=self.unmetered + 1)

    @classmethod
    def parse(cls, value: object) -> Usage:
        """From a tool record (ValueError names what is wrong); absent (a record written
        before the meter) is no usage."""
        if value is None:
            return cls()
        if not isinstance(value, dict) or set(value) - set(cls.__dataclass_fields__):
            raise ValueError(f"usage is not an object of {sorted(cls.__dataclass_fields__)}")
        for name, n in value.items():
            if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_TOKENS * 1000:
                raise ValueError(f"usage.{name} is not a count: {n!r}"[:200])
        return cls(**value)


def _count(n: object) -> int | None:
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_TOKENS else None


def usage_of(value: object) -> tuple[int, int] | None:
    """(prompt, completion) tokens of one reply object, or None when it has none that can be
    believed. From its `usage` (an embeddings reply has no completion tokens: 0), else from
    llama.cpp's `timings`, which its server puts in a stream's last chunk even when the client
    did not ask for usage (`stream_options.include_usage`): prompt tokens are the cached ones
    plus those evaluated (cache_n + prompt_n), completion tokens predicted_n."""
    if not isinstance(value, dict):
        return None
    usage, timings = value.get("usage"), value.get("timings")
    if isinstance(usage, dict):
        prompt, completion = (
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens", 0)),
        )
    elif isinstance(timings, dict):
        cached, fresh = _count(timings.get("cache_n", 0)), _count(timings.get("prompt_n"))
        prompt = None if cached is None or fresh is None else cached + fresh
        completion = _count(timings.get("predicted_n"))
    else:
        return None
    return None if prompt is None or completion is None else (prompt, completion)


class UsageReader:
    """Fed one reply's bytes as they pass, says its usage at the end (pure). A JSON reply is
    kept up to MAX_JSON_BYTES and parsed once; a stream is split into lines and only `data:`
    lines that mention usage (or llama.cpp's timings) are parsed, the last one counting
    (OpenAI and vLLM send usage in a final chunk when the client asks for it, or vLLM with
    --enable-force-include-usage; llama.cpp's server sends timings in its last chunk)."""

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self._buffer = bytearray()
        self._overflow = False
        self._last: tuple[int, int] | None = None

    def give_up(self) -> None:
        self._overflow, self._buffer = True, bytearray()

    def feed(self, chunk: bytes) -> None:
        if self._overflow:
            return
        self._buffer += chunk
        if not self.streamed:
            if len(self._buffer) > MAX_JSON_BYTES:
                self._overflow, self._buffer = True, bytearray()
            return
        *lines, rest = bytes(self._buffer).split(b"\n")
        for line in lines:
            self._line(line)
        if len(rest) > MAX_EVENT_BYTES:  # one unending line: give up on this reply
            self._overflow, rest = True, b""
        self._buffer = bytearray(rest)

    def _line(self, line: bytes) -> None:
        line = line.strip()
        if not line.startswith(b"data:") or not (b'"usage"' in line or b'"timings"' in line):
            return
        with contextlib.suppress(ValueError, RecursionError):
            found = usage_of(json.loads(line[5:]))
            if found is not None:
                self._last = found

    def usage(self) -> tuple[int, int] | None:
        if self._overflow:
            return None
        if self.streamed:
            self._line(bytes(self._buffer))
            return self._last
        try:
            return usage_of(json.loads(bytes(self._buffer)))
        except (ValueError, RecursionError):
            return None


class ModelMeter:
    """The running relay: `base` is the agent's DRARENA_MODEL_API_BASE (the model endpoint's
    path on the relay's loopback port), `usage` what it has counted so far."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        self.path = parts.path.rstrip("/")
        self.usage = Usage()
        self.port = 0
        self.session: Any = None  # the aiohttp client session, while running

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def handle(self, request: Any) -> Any:
        import aiohttp
        from aiohttp import web

        try:  # the whole body (`read(n)` may return part of it), up to client_max_size
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text="drarena model meter: request body too large")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        post = request.method == "POST"
        metered: tuple[int, int] | None = None
        try:
            async with self.session.request(
                request.method,
                self.origin + request.rel_url.raw_path_qs,
                data=body or None,
                headers=headers,
                allow_redirects=False,
            ) as upstream:
                reply = web.StreamResponse(
                    status=upstream.status,
                    reason=upstream.reason,
                    headers={k: v for k, v in upstream.headers.items() if k.lower() not in _HOP},
                )
                if upstream.content_length is not None:
                    reply.content_length = upstream.content_length
                await reply.prepare(request)
                kind = upstream.headers.get("Content-Type", "")
                reader = UsageReader(streamed=kind.startswith("text/event-stream"))
                if upstream.headers.get("Content-Encoding", "identity") != "identity":
                    reader.give_up()  # compressed: passed on as it is, not read
                async for chunk in upstream.content.iter_any():
                    reader.feed(chunk)
                    await reply.write(chunk)
                await reply.write_eof()
                metered = reader.usage()
                return reply
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            detail = " ".join(str(exc).split())[:300] or type(exc).__name__
            return web.Response(status=502, text=f"drarena model meter: model server: {detail}")
        finally:
            if post:
                self.usage = self.usage.missed() if metered is None else self.usage.plus(*metered)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ModelMeter]:
        import aiohttp
        from aiohttp import web

        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=60)
        async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session:
            self.session = session
            await runner.setup()
            try:
                site = web.TCPSite(runner, "127.0.0.1", 0)
                await site.start()
                self.port = int(runner.addresses[0][1])
                yield self
            finally:
                await runner.cleanup()
