"""mitmproxy addon: every request goes to drarena's frozen-web backend, nothing goes outside.

Loaded by `mitmdump -s` in mitmproxy's own virtual environment (never imported by drarena,
which runs mitmdump as a child process; this file imports only mitmproxy and the standard
library). mitmproxy does what a proxy must do right (CONNECT, TLS interception with a CA of
its own, HTTP/1 and HTTP/2 to clients); this addon only:

- rewrites each request (its body read whole) to drarena's backend on 127.0.0.1 (plain
  HTTP), carrying the URL the agent asked for in X-Drarena-Target (a client's own header of
  that name is overwritten);
- refuses any upstream connection to anything but the backend (mitmproxy runs with
  connection_strategy=lazy and upstream_cert=false, so a CONNECT opens nothing upstream) and
  counts each refusal in the state file: a correct setup counts zero;
- writes the state file {"port": ..., "outside_refused": n, "backend_connections": n} once
  listening and after each change, which is how drarena learns the port it was given;
- shuts mitmdump down when drarena is gone: the lifeline pipe's read end (a descriptor
  drarena passes) becomes readable, at end of file, once no process holds the write end,
  which only drarena had (drarena.webproxy.proxy._spawn says why, and what else stops it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
from typing import Any

from mitmproxy import ctx, http

TARGET_HEADER = "X-Drarena-Target"


class FrozenWebAddon:
    def __init__(self) -> None:
        self.outside_refused = 0
        self.backend_connections = 0
        self.port = 0
        self.watching = False

    def load(self, loader: Any) -> None:
        loader.add_option("drarena_backend", str, "", "host:port of drarena's backend")
        loader.add_option("drarena_state", str, "", "JSON file for the port and counters")
        loader.add_option("drarena_lifeline", int, -1, "pipe that ends when drarena does")

    def _backend(self) -> tuple[str, int]:
        host, _, port = str(ctx.options.drarena_backend).rpartition(":")
        return host, int(port)

    def _write_state(self) -> None:
        path = str(ctx.options.drarena_state)
        if not path:
            return
        state = {
            "port": self.port,
            "outside_refused": self.outside_refused,
            "backend_connections": self.backend_connections,
        }
        # A unique name created exclusively, never through a link (drarena's files.write_atomic,
        # which this file, run in mitmproxy's own venv, cannot import)
        tmp = f"{path}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            with open(os.open(tmp, flags, 0o666), "w", encoding="utf-8") as handle:
                json.dump(state, handle)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def running(self) -> None:
        server = ctx.master.addons.get("proxyserver")
        addresses = server.listen_addrs() if server is not None else []
        self.port = int(addresses[0][1]) if addresses else 0
        self._write_state()
        self._watch_lifeline()

    def _watch_lifeline(self) -> None:
        """Shut down once the lifeline is readable: drarena never writes to it, so that is
        its end of file, already there if drarena died while mitmdump was starting."""
        fd = int(ctx.options.drarena_lifeline)
        if fd < 0 or self.watching:
            return
        self.watching = True
        loop = asyncio.get_running_loop()

        def gone() -> None:
            loop.remove_reader(fd)
            ctx.master.shutdown()

        loop.add_reader(fd, gone)

    def request(self, flow: http.HTTPFlow) -> None:
        """Called with the whole body read (mitmproxy buffers bodies unless told to stream),
        before any upstream connection."""
        request = flow.request
        target = request.url  # from the absolute-form URL or the CONNECT target, not Host
        host, port = self._backend()
        request.headers[TARGET_HEADER] = target
        request.scheme = "http"
        request.host = host
        request.port = port  # (the host setter updated the Host header too)
        # An HTTP/2 client (primp, the client of ddgs) may send a body without Content-Length;
        # on the HTTP/1 hop to the backend the body then lacked framing and was read as the
        # next request. The body is complete here, so frame it explicitly.
        body = request.raw_content or b""
        # The body is complete here, so an Expect header has nothing left to ask. mitmproxy
        # answers a lone `Expect: 100-continue` itself and drops it, but not a repeated one:
        # the backend then sent its own 100, which mitmproxy relayed as the answer, and the
        # client never got the real one.
        request.headers.pop("expect", None)
        if body or request.method in ("POST", "PUT", "PATCH"):
            request.headers.pop("transfer-encoding", None)
            request.headers["content-length"] = str(len(body))

    def server_connect(self, data: Any) -> None:
        address = data.server.address
        if address is not None and (str(address[0]), int(address[1])) == self._backend():
            self.backend_connections += 1
        else:
            self.outside_refused += 1
            data.server.error = "drarena frozen web: outside connections are refused"
        self._write_state()


addons = [FrozenWebAddon()]
