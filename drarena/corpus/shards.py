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
from dataclasses import fields
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from drarena.corpus.page import PageExtract, RawLink
from drarena.errors import DrarenaError
from drarena.files import atomic_output

SHARD_PAGES = 250
CACHE_DIR = ".extract-shards"
MAX_CACHE_LINE = 64 << 20  # as extract.MAX_JSONL_LINE: past any page's result

R = TypeVar("R")
Job = tuple[bytes, str, str, int]  # as extract.Job: body, canonical URL, Content-Type, max bytes
Mapper = Callable[[Callable[[list[Job]], Any], Iterable[list[Job]]], Iterator[Any]]


def extract_shard(jobs: list[Job]) -> list[PageExtract]:
    """One shard's pages, in order (a Ray task; top level so it pickles by reference)."""
    from drarena.corpus.extract import extract_job

    return [extract_job(job) for job in jobs]


def extract_shard_lines(jobs: list[Job]) -> bytes:
    """One shard's results as the bytes of its cache file, a JSON line a page (a Ray task).

    Why bytes and not the records: the worker does the serializing the shard cache needs, so
    the driver (one process beside the workers, which also reads the WARC files and writes
    the outputs in order) only writes the bytes out and parses them, as it parses a shard
    read back from the cache; fresh and resumed shards take one path."""
    return "".join(f"{_dump(page)}\n" for page in extract_shard(jobs)).encode("ascii")


def shard_key(params: dict[str, Any], jobs: Sequence[Job]) -> str:
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode())
    for body, url, ctype, max_bytes in jobs:
        digest.update(f"\0{url}\0{ctype}\0{max_bytes}\0".encode("utf-8", "surrogatepass"))
        digest.update(hashlib.sha256(body).digest())
    return digest.hexdigest()[:32]


_PAGE_FIELDS = tuple(f.name for f in fields(PageExtract))
_LINK_FIELDS = tuple(f.name for f in fields(RawLink))
# ensure_ascii: a lone surrogate in a page's text survives the round trip exactly (and the
# line is ASCII); one encoder, made once (json.dumps with keywords makes one a call)
_ENCODE = json.JSONEncoder(sort_keys=True).encode


def _dump(page: PageExtract) -> str:
    """json.dumps(dataclasses.asdict(page), sort_keys=True), the same bytes, without asdict's
    deep copy of every value."""
    data = {name: getattr(page, name) for name in _PAGE_FIELDS}
    data["links"] = [{name: getattr(link, name) for name in _LINK_FIELDS} for link in page.links]
    return _ENCODE(data)


def _load(line: str | bytes) -> PageExtract:
    data = json.loads(line)
    data["links"] = tuple(RawLink(**link) for link in data["links"])
    return PageExtract(**data)


def _parse(text: bytes, count: int) -> list[PageExtract] | None:
    """A shard file's `count` results, or None when it is not `count` sound lines."""
    lines = text.split(b"\n")
    if lines[-1] != b"" or len(lines) - 1 != count:
        return None
    try:
        return [_load(line) for line in lines[:-1]]
    except (ValueError, TypeError, KeyError):
        return None


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
        try:
            if not path.is_file() or path.stat().st_size > count * MAX_CACHE_LINE:
                return None
            return _parse(path.read_bytes(), count)
        except OSError:
            return None

    def save(self, key: str, pages: list[PageExtract]) -> None:
        self.save_lines(key, "".join(f"{_dump(page)}\n" for page in pages).encode("ascii"))

    def save_lines(self, key: str, text: bytes) -> None:
        """A shard's results as extract_shard_lines wrote them."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_output(self.path(key), "wb") as fh:
            fh.write(text)

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

        computed = iter(self.mapper(extract_shard_lines, self._feed()))
        ready: deque[bytes] = deque()
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
                    parsed = _parse(got, count)
                    if parsed is None:
                        lines = got.count(b"\n")
                        raise DrarenaError(f"extract shard {n}: {lines} result lines, not {count}")
                    pages = parsed
                    if self.cache is not None:
                        self.cache.save_lines(key, got)
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


def local_mapper(fn: Callable[[list[Job]], R], shards: Iterable[list[Job]]) -> Iterator[R]:
    """Shards one after another in this process (the resume path without Ray)."""
    return (fn(shard) for shard in shards)
