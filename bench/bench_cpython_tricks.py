"""What drarena's two tricks on CPython internals buy, on the Python that runs this file.

Run with each interpreter drarena supports (issue 38, item 10):
    .venv/bin/python bench/bench_cpython_tricks.py
    .venv-py3.12/bin/python bench/bench_cpython_tricks.py
    .venv-py3.13/bin/python bench/bench_cpython_tricks.py

1. `runs.execute.frozen_heap` (gc.freeze around the tournament, rarer young collections): a
   heap like a tournament's (drarena, litellm and aiohttp imported, plus --heap-objects long-
   lived objects), then a loop allocating short-lived objects with cycles, the way matches
   make messages and records. Printed: the longest single collection (a pause of the event
   loop), the time in the collector and the number of collections, and the pause of one
   full collection, without and with.
2. `models.direct.eager_body_writes` (3.11: a task factory starting aiohttp's body writer in
   the caller's turn; 3.12+: aiohttp starts it eagerly itself, on the standard library's
   eager tasks): a burst of --burst requests posted at once to a loopback aiohttp server,
   with other work ready in the same loop turn; printed: the delay from the burst's start to
   the server receiving its first request, without and with the factory (3.11), or as
   aiohttp does it (3.12+).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from typing import Any


def gc_bench(heap_objects: int, churn: int) -> dict[str, float]:
    import aiohttp  # noqa: F401  (what a tournament has imported)
    import litellm  # noqa: F401

    from drarena.runs.execute import frozen_heap

    heap = [{"i": i, "s": str(i), "t": (i, i + 1)} for i in range(heap_objects)]
    results: dict[str, float] = {}
    for label, use in (("plain", False), ("frozen_heap", True)):
        pauses: list[float] = []
        started: list[float] = []

        def timer(
            phase: str,
            info: dict[str, Any],
            started: list[float] = started,
            pauses: list[float] = pauses,
        ) -> None:
            if phase == "start":
                started.append(time.perf_counter())
            elif started:
                pauses.append(time.perf_counter() - started.pop())

        gc.collect()
        gc.callbacks.append(timer)
        begin = time.perf_counter()
        try:
            ctx = frozen_heap() if use else _nothing()
            with ctx:
                for n in range(churn):
                    a: dict[str, Any] = {"n": n, "msg": [str(n)] * 4}
                    b: dict[str, Any] = {"peer": a}
                    a["peer"] = b  # a cycle, as records referring to each other
        finally:
            gc.callbacks.remove(timer)
        total = time.perf_counter() - begin
        results[f"{label}: longest collection ms"] = 1000 * max(pauses, default=0.0)
        results[f"{label}: time in collector ms"] = 1000 * sum(pauses)
        results[f"{label}: collections"] = float(len(pauses))
        results[f"{label}: loop wall s"] = total
        ctx = frozen_heap() if use else _nothing()
        with ctx:  # a full collection's pause: what a tournament's loop waits when one runs
            start = time.perf_counter()
            gc.collect()
            results[f"{label}: one full collection ms"] = 1000 * (time.perf_counter() - start)
    del heap
    return results


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


async def _burst(burst: int, eager: bool) -> float:
    import aiohttp
    from aiohttp import web

    from drarena.models.direct import eager_body_writes

    first: list[float] = []

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        if not first:
            first.append(time.perf_counter())
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/x", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    loop = asyncio.get_running_loop()
    factory = eager_body_writes(loop) if eager else None
    body = b"x" * 2000
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        await asyncio.gather(
            *(session.post(f"http://127.0.0.1:{port}/x", data=body) for _ in range(4))
        )
        first.clear()

        async def post() -> None:
            async with session.post(f"http://127.0.0.1:{port}/x", data=body) as r:
                await r.read()

        def busy() -> None:  # other ready work in the same turn (preparing the next request)
            sum(range(20_000))

        start = time.perf_counter()
        tasks = []
        for _ in range(burst):
            tasks.append(asyncio.ensure_future(post()))
            loop.call_soon(busy)
        await asyncio.gather(*tasks)
    if factory is not None and loop.get_task_factory() is factory:
        loop.set_task_factory(None)
    await runner.cleanup()
    return 1000 * (first[0] - start)


def eager_bench(burst: int, repeats: int) -> dict[str, float]:
    results: dict[str, float] = {}
    modes = [("no factory", False), ("eager_body_writes", True)]
    if sys.version_info >= (3, 12):
        modes = [("aiohttp's own eager start", False)]
    for label, eager in modes:
        delays = [asyncio.run(_burst(burst, eager)) for _ in range(repeats)]
        results[f"{label}: first request at the server, median ms"] = statistics.median(delays)
    return results


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heap-objects", type=int, default=1_000_000)
    parser.add_argument("--churn", type=int, default=2_000_000)
    parser.add_argument("--burst", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}")
    for name, value in gc_bench(args.heap_objects, args.churn).items():
        print(f"  gc     {name:45} {value:10.2f}")
    for name, value in eager_bench(args.burst, args.repeats).items():
        print(f"  eager  {name:45} {value:10.2f}")


if __name__ == "__main__":
    main()
