"""Corpus fixtures: the committed pydocs snapshot, extracted once per session into a copy.

Extraction writes next to the WARC files, so it runs on a copy in a temporary folder and the
repository stays untouched.
"""

from __future__ import annotations

import pytest
from corpus_helpers import FIXTURE, copy_snapshot

from drarena.corpus.extract import ExtractResult, extract_snapshot


@pytest.fixture(scope="session")
def pydocs(tmp_path_factory: pytest.TempPathFactory) -> ExtractResult:
    """The committed fixture snapshot, extracted (all cores) into a temporary copy."""
    if not (FIXTURE / "manifest.json").is_file():
        pytest.fail(f"{FIXTURE}: the committed fixture snapshot is missing")
    snap = copy_snapshot(FIXTURE, tmp_path_factory.mktemp("corpus") / "pydocs")
    return extract_snapshot(snap, progress=False)
