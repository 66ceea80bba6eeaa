"""CLI: `drarena snapshot serve-web SNAPSHOT`, the frozen web as an HTTP(S) forward proxy,
with the public search APIs (SearXNG JSON, Tavily, Brave, DuckDuckGo) answered from the
snapshot's index."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drarena.webproxy.handlers import HandlerTable


def register(subparsers: Any) -> None:
    web = subparsers.add_parser(
        "serve-web",
        help="serve a snapshot as an HTTP(S) forward proxy on 127.0.0.1 (a frozen internet)",
        description="Answer every request an unmodified client makes through HTTP_PROXY / "
        "HTTPS_PROXY from the snapshot (status, headers and body as captured; anything else "
        "is a 404 page marked as not in the snapshot). HTTPS is intercepted by mitmproxy with "
        "a CA of its own, written under --state-dir (never in the snapshot); the command "
        "prints the variables a client needs. Needs mitmproxy: `make setup-proxy`.",
    )
    web.add_argument("snapshot", type=Path, help="snapshot folder")
    web.add_argument("--port", type=int, default=8780, help="proxy port (default 8780, 0 = any)")
    web.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="folder for the CA, mitmdump's log and the request log "
        "(default: .drarena-webproxy/<snapshot name>)",
    )
    web.add_argument(
        "--search",
        default="bm25",
        metavar="KIND",
        help="retriever kind answering the emulated search APIs (bm25, dense, hybrid, or a "
        "plugin kind; default bm25; `none`: no search APIs, only pages)",
    )
    web.add_argument(
        "--index-root",
        type=Path,
        default=Path("index"),
        help="where `drarena search index` wrote the snapshot's indexes (default: index)",
    )
    web.set_defaults(func=cmd_serve_web)


def cmd_serve_web(args: argparse.Namespace) -> int:
    import asyncio
    import json
    import shlex

    from drarena.files import open_append
    from drarena.quoting import shown
    from drarena.web.warc.snapshot import Snapshot
    from drarena.web.warc.urls import safe_file_name
    from drarena.webproxy.proxy import frozen_web_proxy

    stopped: list[int] = []

    async def serve(snap: Snapshot, state_dir: Path, handlers: HandlerTable) -> None:
        _cancel_on_sigterm(stopped)
        async with frozen_web_proxy(snap, handlers, state_dir=state_dir, port=args.port) as proxy:
            env = proxy.info.client_env()
            print(
                f"frozen web: {shown(snap.name)} ({len(snap)} captures) on {proxy.info.url} "
                f"(started in {proxy.started_s:.1f} s; Ctrl-C stops). Client environment:",
                flush=True,
            )
            for name, value in env.items():
                print(f"export {name}={shlex.quote(value)}", flush=True)
            if handlers.hosts():
                print(f"search APIs ({args.search}): {', '.join(handlers.hosts())}", flush=True)
            log_path = state_dir / "requests.jsonl"
            with open_append(log_path) as log:
                while True:
                    await asyncio.sleep(0.5)
                    entries, dropped = proxy.frozen.log.drain()
                    for entry in entries:
                        log.write(json.dumps(entry.to_dict(), ensure_ascii=False) + "\n")
                        if entry.kind == "missing":
                            shown_url = shown(entry.url, 2000)  # a client's request
                            print(
                                f"not in snapshot: {shown(entry.method, 20)} {shown_url}",
                                flush=True,
                            )
                    if dropped:
                        log.write(json.dumps({"unlogged": dropped}) + "\n")
                        print(f"{dropped} exchange(s) not logged (over the log's cap)", flush=True)
                    log.flush()

    with Snapshot.open(args.snapshot) as snap:
        # the manifest's name, checked where the manifest was read and again here, where a
        # path is made of it: the CA key and logs never go outside .drarena-webproxy/
        default = Path(".drarena-webproxy") / safe_file_name(snap.name, "snapshot name")
        state_dir = args.state_dir or default
        handlers = search_table(args.search, args.snapshot, args.index_root)
        try:
            asyncio.run(serve(snap, state_dir, handlers))
        except KeyboardInterrupt:
            return 0
        except asyncio.CancelledError:
            if not stopped:
                raise
            return 128 + stopped[0]
    return 0


def _cancel_on_sigterm(stopped: list[int]) -> None:
    """SIGTERM (kill, systemd, a CI timeout) stops the proxy as Ctrl-C does: the task is
    cancelled, so frozen_web_proxy's cleanup terminates mitmdump in order and the command
    exits 143. Without this the default action ends drarena at once, and mitmdump (in a
    session of its own) would be stopped only by its parent-death guards (proxy._spawn)."""
    import asyncio
    import contextlib
    import signal

    task = asyncio.current_task()

    def on_signal() -> None:
        if not stopped and task is not None:
            stopped.append(signal.SIGTERM)
            task.cancel()

    # no Unix signals (Windows), or not the main thread: SIGTERM keeps its default
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_signal)


def search_table(kind: str, snapshot: Path, index_root: Path) -> HandlerTable:
    """The emulated search APIs over a `kind` retriever of the snapshot (`none`: no APIs).
    A missing index is the retriever's own one-line error naming the command that builds it."""
    from drarena.search.base import build_retriever
    from drarena.webproxy.handlers import HandlerTable
    from drarena.webproxy.searchapi import search_handlers

    table = HandlerTable()
    if kind != "none":
        table.update(search_handlers(build_retriever({"kind": kind}, snapshot, index_root)))
    return table
