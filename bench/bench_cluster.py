"""Cluster bench: the real tournament against simulated replicas of an OpenAI-compatible server.

Run: .venv/bin/python bench/bench_cluster.py [--agents 8,32] [--replicas 1,4] [--slots 4]
     [--per-token-ms 5] [--rounds 3] [--snapshot snapshots/pydocs]

A child process serves R simulated replicas on loopback (aiohttp, one port each). Each replica
has a batch limit (`--slots`: requests it decodes at once; more wait in its queue) and a fixed
per-token latency: a request holds a slot for per_token x completion tokens (characters / 4).
Answers are canned and deterministic, chosen by the request as a scripted Examiner would:
response_format `task` -> a task built from the prompt's target sources; any other schema -> a
verdict; no schema -> the agent's `answer` tool call, whose strength is the digit in the
role's model name (openai/sim-strength-N), so the stronger agent wins.

This process runs drarena.arena.execute.execute, the real tournament: closed_book agents (one
model call per answer), the real ModelClient over HTTP through litellm, one role per agent
with `api_bases` listing every replica (the client's least-in-flight balancer spreads them).

Prints per (agents, replicas): wall of execute(), the server's active window (first request to
last answer), busy slot-seconds, utilisation = busy slot-seconds / (capacity x window), the
server's own limit (busy slot-seconds / capacity: the wall a perfectly packed schedule would
need), the mean and peak requests in flight, and in-flight requests sampled every second.
The snapshot is copied to a temporary folder (trees and extraction are built there once), so
the repository is never written.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_S = 0.1


# --- the simulated server (child process) ---------------------------------------------------


def canned(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one request: a pure function of it."""
    fmt = body.get("response_format")
    prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
    if fmt and fmt["json_schema"]["name"] == "task":
        block = prompt.split("B. TARGET PAGES", 1)[-1]
        numbers = [int(n) for n in re.findall(r"<<<BEGIN SOURCE (\d+)>>>", block)] or [1]
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:10]
        return {
            "role": "assistant",
            "content": json.dumps(
                {
                    "question": f"Question {digest} about the shared topic of these pages?",
                    "checklist_depth": [{"item": f"entity {n}", "source": n} for n in numbers],
                    "checklist_width": [{"item": f"detail {n}", "source": n} for n in numbers],
                    "rationale": "the pages share one topic",
                }
            ),
        }
    if fmt:
        found = [
            re.search(rf"BEGIN ANSWER {side}>>>.*?strength=(\d+)", prompt, re.S) for side in "AB"
        ]
        a, b = (int(m.group(1)) if m else 0 for m in found)
        verdict = "TIE" if a == b else ("A_MUCH_BETTER" if a > b else "B_MUCH_BETTER")
        count = re.search(r"CHECKLIST \((\d+) items", prompt)
        n = int(count.group(1)) if count else 1
        return {
            "role": "assistant",
            "content": json.dumps(
                {
                    "checklist_a": [a > b] * n,
                    "checklist_b": [b > a] * n,
                    "reasoning": "compared item by item",
                    "tie_quality": "HIGH",
                    "loser_failure_type": "DEPTH",
                    "verdict": verdict,
                }
            ),
        }
    strength = re.search(r"strength-(\d+)", str(body.get("model", "")))
    words = " ".join(["The pages describe the topic in detail."] * 30)
    report = f"Report strength={strength.group(1) if strength else 0}. {words}"
    args = json.dumps({"report": report, "citations": []})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call-1", "type": "function", "function": {"name": "answer", "arguments": args}}
        ],
    }


async def serve(replicas: int, slots: int, per_token_s: float) -> None:
    from aiohttp import web

    stats: dict[str, Any] = {}

    def reset() -> None:
        stats.update(
            busy=0.0,
            requests=0,
            first=None,
            last=None,
            samples=[],
            peak_in_flight=0,
            t0=time.monotonic(),
        )

    reset()
    in_flight = [0]  # requests received and not yet answered (decoding or queued)
    limits = [asyncio.Semaphore(slots) for _ in range(replicas)]

    def handler(index: int) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            now = time.monotonic()
            stats["first"] = now if stats["first"] is None else stats["first"]
            in_flight[0] += 1
            stats["peak_in_flight"] = max(stats["peak_in_flight"], in_flight[0])
            try:
                message = canned(body)
                text = message["content"] + "".join(
                    c["function"]["arguments"] for c in message.get("tool_calls", ())
                )
                tokens = max(1, len(text) // 4)
                async with limits[index]:
                    hold = per_token_s * tokens
                    await asyncio.sleep(hold)
                    stats["busy"] += hold
            finally:
                in_flight[0] -= 1
            stats["requests"] += 1
            stats["last"] = time.monotonic()
            return web.json_response(
                {
                    "id": "chatcmpl-sim",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(json.dumps(body["messages"])) // 4,
                        "completion_tokens": tokens,
                        "total_tokens": tokens + len(json.dumps(body["messages"])) // 4,
                    },
                }
            )

        return handle

    async def control(request: web.Request) -> web.StreamResponse:
        if request.path == "/reset":
            reset()
            return web.json_response({})
        return web.json_response(stats)

    async def sampler() -> None:
        while True:
            stats["samples"].append((round(time.monotonic() - stats["t0"], 2), in_flight[0]))
            await asyncio.sleep(SAMPLE_S)

    ports = []
    for index in range(replicas):
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler(index))
        app.router.add_get("/stats", control)
        app.router.add_get("/reset", control)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
    task = asyncio.create_task(sampler())
    print(json.dumps({"ports": ports}), flush=True)
    await asyncio.Event().wait()  # until the parent terminates us
    task.cancel()


# --- the tournament (this process) ----------------------------------------------------------


def get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        return json.loads(response.read())


def run_one(
    n_agents: int, replicas: int, args: argparse.Namespace, snapshot: Path, work: Path
) -> dict[str, Any]:
    from drarena.arena.config import parse_config
    from drarena.arena.execute import execute
    from drarena.ledger.folder import RunDir
    from drarena.models.config import CacheMode

    child = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            str(replicas),
            "--slots",
            str(args.slots),
            "--per-token-ms",
            str(args.per_token_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        ports = json.loads(child.stdout.readline())["ports"]
        bases = [f"http://127.0.0.1:{p}/v1" for p in ports]
        roles: dict[str, Any] = {"examiner": {"model": "openai/sim-examiner", "api_bases": bases}}
        agents = []
        for i in range(n_agents):
            roles[f"agent{i}"] = {
                "model": f"openai/sim-strength-{i % 5}",
                "api_bases": bases,
                "sampling": {"max_tokens": 600},
            }
            agents.append(
                {"name": f"cb{i:03d}", "kind": "closed_book", "args": {"role": f"agent{i}"}}
            )
        capacity = replicas * args.slots
        name = f"cluster-{n_agents}a-{replicas}r"
        config = parse_config(
            {
                "name": name,
                "snapshot": str(snapshot),
                "runs_root": str(work / "runs"),
                "index_root": str(work / "index"),
                "seed": 1,
                "swiss_rounds": args.rounds,
                "concurrency": max(1, n_agents // 2),
                "trees": {"count": args.trees},
                "match": {"max_rounds": 1},
                "rating": {"resamples": 20},
                "models": {
                    "concurrency": 4 * capacity,
                    "retry": {"max_attempts": 2},
                    "roles": roles,
                },
                "agents": agents,
            },
            name,
        )
        get(ports[0], "/reset")
        started = time.monotonic()
        result = execute(
            config,
            RunDir(work / "runs" / name),
            serve=False,
            cache_mode=CacheMode.OFF,
            prepare=False,
        )
        wall = time.monotonic() - started
        stats = get(ports[0], "/stats")
    finally:
        child.terminate()
        child.wait(timeout=30)
    window = (stats["last"] - stats["first"]) if stats["first"] is not None else 0.0
    busy = stats["busy"]
    # samples within the server's active window only (setup before the first request is
    # the tournament loading its inputs, not the server's business)
    begin = (stats["first"] or 0.0) - stats["t0"]
    end = (stats["last"] or 0.0) - stats["t0"]
    active = [(t - begin, n) for t, n in stats["samples"] if begin <= t <= end]
    per_second: dict[int, list[int]] = {}
    for t, n in active:
        per_second.setdefault(int(t), []).append(n)
    series = [round(sum(v) / len(v), 1) for _, v in sorted(per_second.items())]
    sampled = [n for _, n in active]
    return {
        "agents": n_agents,
        "replicas": replicas,
        "capacity": capacity,
        "matches": len(result.log),
        "requests": stats["requests"],
        "model_calls": result.model_calls,
        "wall_s": wall,
        "window_s": window,
        "busy_slot_s": busy,
        "limit_s": busy / capacity,
        "util_window": busy / (capacity * window) if window else 0.0,
        "util_wall": busy / (capacity * wall),
        "setup_s": wall - window,
        "peak_in_flight": stats["peak_in_flight"],
        "mean_in_flight": sum(sampled) / len(sampled) if sampled else 0.0,
        "series": series,
    }


def prepared(source: Path) -> Path:
    """A copy of the snapshot with its extraction and trees built, outside the repository
    (under the temp dir, kept between runs: building them takes minutes on 2 busy cores)."""
    from drarena.corpus.extract import extract_snapshot
    from drarena.corpus.trees import TreeParams, build_snapshot_trees

    manifest = (source / "manifest.json").read_bytes()
    tag = hashlib.sha256(manifest).hexdigest()[:12]
    copy = Path(tempfile.gettempdir()) / f"drarena-bench-cluster-{tag}" / "snapshot"
    started = time.monotonic()
    if not copy.exists():
        shutil.copytree(source, copy.with_suffix(".partial"), dirs_exist_ok=True)
        copy.with_suffix(".partial").rename(copy)
    extract_snapshot(copy)  # each stage does nothing when it is up to date
    build_snapshot_trees(copy, TreeParams(count=10, seed=1))
    print(
        f"prepared {copy} (extraction and trees) in {time.monotonic() - started:.1f} s", flush=True
    )
    return copy


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--agents", default="8,32")
    parser.add_argument("--replicas", default="1,4")
    parser.add_argument("--slots", type=int, default=4, help="batch limit per replica")
    parser.add_argument("--per-token-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3, help="Swiss rounds")
    parser.add_argument("--trees", type=int, default=1, help="trees per pairing")
    parser.add_argument("--snapshot", type=Path, default=ROOT / "snapshots" / "pydocs")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.slots, args.per_token_ms / 1000.0))
        return
    import logging

    logging.disable(logging.WARNING)  # the per-call log lines would drown the figures
    with tempfile.TemporaryDirectory(prefix="drarena-bench-cluster-") as tmp:
        work = Path(tmp)
        snapshot = prepared(args.snapshot)
        print(
            f"bench_cluster: slots/replica {args.slots}, {args.per_token_ms} ms/token, "
            f"{args.rounds} Swiss rounds, {args.trees} tree(s)/pairing, closed_book agents, "
            f"match concurrency = agents/2; load {load()}",
            flush=True,
        )
        for n_agents in (int(x) for x in args.agents.split(",")):
            for replicas in (int(x) for x in args.replicas.split(",")):
                r = run_one(n_agents, replicas, args, snapshot, work)
                print(
                    f"\n{r['agents']} agents x {r['replicas']} replica(s) (capacity "
                    f"{r['capacity']}): {r['matches']} matches, {r['requests']} requests; "
                    f"wall {r['wall_s']:.1f} s (setup before the first request "
                    f"{r['setup_s']:.1f} s), server window {r['window_s']:.1f} s, "
                    f"server limit {r['limit_s']:.1f} s (window/limit "
                    f"{r['window_s'] / r['limit_s']:.2f}x); utilisation "
                    f"{100 * r['util_window']:.0f}% of the window, "
                    f"{100 * r['util_wall']:.0f}% of the wall; in flight mean "
                    f"{r['mean_in_flight']:.1f}, peak {r['peak_in_flight']}; load {load()}"
                )
                print(
                    "  requests in flight, mean per second of the window: "
                    + " ".join(f"{v:g}" for v in r["series"])
                )
    print(
        "\nWhat limits utilisation: Swiss rounds pair on all results of the previous round, "
        "so only one round's matches are ever in flight (agents/2 matches, each a chain of "
        "task -> 2 answers -> 2 judgments); a round's tail waits for its slowest match. "
        "More trees per pairing (--trees) or more agents fill the server; so would a "
        "scheduler that starts next-round matches as soon as their pairing is known."
    )


if __name__ == "__main__":
    main()
