"""One drift run: a snapshot's pages against the live web or a later snapshot.

Why this order: everything that can be refused without the network (missing snapshot, bad
run folder, unknown --url) is checked before the first fetch; the snapshot is extracted
first if it never was (the stage does nothing when up to date), so old and new text come
from the same extractor.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from drarena.drift.pages import PageDiff, judge_page
from drarena.drift.report import SCHEMA_VERSION, DriftReport, SnapshotRef, count_verdicts
from drarena.drift.sources import Fetched, LiveOptions, LiveSource, read_snapshot, to_versions
from drarena.drift.stale import (
    load_run_matches,
    load_snapshot_trees,
    task_impacts,
    tree_impacts,
)
from drarena.errors import DrarenaError
from drarena.web.warc.manifest import Counts
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.writer import Clock, SnapshotWriter, utc_now

LIVE = "live"


@dataclasses.dataclass(frozen=True, slots=True)
class DriftRequest:
    snapshot: Path
    against: str = LIVE  # "live" or the folder of a later snapshot
    live: LiveOptions | None = None  # None: defaults from the snapshot's crawl spec
    run: Path | None = None
    urls: tuple[str, ...] = ()
    limit: int | None = None
    workers: int | None = None
    progress: bool = True
    capture: Path | None = None  # live only: freeze what was fetched into a new snapshot here


def live_defaults(spec: dict[str, Any], **overrides: Any) -> LiveOptions:
    """The politeness the snapshot was crawled with; `overrides` (not None) win."""
    base = LiveOptions(user_agent=str(spec.get("user_agent") or "drarena-drift/0.1"))
    from_spec = {
        "timeout_s": spec.get("timeout_s"),
        "max_bytes": spec.get("max_bytes"),
        "concurrency": spec.get("concurrency"),
        "per_host_concurrency": spec.get("per_host_concurrency"),
        "delay_s": spec.get("per_host_delay_s"),
        "max_redirects": spec.get("max_redirects"),
        "robots": spec.get("robots"),
    }
    values = {k: v for k, v in from_spec.items() if v is not None}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return dataclasses.replace(base, **values)


def _select(docs: Sequence[Any], urls: Sequence[str], limit: int | None, where: Path) -> list[Any]:
    from drarena.web.warc.urls import canonicalize_url

    ordered = sorted(docs, key=lambda d: d.url)
    if urls:
        by_url = {d.url: d for d in ordered}
        picked = []
        for url in urls:
            try:
                key = canonicalize_url(url)
            except ValueError:
                raise DrarenaError(f"--url {url}: not a valid URL") from None
            if key not in by_url:
                raise DrarenaError(f"--url {url}: not a page of {where}/docs.jsonl")
            picked.append(by_url[key])
        ordered = sorted({d.url: d for d in picked}.values(), key=lambda d: d.url)
    return ordered[:limit] if limit is not None else ordered


def check_reachable(fetched: Sequence[Fetched]) -> None:
    """One line when not a single page answered: the origin is down or refused, which says
    nothing about drift."""
    if not fetched or any(not f.failure or f.failure == "robots" for f in fetched):
        return  # something answered (a robots.txt refusal is an answer)
    kinds = Counter(f.failure for f in fetched)
    kind = kinds.most_common(1)[0][0]
    first = next(f for f in fetched if f.failure == kind)
    hint = (
        "; pass --allow-private to fetch non-public addresses" if kind == "private_address" else ""
    )
    raise DrarenaError(
        f"every one of {len(fetched)} pages failed ({kind}: {first.detail}; "
        f"first {first.url}){hint}"
    )


def _capture_writer(
    folder: Path, snap: Snapshot, options: LiveOptions, clock: Clock
) -> SnapshotWriter:
    from drarena import __version__
    from drarena.web.warc.urls import safe_file_name

    if folder.exists() and any(folder.iterdir()):
        raise DrarenaError(f"--capture {folder}: {_what_is_there(folder)}")
    name = safe_file_name(folder.name, "capture snapshot name")
    spec = {
        "kind": "drift-capture",
        "of": snap.name,
        "of_fingerprint": snap.fingerprint,
        "user_agent": options.user_agent,
        "robots": options.robots,
        "allow_private_addresses": options.allow_private,
        "max_bytes": options.max_bytes,
    }  # the capture decodes as the fetch did
    return SnapshotWriter(folder, name, spec, {"drarena": __version__}, clock=clock)


def _what_is_there(folder: Path) -> str:
    """Why a non-empty --capture folder is refused, naming drarena's own captures: an
    interrupted one is left as it was (a snapshot marked incomplete), never replaced."""
    from drarena.web.warc.manifest import load_manifest

    try:
        manifest = load_manifest(folder)
    except DrarenaError:
        return "folder exists and is not empty"
    if manifest.spec.get("kind") != "drift-capture":
        return "folder exists and holds a snapshot; give a new folder"
    if manifest.complete:
        return "holds an earlier drift capture; give a new folder"
    return (
        "holds a drift capture that was interrupted (marked incomplete); delete the folder "
        "or give a new one to capture again"
    )


def _fetch_live(
    request: DriftRequest, snap: Snapshot, urls: list[str], clock: Clock
) -> tuple[list[Fetched], LiveOptions]:
    options = request.live or live_defaults(snap.manifest.spec)
    writer = None
    if request.capture is not None:
        writer = _capture_writer(Path(request.capture), snap, options, clock)
        writer.open()
    complete = False
    try:
        fetched = LiveSource(options, request.progress, writer).fetch(urls)
        complete = True
    finally:
        if writer is not None:
            failed = sum(bool(f.failure) for f in fetched) if complete else 0
            writer.close(
                complete=complete,
                counts=Counts(pages=len(urls) if complete else 0, fetch_errors=failed),
            )
    check_reachable(fetched)
    return fetched, options


def run_drift(request: DriftRequest, clock: Clock = utc_now) -> DriftReport:
    from drarena.corpus.extract import extract_snapshot, load_docs

    folder = Path(request.snapshot)
    with Snapshot.open(folder) as snap, contextlib.ExitStack() as stack:
        matches = (
            load_run_matches(request.run, snap.fingerprint) if request.run is not None else None
        )
        later = None
        if request.against != LIVE:
            if request.capture is not None:
                raise DrarenaError("--capture records a live re-fetch; it needs --against live")
            later = stack.enter_context(Snapshot.open(Path(request.against)))
        extract_snapshot(folder, progress=request.progress)
        docs = _select(load_docs(folder), request.urls, request.limit, folder)
        urls = [d.url for d in docs]
        old = {url: snap.lookup(url) for url in urls}
        if later is None:
            fetched, options = _fetch_live(request, snap, urls, clock)
            against_ref = None
            settings: dict[str, Any] = dataclasses.asdict(options)
            settings["capture"] = str(request.capture) if request.capture else None
        else:
            fetched = read_snapshot(later, urls)
            against_ref = SnapshotRef(later.name, str(later.path), later.fingerprint)
            settings = {}
        versions = to_versions(fetched, old, request.workers, request.progress)
        pages = tuple(judge_page(d.url, d.id, d.title, d.contents, versions[d.url]) for d in docs)
        by_url: dict[str, PageDiff] = {p.url: p for p in pages}
        trees = tuple(tree_impacts(load_snapshot_trees(folder), by_url))
        tasks = None
        if matches is not None and request.run is not None:
            texts = {d.url: d.contents for d in docs}
            tasks = task_impacts(Path(request.run).name, matches, by_url, texts)
        settings.update({"urls": list(request.urls), "limit": request.limit})
        return DriftReport(
            schema_version=SCHEMA_VERSION,
            created=clock().isoformat(timespec="seconds"),
            snapshot=SnapshotRef(snap.name, str(folder), snap.fingerprint),
            against=request.against if later is None else str(later.path),
            against_snapshot=against_ref,
            options=settings,
            counts=count_verdicts(pages),
            pages=pages,
            trees=trees,
            tasks=tasks,
        )
