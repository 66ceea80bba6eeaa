"""Extraction in shards of pages, on Ray or in this process, resumable from the shards done.

Why shards: on a cluster a task per page costs more in scheduling than trafilatura spends on
the page; a shard of a few hundred pages is one task. Why a shard cache: a job over a
million pages that is killed (a preempted node, a full disk) should not start over; each
finished shard's results are written to `<snapshot>/.extract-shards/<key>.jsonl`, where the
key digests the extraction parameters and the shard's inputs (URL, Content-Type, sha256 of
the body), so a rerun reuses exactly the shards whose inputs are unchanged. The cache is
deleted once docs.jsonl is written. Results are merged in shard order, and a page's result
is a pure function of its job, so the output is byte-identical to the single-process path.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from itertools import islice
from pathlib import Path
from typing import Any

from drarena.corpus.page import PageExtract, RawLink
from drarena.errors import DrarenaError
from drarena.files import atomic_output

SHARD_PAGES = 250
CACHE_DIR = ".extract-shards"
MAX_CACHE_LINE = 64 << 20  # as extract.MAX_JSONL_LINE: past any page's result

Job = tuple[bytes, str, str, int]  # as extract.Job: body, canonical URL, Content-Type, max bytes
Mapper = Callable[[Callable[[list[Job]], list[PageExtract]], Iterable[list[Job]]], Iterator[Any]]


def extract_shard(jobs: list[Job]) -> list[PageExtract]:
    """One shard's pages, in order (a Ray task; top level so it pickles by reference)."""
    from drarena.corpus.extract import extract_job

    return [extract_job(job) for job in jobs]


def shard_key(params: dict[str, Any], jobs: Sequence[Job]) -> str:
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode())
    for body, url, ctype, max_bytes in jobs:
        digest.update(f"\0{url}\0{ctype}\0{max_bytes}\0".encode("utf-8", "surrogatepass"))
        digest.update(hashlib.sha256(body).digest())
    return digest.hexdigest()[:32]


def _dump(page: PageExtract) -> str:
    # ensure_ascii: a lone surrogate in a page's text survives the round trip exactly
    return json.dumps(asdict(page), sort_keys=True)


def _load(line: str) -> PageExtract:
    data = json.loads(line)
    data["links"] = tuple(RawLink(**link) for link in data["links"])
    return PageExtract(**data)


class ShardCache:
    """Finished shards' results in `folder`, one JSON line a page."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.jsonl"

    def load(self, key: str, count: int) -> list[PageExtract] | None:
        """The shard's results, or None when absent or not `count` sound lines (a damaged
        file is extracted again, never trusted in part)."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            with path.open("rb") as fh:
                lines = list(iter(lambda: fh.readline(MAX_CACHE_LINE + 1), b""))
            if any(len(line) > MAX_CACHE_LINE for line in lines) or len(lines) != count:
                return None
            return [_load(line.decode("utf-8")) for line in lines]
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def save(self, key: str, pages: list[PageExtract]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_output(self.path(key)) as fh:
            for page in pages:
                fh.write(_dump(page))
                fh.write("\n")

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class ShardRun:
    """Every job's result, in order, as an iterator: shards already in `cache` read back and
    the others run through `mapper` (saved to the cache as each arrives); `reused` counts
    the shards read back. Jobs are read as the mapper asks for shards, so only the shards in
    flight hold bodies, and results are handed on shard by shard: neither the jobs nor the
    results of a snapshot are ever all in memory.

    Why a queue: the mapper reads ahead (a window of shards in flight) through `_feed`,
    which notes every shard in order and hands it only those not cached; results are
    yielded in shard order, cached shards read back when their turn comes (a shard found
    sound ahead of its turn is read again then, never held)."""

    def __init__(
        self,
        jobs: Iterable[Job],
        mapper: Mapper,
        params: dict[str, Any],
        cache: ShardCache | None,
        shard_pages: int = SHARD_PAGES,
        progress: bool = True,
        total: int | None = None,
    ) -> None:
        self.jobs = jobs
        self.mapper = mapper
        self.params = params
        self.cache = cache
        self.shard_pages = shard_pages
        self.progress = progress
        self.total = total
        self.reused = 0
        self._queue: deque[tuple[int, str, int, bool]] = deque()  # (shard, key, pages, cached)

    def _feed(self) -> Iterator[list[Job]]:
        feed = iter(self.jobs)
        n = 0
        while shard := list(islice(feed, self.shard_pages)):
            key = shard_key(self.params, shard)
            cached = self.cache is not None and self.cache.load(key, len(shard)) is not None
            self._queue.append((n, key, len(shard), cached))
            n += 1
            if not cached:
                yield shard

    def __iter__(self) -> Iterator[PageExtract]:
        from tqdm import tqdm

        computed = iter(self.mapper(extract_shard, self._feed()))
        ready: deque[list[PageExtract]] = deque()
        bar = tqdm(
            total=self.total,
            desc="extract",
            unit="page",
            file=sys.stderr,
            disable=not self.progress,
            mininterval=0.5,
        )
        with bar:
            while True:
                if not self._queue:  # the mapper's next result reads the next shards
                    result = next(computed, None)
                    if result is not None:
                        ready.append(result)
                    if not self._queue:
                        return
                    continue
                n, key, count, cached = self._queue.popleft()
                if cached:
                    assert self.cache is not None
                    pages = self.cache.load(key, count)
                    if pages is None:
                        raise DrarenaError(f"extract shard {n}: its cached results changed")
                    self.reused += 1
                else:
                    got = ready.popleft() if ready else next(computed, None)
                    if got is None:
                        raise DrarenaError(f"extract shard {n}: no result came back")
                    pages = got
                    if len(pages) != count:
                        raise DrarenaError(f"extract shard {n}: {len(pages)} results, not {count}")
                    if self.cache is not None:
                        self.cache.save(key, pages)
                bar.update(len(pages))
                yield from pages


def run_sharded(
    jobs: Sequence[Job],
    mapper: Mapper,
    params: dict[str, Any],
    cache: ShardCache | None,
    shard_pages: int = SHARD_PAGES,
    progress: bool = True,
) -> tuple[list[PageExtract], int]:
    """Every job's result in order (ShardRun, collected). Returns (results, shards reused)."""
    run = ShardRun(jobs, mapper, params, cache, shard_pages, progress, total=len(jobs))
    return list(run), run.reused


def local_mapper(
    fn: Callable[[list[Job]], list[PageExtract]], shards: Iterable[list[Job]]
) -> Iterator[list[PageExtract]]:
    """Shards one after another in this process (the resume path without Ray)."""
    return (fn(shard) for shard in shards)
