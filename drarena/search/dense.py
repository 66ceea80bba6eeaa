"""Dense retrieval: sentence-transformers embeddings searched with FAISS."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search import embed
from drarena.search.base import SearchData, check_k, parse_args, search_pages
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText, clean_query
from drarena.search.manifest import DenseManifest, IndexLayout, require_fresh


class DenseArgs(BaseModel):
    """Which embedder's index to search (it must have been built by `drarena search index`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(default=embed.DEFAULT_MODEL, description="model name or local folder")
    depth: int = Field(default=50, ge=1, le=10000, description="passages fetched before MaxP")


class DenseRetriever:
    """Cosine similarity between the query and passage embeddings; pages by best passage."""

    name = "dense"

    def __init__(self, snapshot_dir: Path, index_root: Path, args: DenseArgs) -> None:
        import faiss

        layout = IndexLayout(index_root, snapshot_dir)
        model_path = embed.model_path(args.model)
        folder = layout.dense(embed.model_slug(args.model))
        self.args = args
        self.manifest = require_fresh(folder, DenseManifest, snapshot_dir, layout, "dense")
        if self.manifest.model_path != str(model_path):
            raise DrarenaError(
                f"{folder} was built with model {self.manifest.model_path}, not {args.model}: "
                f"rebuild with `drarena search index {snapshot_dir} --dense-model {args.model}`"
            )
        self.data = SearchData.load(layout)
        self.data.check_settings(self.manifest.passages, folder, layout)
        self._index = faiss.read_index(str(folder / "index"))
        self._ids = (folder / "docid").read_text(encoding="utf-8").splitlines()
        if len(self._ids) != self._index.ntotal:
            raise DrarenaError(
                f"{folder}: docid lists {len(self._ids)} ids, index holds "
                f"{self._index.ntotal} vectors; rebuild with {layout.rebuild_hint()}"
            )
        self._encoder: Any = embed.load_graph(
            args.model, folder, self.manifest.precision, threads=1
        )
        self._lock = threading.Lock()

    def search_passages(self, query: str, depth: int) -> list[tuple[str, float]]:
        with self._lock:
            vector = embed.encode(
                self._encoder,
                [query],
                self.manifest.precision,
                max_tokens=self.manifest.max_tokens,
                threads=1,
            )
            scores, rows = self._index.search(vector, int(depth))
        return [(self._ids[r], float(s)) for s, r in zip(scores[0], rows[0], strict=True) if r >= 0]

    def search(self, query: str, k: int = 10) -> list[Hit]:
        k = check_k(k)
        text = clean_query(query)
        return search_pages(
            self.search_passages, text, k, self.args.depth, self.data.passages, len(self._ids)
        )

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        return self.data.docs.open(url_or_docid, offset, max_chars)


def build(snapshot_dir: Path, index_root: Path, **args: Any) -> DenseRetriever:
    return DenseRetriever(
        Path(snapshot_dir), Path(index_root), parse_args(DenseArgs, args, "dense")
    )
