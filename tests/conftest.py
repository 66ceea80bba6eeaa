"""Shared test fixtures: paths to the committed fixture snapshot."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


# --- agents (issue 6): the committed snapshot, extracted and indexed once per session -------
# Shared so any area's end-to-end tests can search the real fixture without re-indexing.


@pytest.fixture(scope="session")
def pydocs_extracted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the committed snapshot with docs.jsonl, links.jsonl and 10 trees (seed 1, as
    `make trees` and tournaments build them) from the real `drarena trees`: a fresh clone has
    none of these derived files, and tests must not write into the repository."""
    import shutil

    from drarena.cli import main

    source = REPO / "snapshots" / "pydocs"
    if not (source / "manifest.json").is_file():
        pytest.fail(f"{source}: the committed fixture snapshot is missing")
    snapshot = tmp_path_factory.mktemp("indexed") / "pydocs"
    snapshot.mkdir()
    for path in source.iterdir():
        if path.name in ("manifest.json", "index.cdxj") or path.name.endswith(".warc.gz"):
            shutil.copy2(path, snapshot / path.name)
    if main(["trees", str(snapshot), "--count", "10", "--seed", "1", "--no-progress"]) != 0:
        pytest.fail("drarena extract/trees failed on the fixture snapshot")
    return snapshot


@pytest.fixture(scope="session")
def pydocs_indexed(pydocs_extracted: Path) -> tuple[Path, Path]:
    """(snapshot copy with docs.jsonl, index root) with BM25 and dense (first passage of
    each page) indexes, built by `drarena index` on a copy so the repository stays clean."""
    from drarena.cli import main

    snapshot = pydocs_extracted
    root = snapshot.parent / "index"
    if main(["index", str(snapshot), "--index-root", str(root), "--dense-per-doc", "1"]) != 0:
        pytest.fail("drarena index failed on the fixture snapshot")
    return snapshot, root


# --- end agents ------------------------------------------------------------------------------


# --- make test-fast: heavy shared fixtures make a test `slow` ---------------------------------
# A test that needs the real snapshot built (extraction, trees, Lucene, the encoder) or the
# model server is an integration test; `make test-fast` (-m "not model and not slow") leaves
# it out without each test having to say so.
HEAVY_FIXTURES = frozenset(
    {"pydocs", "pydocs_extracted", "pydocs_indexed", "model_server", "model_role"}
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


# --- a small disk (issue 38, item 9) -----------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """A factory: `small_disk(free_kib)` is a folder on a 2 MiB tmpfs of its own, filled up to
    about `free_kib` KiB left, so a write past that fails with ENOSPC as on a full disk.
    Mounting needs root (CAP_SYS_ADMIN): without it the test is skipped."""
    import subprocess

    mounts: list[Path] = []

    def make(free_kib: int) -> Path:
        point = tmp_path / f"disk{len(mounts)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(point)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip("cannot mount a small tmpfs here (needs root)")
        mounts.append(point)
        free = os.statvfs(point).f_bavail * os.statvfs(point).f_frsize
        with (point / "filler").open("wb") as f:
            f.write(b"\0" * max(0, free - free_kib * 1024))
        return point

    try:
        yield make
    finally:
        for point in mounts:
            subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)
