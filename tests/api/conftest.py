"""The API tests' snapshots: a frozen loopback site (tests/arena/arena_live_site.py, whose
directory is put on the path here for the helpers) and a snapshot of imported trees."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "arena"))


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site frozen with the real LiveWeb and extractor, one hand-made tree over it."""
    from arena_live_site import LiveSiteForTests, freeze

    tmp = tmp_path_factory.mktemp("api")
    site = LiveSiteForTests().start()
    try:
        return freeze(site, tmp / "frozen")
    finally:
        site.stop()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot whose trees were imported (`snapshot import-trees`): the examiner-check's
    prepare stage extracts it and leaves the trees as they are (the frozen site's hand-made
    trees would be grown again from its link graph, which roots none)."""
    from reference_trees import write_reference_trees

    from drarena.corpus.papertrees import import_trees

    tmp = tmp_path_factory.mktemp("imported")
    return import_trees(write_reference_trees(tmp / "DR-Arena"), "paper", tmp / "paper").out
