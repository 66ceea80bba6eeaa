"""Cluster bench: the real tournament against simulated replicas of an OpenAI-compatible server.

Run: .venv/bin/python bench/bench_cluster.py [--agents 8,32,128] [--replicas 1,4,16]
     [--slots 4] [--per-token-ms 5] [--answer-sentences 4] [--rounds 3] [--trees 1]
     [--early-start 0,4] [--budget-s 450] [--snapshot snapshots/pydocs]

A child process serves R simulated replicas on loopback (aiohttp, one port each). Each replica
has a batch limit (`--slots`: requests it decodes at once; more wait in its queue) and a fixed
per-token latency: a request holds a slot for per_token x completion tokens (characters / 4).
Answers are canned and deterministic, chosen by the request as a scripted Examiner would:
response_format `task` -> a task built from the prompt's target sources; any other schema -> a
verdict; no schema -> the agent's `answer` tool call, whose strength is the digit in the
role's model name (openai/sim-strength-N), so the stronger agent wins.

This process runs drarena.runs.execute.execute, the real tournament: closed_book agents (one
model call per answer), the real ModelClient over HTTP through litellm, one role per agent
with `api_bases` listing every replica (the client's least-in-flight balancer spreads them).

Each (agents, replicas) pair is played twice in the same run, round by round (`early_start:
0`) and with early start (`early_start: 4`: next-round matches start once their pairing is
certain), and the two matches.jsonl must be the same bytes. Prints per run: wall of execute()
and drarena's CPU seconds, the server's active window (first request to last answer), busy
slot-seconds, utilisation = busy slot-seconds / (capacity x window), the server's own limit
(busy slot-seconds / capacity: the wall a perfectly packed schedule would need), the
dependency bound (rounds x the longest task, answer and judgment: what unlimited slots would
need round by round), the share of the window with fewer requests than slots, stranded
capacity (the mean share of slots idle at one replica while requests queue at another: what
a balancer holding calls back for the first free replica could win), the mean and
peak requests in flight, and in-flight requests over time (at most ~40 buckets).
The snapshot is copied to a temporary folder (trees and extraction are built there once), so
the repository is never written.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
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


def kind_of(body: dict[str, Any]) -> str:
    fmt = body.get("response_format")
    if fmt and fmt["json_schema"]["name"] == "task":
        return "task"
    return "judge" if fmt else "answer"


def canned(body: dict[str, Any], sentences: int = 30) -> dict[str, Any]:
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
    words = " ".join(["The pages describe the topic in detail."] * sentences)
    report = f"Report strength={strength.group(1) if strength else 0}. {words}"
    args = json.dumps({"report": report, "citations": []})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call-1", "type": "function", "function": {"name": "answer", "arguments": args}}
        ],
    }


async def serve(replicas: int, slots: int, per_token_s: float, sentences: int) -> None:
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
            longest={},
            t0=time.monotonic(),
            cpu0=time.process_time(),
        )

    reset()
    in_flight = [0]  # requests received and not yet answered (decoding or queued)
    per_replica = [0] * replicas
    limits = [asyncio.Semaphore(slots) for _ in range(replicas)]

    def handler(index: int) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            now = time.monotonic()
            stats["first"] = now if stats["first"] is None else stats["first"]
            in_flight[0] += 1
            per_replica[index] += 1
            stats["peak_in_flight"] = max(stats["peak_in_flight"], in_flight[0])
            try:
                message = canned(body, sentences)
                text = message["content"] + "".join(
                    c["function"]["arguments"] for c in message.get("tool_calls", ())
                )
                tokens = max(1, len(text) // 4)
                async with limits[index]:
                    hold = per_token_s * tokens
                    await asyncio.sleep(hold)
                    stats["busy"] += hold
                    kind = kind_of(body)
                    stats["longest"][kind] = max(stats["longest"].get(kind, 0.0), hold)
            finally:
                in_flight[0] -= 1
                per_replica[index] -= 1
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
        return web.json_response({**stats, "cpu_s": time.process_time() - stats["cpu0"]})

    async def sampler() -> None:
        while True:
            idle = sum(max(0, slots - n) for n in per_replica)
            queued = sum(max(0, n - slots) for n in per_replica)
            stats["samples"].append(
                (round(time.monotonic() - stats["t0"], 2), in_flight[0], min(idle, queued))
            )
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
    n_agents: int,
    replicas: int,
    early_start: int,
    args: argparse.Namespace,
    snapshot: Path,
    work: Path,
) -> dict[str, Any]:
    from drarena.config.tournament import parse_config
    from drarena.ledger.folder import RunDir
    from drarena.models.config import CacheMode
    from drarena.runs.execute import RunOptions, execute

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
            "--answer-sentences",
            str(args.answer_sentences),
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
        name = f"cluster-{n_agents}a-{replicas}r-e{early_start}"
        config = parse_config(
            {
                "name": name,
                "snapshot": str(snapshot),
                "runs_root": str(work / "runs"),
                "index_root": str(work / "index"),
                "seed": 1,
                "swiss_rounds": args.rounds,
                "concurrency": max(1, n_agents // 2),
                "early_start": early_start,
                "trees": {"count": args.trees},
                "match": {"max_rounds": args.match_rounds},
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
        cpu = time.process_time()
        lines = io.StringIO()  # the tournament's progress lines: counted, not shown
        with contextlib.redirect_stderr(lines):
            result = execute(
                config,
                RunDir(work / "runs" / name),
                RunOptions(serve=False, cache_mode=CacheMode.OFF, prepare=False),
            )
        cpu = time.process_time() - cpu
        wall = time.monotonic() - started
        stats = get(ports[0], "/stats")
    finally:
        child.terminate()
        child.wait(timeout=30)
    log_bytes = (work / "runs" / name / "matches.jsonl").read_bytes()
    early_started = sum(int(n) for n in re.findall(r"(\d+) started early", lines.getvalue()))
    window = (stats["last"] - stats["first"]) if stats["first"] is not None else 0.0
    busy = stats["busy"]
    # samples within the server's active window only (setup before the first request is
    # the tournament loading its inputs, not the server's business)
    begin = (stats["first"] or 0.0) - stats["t0"]
    end = (stats["last"] or 0.0) - stats["t0"]
    active = [(t - begin, n, x) for t, n, x in stats["samples"] if begin <= t <= end]
    width = max(SAMPLE_S, window / 40)  # at most ~40 buckets a run
    buckets: dict[int, list[int]] = {}
    for t, n, _ in active:
        buckets.setdefault(int(t / width), []).append(n)
    series = [round(sum(v) / len(v), 1) for _, v in sorted(buckets.items())]
    sampled = [n for _, n, _ in active]
    stranded = [x for _, _, x in active]
    longest = stats["longest"]
    # the dependency bound: each match round is a chain task -> two answers (concurrent) -> two
    # judgments (concurrent); with unlimited slots a round-by-round schedule cannot beat Swiss
    # rounds x the longest of each (x match rounds where the longest match plays them all)
    chain = sum(longest.get(k, 0.0) for k in ("task", "answer", "judge"))
    return {
        "agents": n_agents,
        "replicas": replicas,
        "early_start": early_start,
        "capacity": capacity,
        "matches": len(result.log),
        "early_started": early_started,
        "requests": stats["requests"],
        "model_calls": result.model_calls,
        "wall_s": wall,
        "cpu_s": cpu,
        "server_cpu_s": stats["cpu_s"],
        "window_s": window,
        "busy_slot_s": busy,
        "limit_s": busy / capacity,
        "chain_bound_s": args.rounds * args.match_rounds * chain,
        "util_window": busy / (capacity * window) if window else 0.0,
        "util_wall": busy / (capacity * wall),
        "starved": sum(1 for n in sampled if n < capacity) / len(sampled) if sampled else 0.0,
        "stranded": sum(stranded) / (capacity * len(stranded)) if stranded else 0.0,
        "setup_s": wall - window,
        "peak_in_flight": stats["peak_in_flight"],
        "mean_in_flight": sum(sampled) / len(sampled) if sampled else 0.0,
        "series": series,
        "bucket_s": width,
        "log_sha256": hashlib.sha256(log_bytes).hexdigest()[:16],
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
    parser.add_argument("--agents", default="8,32,128")
    parser.add_argument("--replicas", default="1,4,16")
    parser.add_argument("--slots", type=int, default=4, help="batch limit per replica")
    parser.add_argument("--per-token-ms", type=float, default=5.0)
    parser.add_argument(
        "--answer-sentences", type=int, default=4, help="length of the canned agent answer"
    )
    parser.add_argument("--rounds", type=int, default=3, help="Swiss rounds")
    parser.add_argument("--trees", type=int, default=1, help="trees per pairing")
    parser.add_argument(
        "--match-rounds",
        type=int,
        default=1,
        help="match.max_rounds: above 1, matches between equal strengths (ties) go on, so a "
        "Swiss round ends on a tail of long matches",
    )
    parser.add_argument(
        "--early-start",
        default="0,4",
        help="the tournament's early_start values to compare (0: round by round)",
    )
    parser.add_argument(
        "--budget-s", type=float, default=450.0, help="skip the runs left after this long"
    )
    parser.add_argument("--snapshot", type=Path, default=ROOT / "snapshots" / "pydocs")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(
            serve(args.serve, args.slots, args.per_token_ms / 1000.0, args.answer_sentences)
        )
        return
    import logging

    logging.disable(logging.WARNING)  # the per-call log lines would drown the figures
    began = time.monotonic()
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="drarena-bench-cluster-") as tmp:
        work = Path(tmp)
        snapshot = prepared(args.snapshot)
        print(
            f"bench_cluster: slots/replica {args.slots}, {args.per_token_ms} ms/token, "
            f"{args.rounds} Swiss rounds, {args.trees} tree(s)/pairing, match max_rounds "
            f"{args.match_rounds}, closed_book agents "
            f"({args.answer_sentences}-sentence answers), match concurrency = agents/2, "
            f"early_start {args.early_start}; load {load()}",
            flush=True,
        )
        for n_agents in (int(x) for x in args.agents.split(",")):
            for replicas in (int(x) for x in args.replicas.split(",")):
                for early in (int(x) for x in args.early_start.split(",")):
                    tag = f"{n_agents} x {replicas} early_start={early}"
                    if time.monotonic() - began > args.budget_s:
                        skipped.append(tag)
                        print(f"\n{tag}: skipped (budget of {args.budget_s:.0f} s spent)")
                        continue
                    r = run_one(n_agents, replicas, early, args, snapshot, work)
                    rows.append(r)
                    print(
                        f"\n{tag} (capacity {r['capacity']}): {r['matches']} matches "
                        f"({r['early_started']} started early), "
                        f"{r['requests']} requests; wall {r['wall_s']:.1f} s (setup "
                        f"{r['setup_s']:.1f} s), drarena CPU {r['cpu_s']:.1f} s, the "
                        f"simulated server's CPU {r['server_cpu_s']:.1f} s; server "
                        f"window {r['window_s']:.1f} s, limit {r['limit_s']:.1f} s "
                        f"(window/limit {r['window_s'] / r['limit_s']:.2f}x), dependency "
                        f"bound {r['chain_bound_s']:.1f} s; utilisation "
                        f"{100 * r['util_window']:.0f}% of the window, "
                        f"{100 * r['util_wall']:.0f}% of the wall; fewer requests than slots "
                        f"{100 * r['starved']:.0f}% of the window; stranded "
                        f"{100 * r['stranded']:.0f}%; in flight mean "
                        f"{r['mean_in_flight']:.1f}, peak {r['peak_in_flight']}; matches.jsonl "
                        f"sha256 {r['log_sha256']}; load {load()}",
                        flush=True,
                    )
                    print(
                        f"  requests in flight, mean per {r['bucket_s']:.1f} s of the window: "
                        + " ".join(f"{v:g}" for v in r["series"]),
                        flush=True,
                    )
    print(
        "\nagents x replicas (slots)  early_start  matches (early)  window   limit  bound"
        "  window/limit"
        "  util  starved  stranded  in flight  same log"
    )
    logs: dict[tuple[int, int], set[str]] = {}
    for r in rows:
        logs.setdefault((r["agents"], r["replicas"]), set()).add(r["log_sha256"])
    for r in rows:
        same = "yes" if len(logs[(r["agents"], r["replicas"])]) == 1 else "NO"
        print(
            f"{r['agents']:>4} x {r['replicas']:<2} ({r['capacity']:>2})"
            f"{r['early_start']:>12}  {r['matches']:>7} ({r['early_started']:>3})  "
            f"{r['window_s']:>5.1f} s "
            f"{r['limit_s']:>5.1f} s {r['chain_bound_s']:>4.1f} s"
            f"  {r['window_s'] / r['limit_s']:>9.2f}x"
            f"  {100 * r['util_window']:>3.0f}%  {100 * r['starved']:>6.0f}%"
            f"  {100 * r['stranded']:>7.0f}%"
            f"  {r['mean_in_flight']:>5.1f}/{r['peak_in_flight']:<4} {same}"
        )
    if skipped:
        print("not measured (budget): " + "; ".join(skipped))
    print(
        f"\nbench took {time.monotonic() - began:.0f} s. window/limit near 1 means the "
        "simulated server was the limit; where the dependency bound (Swiss rounds x match "
        "rounds x the longest task, answer and judgment) exceeds the limit, the chains of "
        "dependent calls are, and only early start (next-round matches whose pairing is "
        "certain) can overlap rounds; where drarena's CPU approaches the window, the one "
        "drarena process is."
    )


if __name__ == "__main__":
    main()
