"""Search fixtures: retrievers over the committed snapshot, extracted and indexed once per
session by the shared `pydocs_indexed` fixture (tests/conftest.py) in a temporary copy."""

from __future__ import annotations

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
