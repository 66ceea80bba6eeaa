"""Helpers for the corpus tests: the committed fixture snapshot, and small real snapshots
written with the real writer (drarena.web.warc.writer) for bad inputs."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

from drarena.web.warc.manifest import Counts
from drarena.web.warc.writer import Exchange, SnapshotWriter

FIXTURE = Path(__file__).resolve().parents[2] / "snapshots" / "pydocs"
SNAPSHOT_FILES = ("manifest.json", "index.cdxj")


def copy_snapshot(src: Path, dest: Path) -> Path:
    """Copy only the snapshot proper (WARC, CDXJ, manifest), never derived files."""
    dest.mkdir(parents=True)
    for path in src.iterdir():
        if path.name in SNAPSHOT_FILES or path.name.endswith(".warc.gz"):
            shutil.copy2(path, dest / path.name)
    return dest


def fixture_page(url_suffix: str) -> tuple[str, bytes]:
    """(canonical URL, body) of a real page of the committed snapshot."""
    from drarena.web.warc.snapshot import Snapshot

    with Snapshot.open(FIXTURE) as snap:
        for response in snap.iter_responses():
            if response.canonical_url.endswith(url_suffix) and response.status == 200:
                return response.canonical_url, response.body
    raise AssertionError(f"no page ending in {url_suffix} in {FIXTURE}")


Page = tuple[str, int, Sequence[tuple[str, str]], bytes]  # url, status, headers, body


def write_snapshot(folder: Path, pages: Sequence[Page], name: str = "bad") -> Path:
    """A real WARC snapshot of the given exchanges, with a pinned clock and record ids."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ticks = count()
    ids = count()
    writer = SnapshotWriter(
        folder=folder,
        name=name,
        spec={"name": name},
        software={"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
        new_id=lambda: f"<urn:uuid:00000000-0000-0000-0000-{next(ids):012d}>",
    )
    writer.open()
    for url, status, headers, body in pages:
        writer.write_exchange(
            Exchange(
                url=url,
                request_headers=(("User-Agent", "test"),),
                status=status,
                reason="OK" if status == 200 else "X",
                response_headers=tuple(headers),
                entity=body,
            )
        )
    writer.close(complete=True, counts=Counts())
    return folder
