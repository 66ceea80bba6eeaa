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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
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


def run_sharded(
    jobs: Sequence[Job],
    mapper: Mapper,
    params: dict[str, Any],
    cache: ShardCache | None,
    shard_pages: int = SHARD_PAGES,
    progress: bool = True,
) -> tuple[list[PageExtract], int]:
    """Every job's result in order, shards already in `cache` read back and the others run
    through `mapper` (saved to the cache as each arrives). Returns (results, shards reused)."""
    from tqdm import tqdm

    shards = [list(jobs[i : i + shard_pages]) for i in range(0, len(jobs), shard_pages)]
    keys = [shard_key(params, shard) for shard in shards]
    done: dict[int, list[PageExtract]] = {}
    if cache is not None:
        for n, (key, shard) in enumerate(zip(keys, shards, strict=True)):
            found = cache.load(key, len(shard))
            if found is not None:
                done[n] = found
    todo = [n for n in range(len(shards)) if n not in done]
    bar = tqdm(
        total=len(jobs),
        initial=sum(len(shards[n]) for n in done),
        desc="extract",
        unit="page",
        file=sys.stderr,
        disable=not progress,
        mininterval=0.5,
    )
    with bar:
        for n, pages in zip(todo, mapper(extract_shard, (shards[n] for n in todo)), strict=True):
            if len(pages) != len(shards[n]):
                raise DrarenaError(f"extract shard {n}: {len(pages)} results, not {len(shards[n])}")
            if cache is not None:
                cache.save(keys[n], pages)
            done[n] = pages
            bar.update(len(pages))
    return [page for n in range(len(shards)) for page in done[n]], len(shards) - len(todo)


def local_mapper(
    fn: Callable[[list[Job]], list[PageExtract]], shards: Iterable[list[Job]]
) -> Iterator[list[PageExtract]]:
    """Shards one after another in this process (the resume path without Ray)."""
    return (fn(shard) for shard in shards)
