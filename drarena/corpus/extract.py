"""`drarena snapshot extract`: a snapshot's HTML pages -> docs.jsonl and links.jsonl.

Why here and not in the search stage: trees and both indexes must see the very same text, so
text is extracted once, from the WARC bytes, and every downstream file carries the record id
and payload digest it came from. The latest capture per canonical URL wins; redirects become
aliases of their final page; duplicate, near-empty, unparsable and truncated pages stay in
docs.jsonl with flags and are listed in extract-manifest.json, never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from drarena.corpus.navlinks import RepeatRule, normalize_anchor, repeated_pairs
from drarena.corpus.page import MAX_PAGE_BYTES, PageExtract, extract_page, is_text_page
from drarena.corpus.records import Doc, Link
from drarena.digests import file_sha256
from drarena.errors import DrarenaError, one_line
from drarena.files import atomic_output, open_input, read_bounded
from drarena.records import lone_surrogate
from drarena.web.urls import canonicalize_url

EXTRACT_VERSION = 3  # bump when output for the same bytes changes
NEAR_EMPTY_CHARS = 200
MAX_REDIRECT_HOPS = 10
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
    """What extraction needs of drarena.web.snapshot.StoredResponse."""

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


def doc_id(canonical_url: str) -> str:
    """Stable id of a page: the first 16 hex digits of sha256 of its canonical URL."""
    return hashlib.sha256(canonical_url.encode("utf-8")).hexdigest()[:16]


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


def select_pages(responses: Iterable[ResponseLike]) -> Selection:
    """Latest capture per canonical URL (WARC date, then WARC order); redirects resolved."""
    latest: dict[str, ResponseLike] = {}
    sel = Selection()
    for response in responses:
        sel.responses += 1
        key = response.canonical_url
        old = latest.get(key)
        if old is not None:
            sel.skipped["older_capture"] += 1
            if old.warc_date > response.warc_date:
                continue
        latest[key] = response
    redirects: dict[str, str] = {}
    for key in sorted(latest):
        response = latest[key]
        if 300 <= response.status < 400 and response.location:
            try:
                redirects[key] = canonicalize_url(response.location)
            except ValueError:
                sel.skipped["bad_redirect"] += 1
        elif 200 <= response.status < 300:
            if is_html(response) or is_text_page(response.content_type):
                sel.pages.append(response)
            else:
                kind = response.content_type.split(";")[0].strip().lower() or "unknown"
                sel.skipped[f"non_html:{kind}"] += 1
        else:
            sel.skipped[f"status:{response.status}"] += 1
    page_urls = {p.canonical_url for p in sel.pages}
    for start in sorted(redirects):
        url, seen = start, {start}
        for _ in range(MAX_REDIRECT_HOPS):
            url = redirects.get(url, url)
            if url not in redirects or url in seen:
                break
            seen.add(url)
        if url in page_urls:
            sel.aliases[start] = url
        else:
            sel.skipped["redirect_unresolved"] += 1
    return sel


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
    from tqdm import tqdm

    bar = tqdm(
        total=len(jobs),
        desc="extract",
        unit="page",
        file=sys.stderr,
        disable=not progress,
        mininterval=0.5,
    )
    results: list[PageExtract] = []
    with bar:
        if workers <= 1 or len(jobs) < 2:
            for job in jobs:
                results.append(extract_job(job))
                bar.update()
            return results
        chunk = max(1, min(8, len(jobs) // (workers * 4)))
        with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
            for page in pool.map(extract_job, jobs, chunksize=chunk):
                results.append(page)
                bar.update()
    return results


def build_records(
    sel: Selection, pages: Sequence[PageExtract], rule: RepeatRule | None = None
) -> tuple[list[Doc], list[Link], dict[str, Any]]:
    """Docs with quality flags, links with navigation and in-snapshot flags, and the report."""
    rule = rule or RepeatRule()
    aliases_of: dict[str, list[str]] = {}
    for alias, final in sel.aliases.items():
        aliases_of.setdefault(final, []).append(alias)
    ids = {p.canonical_url: doc_id(p.canonical_url) for p in sel.pages}
    docs: list[Doc] = []
    first_by_digest: dict[str, str] = {}
    report: dict[str, Any] = {
        "near_empty": [],
        "duplicates": [],
        "unparsable": [],
        "fallback_text": [],
        "truncated": [],
    }
    for response, page in zip(sel.pages, pages, strict=True):
        digest = text_digest(page.text)
        near_empty = len(page.text) < NEAR_EMPTY_CHARS
        dup = None if near_empty else first_by_digest.setdefault(digest, ids[page.url])
        dup = None if dup == ids[page.url] else dup
        docs.append(
            Doc(
                id=ids[page.url],
                url=page.url,
                title=page.title,
                contents=page.text,
                record_id=response.record_id,
                payload_digest=response.payload_digest,
                digest=digest,
                chars=len(page.text),
                link_chars=page.link_chars,
                description=page.description,
                lang=page.lang,
                warc_date=response.warc_date,
                encoding=page.encoding,
                extractor=page.extractor,
                near_empty=near_empty,
                duplicate_of=dup,
                truncated=page.truncated or response.truncated,
                aliases=tuple(sorted(aliases_of.get(page.url, ()))),
            )
        )
        if near_empty:
            report["near_empty"].append(page.url)
        if dup:
            report["duplicates"].append({"url": page.url, "duplicate_of": dup})
        if page.error:
            report["unparsable"].append({"url": page.url, "error": page.error})
        elif page.extractor == "fallback":
            report["fallback_text"].append(page.url)
        if page.truncated or response.truncated:
            report["truncated"].append(page.url)
    repeated = repeated_pairs(
        [
            [(sel.aliases.get(raw.target_url, raw.target_url), raw.anchor) for raw in p.links]
            for p in pages
        ],
        rule,
    )
    links: list[Link] = []
    self_links = sum(p.self_links for p in pages)
    skipped_links: Counter[str] = Counter()
    for page in pages:
        skipped_links.update(page.skipped_links)
        for raw in page.links:
            target_url = sel.aliases.get(raw.target_url, raw.target_url)
            if target_url == page.url:  # a redirect back to the page itself
                self_links += 1
                continue
            repeat = (target_url, normalize_anchor(raw.anchor)) in repeated
            reason = raw.furniture or ("repeated" if repeat else "")
            links.append(
                Link(
                    source=ids[page.url],
                    source_url=page.url,
                    target_url=target_url,
                    target=ids.get(target_url),
                    anchor=raw.anchor,
                    context=raw.context,
                    ordinal=raw.ordinal,
                    in_snapshot=target_url in ids,
                    is_nav=bool(reason),
                    nav_reason=reason,
                    fragment=raw.fragment,
                    in_list=raw.in_list,
                    hint=raw.hint,
                )
            )
    counts = {
        "responses": sel.responses,
        "pages": len(docs),
        "content_pages": sum(d.is_content for d in docs),
        "near_empty": len(report["near_empty"]),
        "duplicates": len(report["duplicates"]),
        "unparsable": len(report["unparsable"]),
        "fallback_text": len(report["fallback_text"]),
        "truncated": len(report["truncated"]),
        "redirect_aliases": len(sel.aliases),
        "links": len(links),
        "nav_links": sum(lk.is_nav for lk in links),
        "in_snapshot_links": sum(lk.in_snapshot for lk in links),
        "content_links_in_snapshot": sum(lk.in_snapshot and not lk.is_nav for lk in links),
        "self_links": self_links,
        "skipped_links": dict(sorted(skipped_links.items())),
        "skipped_responses": dict(sorted(sel.skipped.items())),
    }
    return docs, links, {"counts": counts, **report}


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    """Lines into `path` through files.atomic_output (a unique temporary file, never a link)."""
    with atomic_output(path) as fh:
        for line in lines:
            fh.write(line)
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


def extract_responses(
    responses: Iterable[ResponseLike],
    out: Path,
    *,
    name: str,
    fingerprint: str,
    workers: int | None = None,
    force: bool = False,
    progress: bool = True,
    max_page_bytes: int = MAX_PAGE_BYTES,
    decode_limit: int | None = None,
    engine: str = "local",
    address: str | None = None,
) -> ExtractResult:
    """The stage body over any source of responses; writes into `out`. `decode_limit`: the
    cap the responses' bodies were decoded with (a page cut there is flagged truncated).
    `engine` "ray": pages in shards as Ray tasks (on the cluster at `address`, else a local
    Ray of `workers` CPUs), resumable from the shards a killed run finished (corpus.shards);
    the outputs are the same bytes as the local engine's."""
    from drarena.rayrun import check_engine

    check_engine(engine)
    params = _params(max_page_bytes, decode_limit)
    if not force and (manifest := _up_to_date(out, fingerprint, params)) is not None:
        return _result(out, manifest, up_to_date=True)
    if not os.access(out, os.W_OK):
        raise DrarenaError(f"{out}: folder is not writable; docs.jsonl and links.jsonl go there")
    sel = select_pages(responses)
    jobs = [(r.body, r.canonical_url, full_content_type(r), max_page_bytes) for r in sel.pages]
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    cache = None
    if engine == "ray":
        pages, cache = _extract_on_ray(jobs, out, params, max(1, n_workers), address, progress)
    else:
        pages = run_extraction(jobs, max(1, n_workers), progress=progress)
    del jobs
    docs, links, report = build_records(sel, pages)
    try:
        _write_lines(out / DOCS_FILE, (d.to_json() for d in docs))
        _write_lines(out / LINKS_FILE, (lk.to_json() for lk in links))
        manifest = {
            "stage": "extract",
            "snapshot": name,
            "snapshot_fingerprint": fingerprint,
            "params": params,
            **report,
            "outputs": {
                DOCS_FILE: file_sha256(out / DOCS_FILE),
                LINKS_FILE: file_sha256(out / LINKS_FILE),
            },
        }
        _write_lines(
            out / MANIFEST_FILE,
            [json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False)],
        )
    except OSError as exc:
        raise DrarenaError(f"{out}: cannot write extraction output ({exc})") from None
    if cache is not None:
        cache.clear()  # docs.jsonl is in place: the finished shards are no longer needed
    return _result(out, manifest, up_to_date=False)


def _extract_on_ray(
    jobs: Sequence[Job],
    out: Path,
    params: dict[str, Any],
    workers: int,
    address: str | None,
    progress: bool,
) -> tuple[list[PageExtract], Any]:
    """run_sharded over Ray tasks, with the shard cache in `out` (see corpus.shards)."""
    from drarena import rayrun
    from drarena.corpus.shards import CACHE_DIR, ShardCache, run_sharded

    cache = ShardCache(out / CACHE_DIR)
    with rayrun.session(address, workers) as ray:
        cpus = max(1, int(ray.cluster_resources().get("CPU", workers)))

        def mapper(fn: Any, shards: Any) -> Any:
            return rayrun.ordered_map(ray, fn, shards, in_flight=2 * cpus)

        pages, reused = run_sharded(jobs, mapper, params, cache, progress=progress)
    if reused and progress:
        print(f"extract: resumed, {reused} shard(s) reused from {cache.folder}", file=sys.stderr)
    return pages, cache


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
    from drarena.web.snapshot import Snapshot

    with Snapshot.open(Path(snapshot_dir)) as snap:
        # Extraction reads at most max_page_bytes of a body (and flags the page truncated past
        # it): decoding further would only hold memory, up to the snapshot's cap per page
        # kept for selection. The output is the same; many bombs cost what as many honest
        # pages of max_page_bytes do.
        snap.decode_limit = min(snap.decode_limit, max_page_bytes + 1)
        return extract_responses(
            snap.iter_responses(),
            Path(snap.path),
            name=snap.name,
            fingerprint=snap.fingerprint,
            workers=workers,
            force=force,
            progress=progress,
            max_page_bytes=max_page_bytes,
            decode_limit=snap.decode_limit,
            engine=engine,
            address=address,
        )


def _iter_jsonl(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DrarenaError(f"{path} not found: run `drarena snapshot extract {path.parent}` first")
    with open_input(path) as fh:  # bytes: a line that is not UTF-8 is named by its number
        for lineno, line in enumerate(iter(lambda: fh.readline(MAX_JSONL_LINE + 1), b""), 1):
            if len(line) > MAX_JSONL_LINE:  # a file of zeros, or no newlines: never read whole
                raise DrarenaError(f"{path}:{lineno}: line longer than {MAX_JSONL_LINE} bytes")
            try:
                text = line.decode("utf-8")
                data = json.loads(text)
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
                # RecursionError: valid JSON nested deeper than Python's recursion limit
                raise DrarenaError(
                    f"{path}:{lineno}: not a JSON {what} line ({one_line(exc)})"
                ) from None
            if lone_surrogate(text, data):
                raise DrarenaError(
                    f"{path}:{lineno}: not a JSON {what} line (lone surrogate in a string)"
                )
            yield lineno, data


def load_docs(snapshot_dir: Path) -> list[Doc]:
    """Every page of docs.jsonl, flags included (filter on `Doc.is_content` for unique
    pages with real text)."""
    path = Path(snapshot_dir) / DOCS_FILE
    docs = []
    for lineno, data in _iter_jsonl(path, "doc"):
        try:
            docs.append(Doc.from_dict(data))
        except (TypeError, ValueError) as exc:
            raise DrarenaError(f"{path}:{lineno}: bad doc record ({one_line(exc)})") from None
    return docs


def load_links(snapshot_dir: Path) -> list[Link]:
    path = Path(snapshot_dir) / LINKS_FILE
    links = []
    for lineno, data in _iter_jsonl(path, "link"):
        try:
            links.append(Link.from_dict(data))
        except (TypeError, ValueError) as exc:
            raise DrarenaError(f"{path}:{lineno}: bad link record ({one_line(exc)})") from None
    return links
