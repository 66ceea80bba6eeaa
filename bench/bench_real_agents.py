"""Real PyPI research agents, unmodified, behind the frozen-web proxy: what each one does.

For each agent adapter in configs/agents/ (run from its own venv, .venv-agents/<name>) and
each question: the agent gets only the proxy and CA variables and the model server's URL, as
a `command` agent does in a tournament, and this prints its wall time per answer, model calls
(counted by a loopback relay in front of the model server; `calls_abandoned` are those whose
client hung up, on its own timeout, before the reply, which the model still computed),
searches made and pages fetched (from the proxy's log; pages a search API's answer carried
whole are counted apart), pages not in the snapshot, outside connections (mitmproxy's count),
citations, and the error when it broke. Setup time is what scripts/setup_agents.sh printed.

Usage: .venv/bin/python bench/bench_real_agents.py --api-base http://127.0.0.1:PORT/v1
         [--agents smolagents,gpt-researcher] [--question "..."]... [--timeout 900]
(needs `make setup-proxy setup-agents`, an indexed snapshot, and a model server:
`DRARENA_LLAMACPP_TOOL_CALLS=relay drarena model serve --model qwen1.5b-cpu --port PORT`).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import importlib.util
import json
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from drarena.procs import die_with_parent, group_guard
from drarena.search.base import build_retriever
from drarena.web.warc.snapshot import Snapshot
from drarena.webproxy.handlers import HandlerTable
from drarena.webproxy.proxy import frozen_web_proxy
from drarena.webproxy.searchapi import RAW_CONTENT_CHARS, search_handlers

ROOT = Path(__file__).resolve().parents[1]
TOURNAMENT = ROOT / "configs" / "agents" / "tournament.yaml"


def _adapters() -> dict[str, tuple[str, str, dict[str, str], int]]:
    """Each real agent of configs/agents/tournament.yaml: its venv, adapter script and the
    settings (`env:`, `search_page_chars`) the tournament gives it, so the bench and the
    tournament run the same agent."""
    import yaml

    config = yaml.safe_load(TOURNAMENT.read_text(encoding="utf-8"))
    out = {}
    for agent in config["agents"]:
        if agent.get("kind") != "command":
            continue
        args = agent["args"]
        python, script = args["command"][:2]
        venv = Path(python).parts[1]  # .venv-agents/<venv>/bin/python
        env = {k: str(v) for k, v in args.get("env", {}).items()}
        page_chars = int(args.get("search_page_chars", RAW_CONTENT_CHARS))
        out[agent["name"]] = (venv, script, env, page_chars)
    return out


ADAPTERS = _adapters()
QUESTIONS = [  # each answered by pages of snapshots/pydocs
    "How do I read and write JSON files in Python, and what does json.dumps do with non-ASCII?",
    "What is the difference between a list and a tuple in Python?",
    "How do I parse command-line options with argparse in Python?",
    "How do I read and write CSV files with Python's csv module?",
    "How do I create and use a virtual environment with Python's venv?",
    "How do I copy or move files and directory trees with Python's shutil module?",
]
MAX_RELAY_BODY = 8 << 20


def _llamacpp_tools() -> Any:
    """scripts/llamacpp_tools.py (stdlib only; it runs in llama.cpp's venv), for its
    HangupWatch: a call the harness abandons is closed upstream here too, as there."""
    spec = importlib.util.spec_from_file_location(
        "llamacpp_tools", ROOT / "scripts" / "llamacpp_tools.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HangupWatch = _llamacpp_tools().HangupWatch


class Relay(ThreadingHTTPServer):
    upstream: str
    calls: int
    abandoned: int  # calls whose client hung up before the reply (the model still ran them)
    lock: threading.Lock


class RelayHandler(BaseHTTPRequestHandler):
    """Forwards to the model server and counts POSTs (chat/completion/embedding calls)."""

    server: Relay

    def _forward(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_RELAY_BODY)
        body = self.rfile.read(length) if length else None
        if self.command == "POST":
            with self.server.lock:
                self.server.calls += 1
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host",)}
        upstream = urlsplit(self.server.upstream)
        connection = http.client.HTTPConnection(upstream.netloc, timeout=900)
        watch = HangupWatch(self.connection, lambda: connection.sock)
        try:
            with watch:
                connection.request(self.command, upstream.path + self.path, body, headers)
                response = connection.getresponse()
                status, data, rheaders = response.status, response.read(), response.headers
                self.send_response(status)
                for key, value in rheaders.items():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        except OSError as exc:
            if watch.fired or isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                with self.server.lock:  # the harness hung up: its own timeout fired
                    self.server.abandoned += 1
            else:  # the model server failed: the harness sees why
                self.send_error(502, f"model server: {exc}")
        finally:
            connection.close()

    do_GET = do_POST = _forward

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def relay(upstream: str) -> Iterator[Relay]:
    server = Relay(("127.0.0.1", 0), RelayHandler)
    server.upstream, server.lock = upstream.rstrip("/"), threading.Lock()
    server.calls = server.abandoned = 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def in_snapshot(snap: Snapshot, url: str) -> bool:
    """The URL, or the same URL over the other scheme (the proxy serves either: DuckDuckGo's
    lite page shows links without their scheme and smolagents reads them as https); the
    snapshot's own fallback, so the bench counts what the tournament's citation check counts."""
    return snap.lookup_any_scheme(url) is not None


async def run_agent(
    argv: list[str], env: dict[str, str], question: str, timeout: float
) -> tuple[int | None, str, str]:
    """Run one agent as a tournament's `command` agent is run. Like there, it and its
    process group die with this process (drarena.procs): a bench killed mid-answer (SIGTERM,
    SIGKILL) left them running as orphans."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=ROOT,
        start_new_session=True,
        preexec_fn=die_with_parent(signal.SIGKILL),
    )
    payload = {
        "protocol": 1,
        "question": question,
        "history": [],
        "word_limit": [150, 250],
        "search_url": None,
    }
    try:
        async with group_guard(process.pid):
            out, err = await asyncio.wait_for(
                process.communicate(json.dumps(payload).encode()), timeout
            )
    except TimeoutError:
        os.killpg(process.pid, 9)
        await process.wait()
        return None, "", f"killed after {timeout:g} s"
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    retriever = build_retriever({"kind": args.retriever}, args.snapshot, args.index_root)
    table = HandlerTable()
    table.update(search_handlers(retriever))
    rows = []
    with tempfile.TemporaryDirectory() as state, Snapshot.open(args.snapshot) as snap:
        async with frozen_web_proxy(snap, table, state_dir=Path(state)) as proxy:
            with relay(args.api_base.removesuffix("/v1")) as counter:
                model_base = f"http://127.0.0.1:{counter.server_address[1]}/v1"
                direct = [("127.0.0.1", counter.server_address[1])]
                for name in args.agents.split(","):
                    venv, script, extra, page_chars = ADAPTERS[name]
                    # the agent's own search_page_chars, as its tournament would give it
                    table.update(search_handlers(retriever, page_chars=page_chars))
                    python = ROOT / ".venv-agents" / venv / "bin" / "python"
                    for question in args.question or QUESTIONS[: args.n]:
                        env = {
                            "PATH": os.environ.get("PATH", ""),
                            "HOME": os.environ.get("HOME", "/tmp"),
                            "DRARENA_MODEL_API_BASE": model_base,
                            "DRARENA_MODEL": f"openai/{args.model}",
                            **proxy.info.client_env(direct),
                            **extra,
                        }
                        if args.trace:  # each adapter that traces reads its own name
                            for tracing in ("SMOLAGENTS_TRACE", "ODR_TRACE"):
                                env[tracing] = str(args.trace.resolve())
                        proxy.frozen.log.take()
                        calls0, t0 = counter.calls, time.monotonic()
                        abandoned0 = counter.abandoned
                        rc, out, err = await run_agent(
                            [str(python), script], env, question, args.timeout
                        )
                        wall = time.monotonic() - t0
                        log = proxy.frozen.log.take()
                        reply: dict[str, Any] = {}
                        lines = [line for line in out.splitlines() if line.strip()]
                        try:
                            reply = json.loads(lines[-1]) if lines else {}
                        except ValueError:
                            reply = {}
                        rows.append(
                            {
                                "agent": name,
                                "question": question[:60],
                                "wall_s": round(wall, 1),
                                "model_calls": counter.calls - calls0,
                                "calls_abandoned": counter.abandoned - abandoned0,
                                "searches": sum(e.kind == "search" for e in log),
                                "pages": sum(e.kind == "page" for e in log),
                                # whole pages a search API's answer carried (Tavily's
                                # raw_content, /extract): read, though not fetched
                                "pages_via_search": len({u for e in log for u in e.read}),
                                "missing": sum(e.kind == "missing" for e in log),
                                "outside": proxy.outside_connections(),
                                "citations": len(reply.get("citations", [])),
                                "citations_in_snapshot": sum(
                                    in_snapshot(snap, str(url))
                                    for url in reply.get("citations", [])
                                ),
                                "report_words": len(str(reply.get("report", "")).split()),
                                "urls_missing": [e.url for e in log if e.kind == "missing"][:5],
                                "cited": [str(u) for u in reply.get("citations", [])][:5],
                                "error": ""
                                if rc == 0 and reply
                                else (f"exit {rc}: " + err.strip()[-300:]),
                            }
                        )
                        if args.stderr_dir:  # the agent's own log, for what it did and why
                            args.stderr_dir.mkdir(parents=True, exist_ok=True)
                            name_q = f"{name}-{len(rows):02d}.log"
                            (args.stderr_dir / name_q).write_text(err, encoding="utf-8")
                        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-base", required=True, help="model server, …/v1")
    parser.add_argument(
        "--model", default=None, help="served model name (default: the first /v1/models lists)"
    )
    parser.add_argument("--agents", default="smolagents,gpt-researcher")
    parser.add_argument("--question", action="append", help="question (repeatable)")
    parser.add_argument("--snapshot", type=Path, default=ROOT / "snapshots" / "pydocs")
    parser.add_argument("--index-root", type=Path, default=ROOT / "index")
    parser.add_argument("--retriever", default="bm25")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--n", type=int, default=2, help="how many built-in questions")
    parser.add_argument(
        "--stderr-dir", type=Path, help="write each agent run's stderr to DIR/<agent>-NN.log"
    )
    parser.add_argument(
        "--trace",
        type=Path,
        help="smolagents, open-deep-research: append each run's steps (JSON lines) here",
    )
    args = parser.parse_args()
    if args.model is None:  # the name the server answers to ("served" is drarena's alias)
        with urllib.request.urlopen(args.api_base.rstrip("/") + "/models", timeout=30) as r:
            args.model = json.loads(r.read())["data"][0]["id"]
    rows = asyncio.run(main_async(args))
    columns = [
        "agent",
        "searches",
        "pages",
        "pages_via_search",
        "missing",
        "citations",
        "citations_in_snapshot",
        "report_words",
        "wall_s",
        "model_calls",
        "calls_abandoned",
        "question",
    ]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
