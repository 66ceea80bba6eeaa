"""Running a corpus stage's independent pieces on Ray (`--engine ray`): the single-process
path stays the default, Ray is the engine for corpora that outgrow one machine.

Why Ray core tasks and not a pool of our own: a team with millions of pages already has a
cluster, and `ray start --head` / `ray start --address` is how it lends its cores; drarena
only submits pure functions (one WARC file to index, one shard of pages to extract) and
merges their results in submission order, so the output is byte-identical to the
single-process path whatever the workers, their number or the order they finish in.
Why tasks and not Ray Data: the pieces are already shards with a fixed order, and their
results (frozen dataclasses with bytes and tuples) would go through Arrow conversion in a
Dataset for nothing; ordered task results keep the bytes exact and the merge code shared.

Ray is optional (`pip install 'drarena[scale]'`, `make setup-scale`) and imported only here,
only when asked for.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from drarena.errors import DrarenaError

ENGINES = ("local", "ray")
T = TypeVar("T")
R = TypeVar("R")


def ray_module() -> Any:
    """The `ray` package, or a DrarenaError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise DrarenaError(
            "--engine ray needs Ray: `make setup-scale` (pip install 'drarena[scale]')"
        ) from None
    return ray


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise DrarenaError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return engine


@contextmanager
def session(address: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """Ray, connected: to the cluster at `address` (`auto`: the one `ray start` began on this
    machine), else a local Ray started here with `workers` CPUs and shut down on exit. A Ray
    already initialised in this process (a caller's) is used as it is and left running."""
    ray = ray_module()
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": True,
        "logging_level": "ERROR",
    }
    if address:
        ray.init(address=address, **kwargs)
    else:
        # workers import drarena as this process does (a checkout on PYTHONPATH, not installed)
        path = os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH", "")] if p)
        ray.init(
            num_cpus=workers or os.cpu_count() or 1,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
            **kwargs,
        )
    try:
        yield ray
    finally:
        ray.shutdown()


def ordered_map(
    ray: Any,
    fn: Callable[..., R],
    items: Iterable[T],
    *,
    in_flight: int,
    on_done: Callable[[int, R], None] | None = None,
    args: tuple[Any, ...] = (),
) -> Iterator[R]:
    """fn over items as Ray tasks, results yielded in the items' order. At most `in_flight`
    tasks are submitted ahead (items are read lazily: a stream of shards is never all in
    the object store at once); `on_done(i, result)` runs as each result arrives in order.
    `args` go before each item (object refs among them, from ray.put, are resolved by Ray:
    what every task needs goes to the object store once, not with each item)."""
    remote = ray.remote(num_cpus=1, max_retries=2)(fn)
    pending: deque[Any] = deque()
    index = 0
    feed = iter(items)
    while True:
        while len(pending) < max(1, in_flight):
            try:
                item = next(feed)
            except StopIteration:
                break
            pending.append(remote.remote(*args, item))
        if not pending:
            return
        result: R = ray.get(pending.popleft())
        if on_done is not None:
            on_done(index, result)
        index += 1
        yield result


class _Actor:
    """One worker of `actor_map`: `make()` runs once when it starts (a model loaded once per
    worker, not once per item), then `run` calls what it made on each item sent to it."""

    def __init__(self, make: Callable[[], Callable[[Any], Any]]) -> None:
        self.fn = make()

    def run(self, item: Any) -> Any:
        return self.fn(item)


def actor_map(
    ray: Any,
    make: Callable[[], Callable[[T], R]],
    items: Iterable[T],
    *,
    actors: int,
    num_cpus: float = 1,
    num_gpus: float = 0,
) -> Iterator[R]:
    """What `make()` returns, over items, on a pool of `actors` Ray actors (each `make()`s
    once: a dense encoder, loaded once per worker and on a GPU of its own with `num_gpus`);
    results yielded in the items' order. Items go to the actors in turn, at most two ahead
    per actor (items are read lazily, as in `ordered_map`); each actor runs its items one
    after another, so popping results in submission order is the items' order. The actors
    are killed when the iterator ends or is closed."""
    remote = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(_Actor)
    pool = [remote.remote(make) for _ in range(max(1, actors))]
    pending: deque[Any] = deque()
    feed = iter(items)
    sent = 0
    try:
        while True:
            while len(pending) < 2 * len(pool):
                try:
                    item = next(feed)
                except StopIteration:
                    break
                pending.append(pool[sent % len(pool)].run.remote(item))
                sent += 1
            if not pending:
                return
            result: R = ray.get(pending.popleft())
            yield result
    finally:
        for actor in pool:
            ray.kill(actor)
