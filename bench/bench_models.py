"""Model layer benchmark against the local CPU vLLM server (or DRARENA_MODEL_API_BASE).

Prints: requests/s and tokens/s at concurrency 1, 4, 8 (the gain is vLLM's batching);
the client's own overhead per call against a raw HTTP call to the same server, interleaved
in the same run; and replay speed from the record/replay cache against real calls.

Usage: .venv/bin/python bench/bench_models.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, Sampling
from drarena.models.serve import ServerHandle, model_server

TOPICS = [
    "rivers",
    "volcanoes",
    "libraries",
    "bridges",
    "deserts",
    "glaciers",
    "markets",
    "lighthouses",
    "forests",
    "islands",
    "railways",
    "museums",
    "harbors",
    "comets",
    "gardens",
    "canyons",
]


def client_for(
    handle: ServerHandle,
    max_tokens: int,
    concurrency: int,
    cache: Path | None = None,
    mode: str = "off",
) -> ModelClient:
    role = ModelRole(
        model=handle.litellm_model,
        api_base=handle.api_base,
        sampling=Sampling(max_tokens=max_tokens, temperature=0.0),
        timeout_s=300,
    )
    cfg = ModelsConfig.model_validate(
        {
            "roles": {"bench": role},
            "concurrency": concurrency,
            "cache": {"path": cache, "mode": mode} if cache else {},
        }
    )
    return ModelClient(cfg)


def ask(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"Write a long paragraph about {TOPICS[i % 16]} (number {i})."}
    ]


async def throughput(handle: ServerHandle, concurrency: int, requests: int) -> tuple[float, float]:
    client = client_for(handle, 32, concurrency)
    started = time.perf_counter()
    done = await asyncio.gather(*(client.complete("bench", ask(i)) for i in range(requests)))
    wall = time.perf_counter() - started
    return requests / wall, sum(d.completion_tokens for d in done) / wall


async def overhead(handle: ServerHandle, rounds: int) -> tuple[float, float]:
    """Median latency of the same 1-token call: raw aiohttp POST vs ModelClient."""
    client = client_for(handle, 1, 1)
    raw_times: list[float] = []
    client_times: list[float] = []
    async with aiohttp.ClientSession() as session:
        for i in range(rounds):
            messages = [{"role": "user", "content": f"Say hi ({i})."}]
            body = {
                "model": handle.model,
                "messages": messages,
                "max_tokens": 1,
                "temperature": 0.0,
                "top_p": 1.0,
                "seed": 0,
            }
            t0 = time.perf_counter()
            async with session.post(f"{handle.api_base}/chat/completions", json=body) as r:
                assert r.status == 200, await r.text()
                await r.json()
            t1 = time.perf_counter()
            await client.complete("bench", messages)
            t2 = time.perf_counter()
            raw_times.append(t1 - t0)
            client_times.append(t2 - t1)
    return statistics.median(raw_times), statistics.median(client_times)


STUB_REPLY = {
    "id": "stub",
    "object": "chat.completion",
    "created": 0,
    "model": "stub",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


async def stub_overhead(rounds: int) -> tuple[float, float]:
    """The same comparison against an instant OpenAI-style stub: the client's own cost alone,
    free of the model's time (which, on shared cores, swamps a few ms)."""
    from aiohttp import web

    async def reply(request: web.Request) -> web.Response:
        await request.json()
        return web.json_response(STUB_REPLY)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", reply)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        stub = ServerHandle(f"http://127.0.0.1:{port}/v1", "stub")
        await overhead(stub, 5)  # warm-up
        return await overhead(stub, rounds)
    finally:
        await runner.cleanup()


async def replay_speed(handle: ServerHandle, distinct: int, passes: int) -> tuple[float, float]:
    """Real 1-token calls/s while recording, then replayed calls/s from the cache."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "bench-cache.sqlite"
        recorder = client_for(handle, 1, 1, cache, "read-write")
        started = time.perf_counter()
        for i in range(distinct):
            await recorder.complete("bench", [{"role": "user", "content": f"Count to {i}."}])
        real_rate = distinct / (time.perf_counter() - started)
        replayer = client_for(handle, 1, 1, cache, "replay")
        started = time.perf_counter()
        for _ in range(passes):
            for i in range(distinct):
                await replayer.complete("bench", [{"role": "user", "content": f"Count to {i}."}])
        replay_rate = distinct * passes / (time.perf_counter() - started)
        assert replayer.model_calls == 0
    return real_rate, replay_rate


async def run(handle: ServerHandle, rounds: int) -> None:
    await client_for(handle, 4, 1).complete("bench", ask(0))  # warm-up (imports, graphs)
    print(f"server {handle.api_base} model {handle.model}")
    print("concurrency  requests  req/s   tokens/s  gain vs c=1")
    base = None
    for concurrency, requests in ((1, 4), (4, 8), (8, 16)):
        rps, tps = await throughput(handle, concurrency, requests)
        base = base or tps
        print(f"{concurrency:>11}  {requests:>8}  {rps:5.2f}  {tps:8.1f}  {tps / base:9.2f}x")
    raw, wrapped = await overhead(handle, rounds)
    extra = wrapped - raw
    print(
        f"1-token call, median of {rounds}: raw HTTP {raw * 1000:.1f} ms, ModelClient "
        f"{wrapped * 1000:.1f} ms, overhead {extra * 1000:+.1f} ms ({extra / raw:+.1%})"
    )
    raw, wrapped = await stub_overhead(rounds * 10)
    extra = wrapped - raw
    print(
        f"same against an instant stub server, median of {rounds * 10}: raw HTTP "
        f"{raw * 1000:.2f} ms, ModelClient {wrapped * 1000:.2f} ms, overhead "
        f"{extra * 1000:+.2f} ms"
    )
    real_rate, replay_rate = await replay_speed(handle, 20, 50)
    print(
        f"replay: {replay_rate:,.0f} cached calls/s vs {real_rate:.1f} real 1-token calls/s "
        f"({replay_rate / real_rate:,.0f}x)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20, help="overhead samples")
    args = parser.parse_args()
    started = time.perf_counter()
    with model_server() as handle:
        print(f"server ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        asyncio.run(run(handle, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
