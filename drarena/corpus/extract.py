"""`drarena snapshot extract`: a snapshot's HTML pages -> docs.jsonl and links.jsonl.

Why here and not in the search stage: trees and both indexes must see the very same text, so
text is extracted once, from the WARC bytes, and every downstream file carries the record id
and payload digest it came from. The latest capture per canonical URL wins; redirects become
aliases of their final page; duplicate, near-empty, unparsable and truncated pages stay in
docs.jsonl with flags and are listed in extract-manifest.json, never dropped silently.

Memory is bounded by the stage, not by the snapshot: the responses are read twice (which are
pages, in what order; then each page's body, extracted when its turn comes) and what needs
every page is worked out in an SQLite file beside the outputs (corpus.spill), so a million
pages cost what ten thousand do (docs/benchmarks.md, "Corpus stages at size").
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import secrets
import sqlite3
import sys
import tempfile
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from drarena.corpus.navlinks import RepeatCounter, RepeatRule
from drarena.corpus.page import (
    MAX_PAGE_BYTES,
    PageExtract,
    RawLink,
    extract_page,
    is_text_page,
)
from drarena.corpus.records import Doc, Link
from drarena.corpus.render import (
    NEAR_EMPTY_CHARS,
    RENDER_PAGES,
    RenderContext,
    Rendered,
    RenderRow,
    doc_id,
    render_pages,
)
from drarena.corpus.shards import CACHE_DIR, ShardCache, ShardRun, extract_shard
from drarena.corpus.spill import ExtractSpill, PagePlan
from drarena.digests import file_sha256
from drarena.errors import DrarenaError, one_line
from drarena.files import atomic_output, open_input, read_bounded
from drarena.records import lone_surrogate
from drarena.web.warc.urls import canonicalize_url

if TYPE_CHECKING:
    from drarena.web.warc.snapshot import Snapshot

EXTRACT_VERSION = 3  # bump when output for the same bytes changes
DOCS_FILE = "docs.jsonl"
LINKS_FILE = "links.jsonl"
MANIFEST_FILE = "extract-manifest.json"
# The manifest sits in a snapshot folder that may be someone else's or damaged; it only says
# whether docs.jsonl and links.jsonl are up to date, so one larger than this is treated as
# absent (the snapshot is extracted again). Why 1 GiB: it lists pages by URL (near_empty,
# duplicates, unparsable with a 200-character error, fallback_text, truncated), 100-350 bytes
# an entry; a crawl of 1 million pages with a third of them listed writes ~70 MB, and even
# every page unparsable ~350 MB, so 1 GiB is over 10x what a real crawl of that size writes.
MAX_MANIFEST_BYTES = 1 << 30
# One line of docs.jsonl or links.jsonl: a page's text is at most what extract read of it
# (MAX_PAGE_BYTES, 4 MiB), up to 6 bytes a character once JSON-escaped, so 64 MiB is past any
# line drarena writes; a longer one (a file of zeros, no newline) is refused, not read whole.
MAX_JSONL_LINE = 64 << 20
_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body")


class ResponseLike(Protocol):
    """What extraction needs of drarena.web.warc.snapshot.StoredResponse."""

    @property
    def canonical_url(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def body(self) -> bytes: ...
    @property
    def content_type(self) -> str: ...
    @property
    def record_id(self) -> str: ...
    @property
    def payload_digest(self) -> str: ...
    @property
    def warc_date(self) -> str: ...
    @property
    def location(self) -> str | None: ...
    @property
    def truncated(self) -> bool: ...


def full_content_type(response: ResponseLike) -> str:
    """The Content-Type header with its charset parameter (content_type is the media type)."""
    for key, value in response.headers:
        if key.lower() == "content-type":
            return value
    return response.content_type


@dataclass(frozen=True, slots=True)
class ExtractResult:
    snapshot_dir: Path
    docs_path: Path
    links_path: Path
    manifest_path: Path
    fingerprint: str
    docs: int
    links: int
    counts: dict[str, Any]
    up_to_date: bool = False


@dataclass
class Selection:
    """Which responses become pages, and what happened to the rest."""

    pages: list[ResponseLike] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # redirecting URL -> final page URL
    skipped: Counter[str] = field(default_factory=Counter)
    responses: int = 0


def text_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_html(response: ResponseLike) -> bool:
    ctype = response.content_type.lower()
    if "html" in ctype:
        return True
    if ctype not in ("", "unk") and not ctype.startswith(
        ("text/plain", "application/octet-stream")
    ):
        return False
    return response.body[:512].lstrip().lower().startswith(_HTML_SNIFF)


def capture_kind(response: ResponseLike) -> tuple[str, str]:
    """What a response is if it is its URL's latest capture: ("page", ""), ("redirect",
    canonical target), or why it is no page ("bad_redirect", "status:404", "non_html:...")."""
    if 300 <= response.status < 400 and response.location:
        try:
            return "redirect", canonicalize_url(response.location)
        except ValueError:
            return "bad_redirect", ""
    if 200 <= response.status < 300:
        if is_html(response) or is_text_page(response.content_type):
            return "page", ""
        kind = response.content_type.split(";")[0].strip().lower() or "unknown"
        return f"non_html:{kind}", ""
    return f"status:{response.status}", ""


def plan_pages(responses: Iterable[ResponseLike], spill: ExtractSpill) -> PagePlan:
    """Pass one: each response's URL, date and kind into the spill (its body let go at
    once), then selection there: the latest capture per canonical URL (WARC date, then WARC
    order), pages ranked by URL, redirects resolved."""
    seq = -1
    for seq, response in enumerate(responses):
        kind, target = capture_kind(response)
        spill.add_capture(response.canonical_url, response.warc_date, seq, kind, target)
    return spill.plan(seq + 1)


def select_pages(responses: Iterable[ResponseLike]) -> Selection:
    """Latest capture per canonical URL (WARC date, then WARC order); redirects resolved.
    The pages' responses come back in docs.jsonl's order, bodies and all, for tests and
    benches; the stage itself streams (plan_pages, extract_responses)."""
    items = list(responses)
    with tempfile.TemporaryDirectory() as tmp, ExtractSpill(Path(tmp)) as spill:
        plan = plan_pages(items, spill)
        ranked = sorted(spill.winners(), key=lambda winner: winner[1])
        pages = [items[seq] for seq, _, _ in ranked]
    return Selection(pages, dict(plan.aliases), plan.skipped, plan.responses)


Job = tuple[bytes, str, str, int]  # body, canonical URL, Content-Type, max page bytes


def extract_job(job: Job) -> PageExtract:
    """One page's extraction, an error in it reported on the page (never raised)."""
    body, url, content_type, max_bytes = job
    try:
        return extract_page(body, url, content_type, max_bytes=max_bytes)
    except Exception as exc:  # a bug on one page must not lose the others; reported per page
        return PageExtract(
            url=url, extractor="none", error=f"extraction failed: {type(exc).__name__}: {exc}"[:200]
        )


_extract_job = extract_job  # the older name (bench/bench_extract.py)


def _pool_context() -> Any:
    """forkserver: workers never inherit threads (a JVM, tokenizers) from the parent."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["drarena.corpus.page", "trafilatura"])
    return ctx


def run_extraction(jobs: Sequence[Job], workers: int, progress: bool = True) -> list[PageExtract]:
    """extract_page over every job, in order, on `workers` processes (1: in this process)."""
    return list(iter_extraction(jobs, workers, progress, total=len(jobs)))


def iter_extraction(
    jobs: Iterable[Job], workers: int, progress: bool = True, total: int | None = None
) -> Iterator[PageExtract]:
    """extract_page over the jobs, results in the jobs' order, on `workers` processes (1: in
    this process). Jobs are read as results are taken, at most `workers` x 4 chunks of up to
    8 pages in flight: a stream of bodies is never all in memory (the pool's own map()
    submits every job before the first result). `total`: how many jobs, for the bar."""
    from tqdm import tqdm

    bar = tqdm(
        total=total,
        desc="extract",
        unit="page",
        file=sys.stderr,
        disable=not progress,
        mininterval=0.5,
    )
    with bar:
        if workers <= 1 or (total is not None and total < 2):
            for job in jobs:
                yield extract_job(job)
                bar.update()
            return
        chunk = max(1, min(8, (total if total is not None else 1 << 30) // (workers * 4)))
        feed = iter(jobs)
        pending: deque[Future[list[PageExtract]]] = deque()
        with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
            while True:
                while len(pending) < workers * 4 and (batch := list(islice(feed, chunk))):
                    pending.append(pool.submit(extract_shard, batch))
                if not pending:
                    return
                for page in pending.popleft().result():
                    yield page
                    bar.update()


def _pairs(links: Iterable[RawLink], aliases: dict[str, str]) -> Iterator[tuple[str, str]]:
    """A page's (target, anchor) pairs for repeated navigation, targets through redirects."""
    return ((aliases.get(raw.target_url, raw.target_url), raw.anchor) for raw in links)


Engine = Callable[[Iterable[Job]], Iterator[PageExtract]]  # results in the jobs' order


def _inside(spill: ExtractSpill, page: PageExtract, aliases: dict[str, str]) -> str:
    """A '1' or '0' for each of the page's links: is its target, through redirects, a page
    of the snapshot. Asked here, while the workers extract, not when the records are
    written: the page set is known since pass one."""
    targets = [aliases.get(raw.target_url, raw.target_url) for raw in page.links]
    found = spill.pages_among(set(targets))
    return "".join("1" if target in found else "0" for target in targets)


def _extract_pass(
    responses: Iterable[ResponseLike],
    spill: ExtractSpill,
    plan: PagePlan,
    engine: Engine,
    max_page_bytes: int,
    repeat: RepeatCounter,
) -> None:
    """Pass two: the responses again, each page's body handed to `engine` when its turn
    comes and its result written to the spill with what its doc needs of the response;
    nothing of a page stays in memory after. Both passes must see the same responses: a
    page whose URL is not the one pass one ranked there, or another count, is an error."""
    waiting: deque[tuple[int, list[Any]]] = deque()

    def changed(what: str) -> DrarenaError:
        return DrarenaError(f"the snapshot's responses changed during extraction ({what})")

    def jobs() -> Iterator[Job]:
        winners = spill.winners()
        ahead = next(winners, None)
        seen = 0
        for seq, response in enumerate(responses):
            seen = seq + 1
            if ahead is None or seq != ahead[0]:
                continue
            _, rank, url = ahead
            if response.canonical_url != url:
                raise changed(f"response {seq} is {response.canonical_url}, was {url}")
            meta = [response.record_id, response.payload_digest, response.warc_date]
            waiting.append((rank, [*meta, response.truncated]))
            yield (response.body, url, full_content_type(response), max_page_bytes)
            ahead = next(winners, None)
        if ahead is not None or seen != plan.responses:
            raise changed(f"{seen} responses, were {plan.responses}")

    aliases = plan.aliases
    results = engine(jobs())
    try:
        for page in results:
            if not waiting:
                raise DrarenaError("extraction returned more results than pages")
            rank, meta = waiting.popleft()
            digest = text_digest(page.text)
            spill.add_page(rank, [*meta, digest], page, _inside(spill, page, aliases))
            if len(page.text) >= NEAR_EMPTY_CHARS:  # near-empty pages are never duplicates
                spill.add_digest(digest, rank, doc_id(page.url))
            repeat.add(_pairs(page.links, aliases))
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # a pool or a Ray session the engine holds ends here, not at collection
    if waiting:
        raise DrarenaError(f"extraction returned {len(waiting)} result(s) fewer than pages")


REPORT_LISTS = ("near_empty", "duplicates", "unparsable", "fallback_text", "truncated")


Renderer = Callable[[RenderContext, Iterable[list[RenderRow]]], Iterator[Rendered]]


def _render_chunks(spill: ExtractSpill) -> Iterator[list[RenderRow]]:
    """The pages' rows in rank order, RENDER_PAGES a chunk, each with its duplicate's id."""
    dups = spill.duplicates()
    dup = next(dups, None)
    chunk: list[RenderRow] = []
    for rank, meta, data, links, inside in spill.rows_in_order():
        duplicate_of = None
        if dup is not None and dup[0] == rank:
            duplicate_of, dup = dup[1], next(dups, None)
        chunk.append((meta, data, links, inside, duplicate_of))
        if len(chunk) == RENDER_PAGES:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _write_records(
    out: Path,
    spill: ExtractSpill,
    plan: PagePlan,
    repeated: frozenset[tuple[str, str]],
    render: Renderer,
) -> dict[str, Any]:
    """docs.jsonl and links.jsonl, the pages in rank order read from the spill a chunk at a
    time and rendered by `render` (here, or on the engine's workers: corpus.render), written
    in order; the manifest's lists go to the spill as they come. Returns the counts."""
    tally: Counter[str] = Counter()
    skipped_links: Counter[str] = Counter()
    ctx = RenderContext.of(plan.aliases, repeated)
    with atomic_output(out / DOCS_FILE) as docs_fh, atomic_output(out / LINKS_FILE) as links_fh:
        for part in render(ctx, _render_chunks(spill)):
            docs_fh.write(part.docs)
            links_fh.write(part.links)
            for name, item in part.flags:
                spill.add_report(name, item)
            tally.update(part.tally)
            skipped_links.update(part.skipped_links)
    return _counts(plan, tally, skipped_links)


def _counts(
    plan: PagePlan, tally: Mapping[str, int], skipped_links: Mapping[str, int]
) -> dict[str, Any]:
    """The manifest's counts, in the order they have always been written."""
    return {
        "responses": plan.responses,
        "pages": tally["pages"],
        "content_pages": tally["content_pages"],
        **{name: tally[name] for name in REPORT_LISTS[:4]},
        "truncated": tally["truncated"],
        "redirect_aliases": len(plan.aliases),
        "links": tally["links"],
        "nav_links": tally["nav_links"],
        "in_snapshot_links": tally["in_snapshot_links"],
        "content_links_in_snapshot": tally["content_links_in_snapshot"],
        "self_links": tally["self_links"],
        "skipped_links": dict(sorted(skipped_links.items())),
        "skipped_responses": dict(sorted(plan.skipped.items())),
    }


def _write_manifest(
    path: Path, manifest: dict[str, Any], lists: Mapping[str, Iterable[Any]]
) -> None:
    """json.dumps({**manifest, **lists}, indent=1, sort_keys=True, ensure_ascii=False) and a
    newline, the same bytes, each list's items streamed from where they are kept (a third of
    a million pages' URLs, flagged near-empty, are not held to be written)."""
    token = secrets.token_hex(8)
    marks = {name: json.dumps(f"\0drarena-list-{token}-{name}") for name in lists}
    text = json.dumps(
        {**manifest, **{name: json.loads(mark) for name, mark in marks.items()}},
        indent=1,
        sort_keys=True,
        ensure_ascii=False,
    )
    with atomic_output(path) as fh:
        at = 0
        for start, name in sorted((text.index(mark), name) for name, mark in marks.items()):
            fh.write(text[at:start])
            empty = True
            for item in lists[name]:  # as json.dumps lays out a list one level down
                fh.write("[\n  " if empty else ",\n  ")
                item_text = json.dumps(item, indent=1, sort_keys=True, ensure_ascii=False)
                fh.write(item_text.replace("\n", "\n  "))
                empty = False
            fh.write("[]" if empty else "\n ]")
            at = start + len(marks[name])
        fh.write(text[at:])
        fh.write("\n")


def _params(max_page_bytes: int, decode_limit: int | None = None) -> dict[str, Any]:
    import trafilatura

    rule = RepeatRule()
    params = {
        "extract_version": EXTRACT_VERSION,
        "trafilatura": trafilatura.__version__,
        "near_empty_chars": NEAR_EMPTY_CHARS,
        "max_page_bytes": max_page_bytes,
        "nav_repeat_share": rule.share,
        "nav_repeat_min_pages": rule.min_pages,
    }
    if decode_limit is not None:  # bodies were decoded up to this many bytes
        params["max_decoded_bytes"] = decode_limit
    return params


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:  # DrarenaError: larger than MAX_MANIFEST_BYTES, missing or unreadable
        data = json.loads(read_bounded(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except (DrarenaError, ValueError, RecursionError):  # RecursionError: nested past the limit
        return None
    return data if isinstance(data, dict) else None


def _up_to_date(out: Path, fingerprint: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest when it vouches for both outputs as they are, else None (extract again).

    Why the shape checks: `counts` and `outputs` are read as drarena wrote them (_result,
    `snapshot extract`), and a damaged manifest whose fingerprint and params still matched
    was a KeyError or TypeError instead of a re-extraction."""
    manifest = _read_manifest(out / MANIFEST_FILE)
    if not manifest or manifest.get("snapshot_fingerprint") != fingerprint:
        return None
    if manifest.get("params") != params:
        return None
    outputs, counts = manifest.get("outputs"), manifest.get("counts")
    if not isinstance(outputs, dict) or not {DOCS_FILE, LINKS_FILE} <= outputs.keys():
        return None
    if not isinstance(counts, dict) or not all(
        isinstance(counts.get(k), int) for k in ("pages", "links")
    ):
        return None
    for name, digest in outputs.items():
        path = out / name
        if not path.is_file() or file_sha256(path) != digest:
            return None
    return manifest


def _result(out: Path, manifest: dict[str, Any], up_to_date: bool) -> ExtractResult:
    counts = manifest["counts"]
    return ExtractResult(
        snapshot_dir=out,
        docs_path=out / DOCS_FILE,
        links_path=out / LINKS_FILE,
        manifest_path=out / MANIFEST_FILE,
        fingerprint=manifest["snapshot_fingerprint"],
        docs=counts["pages"],
        links=counts["links"],
        counts=counts,
        up_to_date=up_to_date,
    )


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """How the extract stage runs. `workers`: processes (None: one per core). `force`:
    extract again even when the outputs match the snapshot. `progress`: a progress bar on
    stderr. `max_page_bytes`: how much of a body is read (a page cut there is flagged
    truncated). `engine` "ray": pages in shards as Ray tasks (on the cluster at `address`,
    else a local Ray of `workers` CPUs), resumable from the shards a killed run finished
    (corpus.shards); the outputs are the same bytes as the local engine's."""

    workers: int | None = None
    force: bool = False
    progress: bool = True
    max_page_bytes: int = MAX_PAGE_BYTES
    engine: str = "local"
    address: str | None = None


def extract_responses(
    responses: Iterable[ResponseLike],
    out: Path,
    *,
    name: str,
    fingerprint: str,
    decode_limit: int | None = None,
    options: ExtractOptions | None = None,
) -> ExtractResult:
    """The stage body over any source of responses; writes into `out`, as `options` say
    (default: ExtractOptions()). `decode_limit`: the cap the responses' bodies were decoded
    with (a page cut there is flagged truncated).

    Memory is bounded by the stage, not by the snapshot: `responses` is read twice, pass
    one for which responses are pages and in what order (no body kept), pass two for the
    pages' bodies, each extracted when its turn comes; what depends on every page (order,
    duplicates, links into the snapshot, repeated navigation, the manifest's lists) is
    worked out in an SQLite file beside the outputs (corpus.spill), removed when done. So
    `responses` must give the same responses each time it is iterated: a list, or an object
    whose __iter__ reads them afresh (extract_snapshot's); a one-shot iterator is read into
    a list first, bodies and all. What stays in memory grows only with the redirects that
    resolve to a page (~370 bytes each) and the repeated-navigation candidates (navlinks)."""
    from drarena.rayrun import check_engine

    options = options or ExtractOptions()
    check_engine(options.engine)
    params = _params(options.max_page_bytes, decode_limit)
    if not options.force and (manifest := _up_to_date(out, fingerprint, params)) is not None:
        return _result(out, manifest, up_to_date=True)
    if not os.access(out, os.W_OK):
        raise DrarenaError(f"{out}: folder is not writable; docs.jsonl and links.jsonl go there")
    if iter(responses) is responses:  # a one-shot iterator: it cannot be read twice
        responses = list(responses)
    cache = ShardCache(out / CACHE_DIR) if options.engine == "ray" else None
    try:
        spill = ExtractSpill(out)
    except OSError as exc:
        raise DrarenaError(f"{out}: cannot write extraction output ({exc})") from None
    try:
        with spill, _Engines(params, cache, options) as engines:
            plan = plan_pages(responses, spill)
            engine = engines.extract(plan.pages)
            repeat = RepeatCounter(RepeatRule())
            _extract_pass(responses, spill, plan, engine, options.max_page_bytes, repeat)
            if repeat.needs_count():
                for links in spill.links_of_pages():
                    repeat.count(_pairs(links, plan.aliases))
            try:
                render = engines.render(plan.pages)
                counts = _write_records(out, spill, plan, repeat.repeated(), render)
                lists = {key: spill.report(key) for key in REPORT_LISTS}
                manifest = {
                    "stage": "extract",
                    "snapshot": name,
                    "snapshot_fingerprint": fingerprint,
                    "params": params,
                    "counts": counts,
                    "outputs": {
                        DOCS_FILE: file_sha256(out / DOCS_FILE),
                        LINKS_FILE: file_sha256(out / LINKS_FILE),
                    },
                }
                _write_manifest(out / MANIFEST_FILE, manifest, lists)
            except OSError as exc:
                raise DrarenaError(f"{out}: cannot write extraction output ({exc})") from None
    except sqlite3.Error as exc:
        raise DrarenaError(
            f"{out}: extraction's working file {spill.path.name} failed ({one_line(exc)})"
        ) from None
    if cache is not None:
        cache.clear()  # docs.jsonl is in place: the finished shards are no longer needed
    return _result(out, manifest, up_to_date=False)


class _Engines:
    """What extracts pass two's pages and renders their records: this process, a local pool
    of `workers` processes, or Ray tasks over the shard `cache` (the ray engine: one Ray
    session for both steps, started on first use and shut down when the block ends)."""

    def __init__(
        self, params: dict[str, Any], cache: ShardCache | None, options: ExtractOptions
    ) -> None:
        self.workers = max(
            1, options.workers if options.workers is not None else (os.cpu_count() or 1)
        )
        self.params = params
        self.cache = cache
        self.options = options
        self._stack = ExitStack()
        self._ray: Any = None

    def __enter__(self) -> _Engines:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def ray(self) -> Any:
        if self._ray is None:
            from drarena import rayrun

            session = rayrun.session(self.options.address, self.workers)
            self._ray = self._stack.enter_context(session)
        return self._ray

    def cpus(self) -> int:
        return max(1, int(self.ray().cluster_resources().get("CPU", self.workers)))

    def extract(self, total: int) -> Engine:
        def run(jobs: Iterable[Job]) -> Iterator[PageExtract]:
            if self.cache is not None:
                return self._extract_on_ray(jobs, total)
            return iter_extraction(jobs, self.workers, self.options.progress, total=total)

        return run

    def _extract_on_ray(self, jobs: Iterable[Job], total: int) -> Iterator[PageExtract]:
        """The jobs in shards over Ray tasks, with the shard cache in the snapshot (see
        corpus.shards); results stream back shard by shard, in order."""
        from drarena import rayrun

        assert self.cache is not None
        ray, in_flight = self.ray(), 2 * self.cpus()

        def mapper(fn: Any, shards: Any) -> Any:
            return rayrun.ordered_map(ray, fn, shards, in_flight=in_flight)

        progress = self.options.progress
        run = ShardRun(jobs, mapper, self.params, self.cache, progress=progress, total=total)
        yield from run
        if run.reused and progress:
            reused = f"{run.reused} shard(s) reused from {self.cache.folder}"
            print(f"extract: resumed, {reused}", file=sys.stderr)

    def render(self, pages: int) -> Renderer:
        """Where the records of `pages` pages are rendered: on Ray's workers, on a pool when
        there are workers and enough pages to give them, else here."""

        def run(ctx: RenderContext, chunks: Iterable[list[RenderRow]]) -> Iterator[Rendered]:
            if self.cache is not None:
                from drarena import rayrun

                ray, in_flight = self.ray(), 2 * self.cpus()
                shared = (ray.put(ctx),)
                return rayrun.ordered_map(
                    ray, render_pages, chunks, in_flight=in_flight, args=shared
                )
            if self.workers > 1 and pages >= 2 * RENDER_PAGES:
                return _render_on_pool(ctx, chunks, self.workers)
            return (render_pages(ctx, chunk) for chunk in chunks)

        return run


_CONTEXT: list[RenderContext] = []  # a pool worker's, set once by its initializer


def _set_context(ctx: RenderContext) -> None:
    _CONTEXT[:] = [ctx]


def _render_chunk(rows: list[RenderRow]) -> Rendered:
    return render_pages(_CONTEXT[0], rows)


def _render_on_pool(
    ctx: RenderContext, chunks: Iterable[list[RenderRow]], workers: int
) -> Iterator[Rendered]:
    """render_pages over the chunks on `workers` processes, in order, at most 2 chunks a
    worker read ahead; the context goes to each worker once, not with every chunk."""
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_pool_context(),
        initializer=_set_context,
        initargs=(ctx,),
    )
    with pool:
        pending: deque[Future[Rendered]] = deque()
        feed = iter(chunks)
        while True:
            while len(pending) < 2 * workers and (chunk := next(feed, None)) is not None:
                pending.append(pool.submit(_render_chunk, chunk))
            if not pending:
                return
            yield pending.popleft().result()


class _Passes:
    """A snapshot's responses, read afresh from its WARC files on each iteration (extraction
    reads them twice, never holding them)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def __iter__(self) -> Iterator[ResponseLike]:
        return self.snap.iter_responses()


def extract_snapshot(
    snapshot_dir: Path,
    workers: int | None = None,
    force: bool = False,
    progress: bool = True,
    max_page_bytes: int = MAX_PAGE_BYTES,
    engine: str = "local",
    address: str | None = None,
) -> ExtractResult:
    """Extract a snapshot in place (docs.jsonl, links.jsonl, extract-manifest.json next to its
    WARC files). Does nothing when the outputs match the snapshot fingerprint."""
    from drarena.web.warc.snapshot import Snapshot

    # lookups=False: extraction only iterates, so the CDXJ index is checked, not kept
    with Snapshot.open(Path(snapshot_dir), lookups=False) as snap:
        # Extraction reads at most max_page_bytes of a body (and flags the page truncated past
        # it): decoding further would only hold memory, up to the snapshot's cap for each
        # body in flight. The output is the same; many bombs cost what as many honest pages
        # of max_page_bytes do.
        snap.decode_limit = min(snap.decode_limit, max_page_bytes + 1)
        return extract_responses(
            _Passes(snap),
            Path(snap.path),
            name=snap.name,
            fingerprint=snap.fingerprint,
            decode_limit=snap.decode_limit,
            options=ExtractOptions(
                workers=workers,
                force=force,
                progress=progress,
                max_page_bytes=max_page_bytes,
                engine=engine,
                address=address,
            ),
        )


def _iter_jsonl(
    path: Path, what: str, seen: Callable[[bytes], object] | None = None
) -> Iterator[tuple[int, int, int, Any]]:
    """(line number, byte offset, byte length, parsed JSON) of each line of a JSON-lines file;
    `seen` is given every line's bytes, newline included, before it is parsed."""
    if not path.is_file():
        raise DrarenaError(f"{path} not found: run `drarena snapshot extract {path.parent}` first")
    offset = 0
    with open_input(path) as fh:  # bytes: a line that is not UTF-8 is named by its number
        for lineno, line in enumerate(iter(lambda: fh.readline(MAX_JSONL_LINE + 1), b""), 1):
            if len(line) > MAX_JSONL_LINE:  # a file of zeros, or no newlines: never read whole
                raise DrarenaError(f"{path}:{lineno}: line longer than {MAX_JSONL_LINE} bytes")
            if seen is not None:
                seen(line)
            yield lineno, offset, len(line), _parse_line(line, f"{path}:{lineno}", what)
            offset += len(line)


def _parse_line(line: bytes, where: str, what: str) -> Any:
    try:
        text = line.decode("utf-8")
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        # RecursionError: valid JSON nested deeper than Python's recursion limit
        raise DrarenaError(f"{where}: not a JSON {what} line ({one_line(exc)})") from None
    if lone_surrogate(text, data):
        raise DrarenaError(f"{where}: not a JSON {what} line (lone surrogate in a string)")
    return data


def _doc_record(data: Any, where: str) -> Doc:
    try:
        return Doc.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise DrarenaError(f"{where}: bad doc record ({one_line(exc)})") from None


def load_docs(snapshot_dir: Path) -> list[Doc]:
    """Every page of docs.jsonl, flags included (filter on `Doc.is_content` for unique
    pages with real text)."""
    return [doc for _, _, doc in doc_lines(snapshot_dir)]


def doc_lines(
    snapshot_dir: Path, seen: Callable[[bytes], object] | None = None
) -> Iterator[tuple[int, int, Doc]]:
    """(byte offset, byte length with the newline, page) of each line of docs.jsonl, checked
    as load_docs checks them, one page in memory at a time: for readers that keep only where
    each page lies and read it again when asked (search.docstore, parse_doc_line). `seen` is
    given each line's bytes (a hash of exactly the bytes read: search.doctables)."""
    path = Path(snapshot_dir) / DOCS_FILE
    for lineno, offset, length, data in _iter_jsonl(path, "doc", seen):
        yield offset, length, _doc_record(data, f"{path}:{lineno}")


def parse_doc_line(line: bytes, where: str) -> Doc:
    """One docs.jsonl line read back (doc_lines said where it lies), checked as load_docs
    checks it; `where` names it in an error (`PATH at byte N`)."""
    return _doc_record(_parse_line(line, where, "doc"), where)


def load_links(snapshot_dir: Path) -> list[Link]:
    path = Path(snapshot_dir) / LINKS_FILE
    links = []
    for lineno, _, _, data in _iter_jsonl(path, "link"):
        try:
            links.append(Link.from_dict(data))
        except (TypeError, ValueError) as exc:
            raise DrarenaError(f"{path}:{lineno}: bad link record ({one_line(exc)})") from None
    return links
