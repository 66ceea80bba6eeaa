"""BM25 over the snapshot's passages with Lucene (Anserini through pyserini).

Lucene's answer crosses into Python in one piece (`lucene.BulkSearcher`): about 1 ms a query
at the depths MaxP needs, ranked exactly as pyserini's `LuceneSearcher` ranks.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search import lucene
from drarena.search.base import SearchData, check_k, parse_args, search_pages
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText, clean_query
from drarena.search.manifest import Bm25Manifest, IndexLayout, require_fresh


class Bm25Args(BaseModel):
    """BM25 parameters: Anserini's defaults for passage retrieval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k1: float = Field(default=0.9, gt=0, description="term frequency saturation")
    b: float = Field(default=0.4, ge=0, le=1, description="length normalization")
    depth: int = Field(default=50, ge=1, le=10000, description="passages fetched before MaxP")


class Bm25Retriever:
    """Lucene BM25 search; pages ranked by their best passage."""

    name = "bm25"

    def __init__(self, snapshot_dir: Path, index_root: Path, args: Bm25Args) -> None:
        layout = IndexLayout(index_root, snapshot_dir)
        self.args = args
        self.manifest = require_fresh(layout.bm25, Bm25Manifest, snapshot_dir, layout, "bm25")
        self.data = SearchData.load(layout)
        self.data.check_settings(self.manifest.passages, layout.bm25, layout)
        try:
            self._searcher = lucene.bulk_searcher(layout.bm25, args.k1, args.b)
        except DrarenaError:
            raise
        except Exception as exc:  # a Java exception through jnius: files missing or damaged
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise DrarenaError(
                f"{layout.bm25}: unreadable Lucene index ({first}); rebuild it with "
                f"{layout.rebuild_hint('--force')}"
            ) from None
        self._lock = threading.Lock()

    def search_passages(self, query: str, depth: int) -> list[tuple[str, float]]:
        """(passage id, score) pairs from Lucene, as pyserini's LuceneSearcher.search gives."""
        with self._lock:
            try:
                return self._searcher.search(query, int(depth))
            except Exception as exc:  # a Java exception through jnius
                raise DrarenaError(f"bm25: Lucene rejected the query ({exc})") from None

    def search(self, query: str, k: int = 10) -> list[Hit]:
        k = check_k(k)
        text = clean_query(query)
        return search_pages(
            self.search_passages,
            text,
            k,
            self.args.depth,
            self.data.passages,
            len(self.data.passages),
        )

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        return self.data.docs.open(url_or_docid, offset, max_chars)


def build(snapshot_dir: Path, index_root: Path, **args: Any) -> Bm25Retriever:
    return Bm25Retriever(Path(snapshot_dir), Path(index_root), parse_args(Bm25Args, args, "bm25"))
