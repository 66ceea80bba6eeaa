"""Search fixtures: retrievers over the committed snapshot, extracted and indexed once per
session by the shared `pydocs_indexed` fixture (tests/conftest.py) in a temporary copy."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from drarena.search.base import build_retriever


@pytest.fixture(scope="session")
def snapshot(pydocs_indexed: tuple[Path, Path]) -> Path:
    return pydocs_indexed[0]


@pytest.fixture(scope="session")
def index_root(pydocs_indexed: tuple[Path, Path]) -> Path:
    return pydocs_indexed[1]


@pytest.fixture(scope="session")
def bm25(snapshot: Path, index_root: Path) -> Any:
    return build_retriever({"kind": "bm25"}, snapshot, index_root)


@pytest.fixture(scope="session")
def dense(snapshot: Path, index_root: Path) -> Any:
    return build_retriever({"kind": "dense"}, snapshot, index_root)


@pytest.fixture(scope="session")
def hybrid(snapshot: Path, index_root: Path) -> Any:
    return build_retriever({"kind": "hybrid"}, snapshot, index_root)


@pytest.fixture(scope="session")
def bm25_only(pydocs_extracted: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index root with passages and BM25 only, for tests that damage index files (on a
    copy): the minutes a dense build takes buy such tests nothing."""
    from drarena.cli import main

    root = tmp_path_factory.mktemp("bm25only") / "index"
    argv = ["search", "index", str(pydocs_extracted), "--no-dense", "--index-root", str(root)]
    if main(argv) != 0:
        pytest.fail("drarena search index --no-dense failed on the fixture snapshot")
    return root


@pytest.fixture
def index_copy(bm25_only: Path, tmp_path: Path) -> Path:
    """A copy of `bm25_only` this test may damage."""
    copy = tmp_path / "index"
    shutil.copytree(bm25_only, copy)
    return copy
