"""Dense retrieval: sentence-transformers embeddings searched with FAISS."""

from __future__ import annotations

import struct
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search import ann, embed
from drarena.search.base import SearchData, check_k, parse_args, search_pages
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText, clean_query
from drarena.search.lines import LineList
from drarena.search.manifest import DenseManifest, IndexLayout, require_fresh

# Every FAISS index file starts with its type (fourcc), dimension and vector count.
FAISS_HEADER = struct.Struct("<4siq")
FAISS_ROOM = 4096  # header and small fields past the vectors (a flat index has 45 bytes)


def check_faiss_file(path: Path, manifest: DenseManifest, hint: str) -> None:
    """The index file must be as large as the vectors its manifest counts, and its header
    must claim those vectors.

    Why: faiss.read_index allocates what the file's header claims before reading a byte of
    it (a 109-byte file claiming 699,050 vectors took 1.1 GB, then a C++ error); the manifest
    drarena wrote bounds what a sound file holds. An HNSW graph holds about 270 bytes a vector
    at M=32 (2M level-0 neighbours plus offsets and levels): 16 M + 16 bounds it."""
    count, dim = manifest.passage_count, manifest.dimension
    least = count * dim * (1 if manifest.faiss == "ivf-sq8" else 4)  # SQ8: a byte a dimension
    most = (
        least
        + FAISS_ROOM
        + ann.file_bounds(manifest.faiss, count, dim, manifest.ivf_nlist, manifest.hnsw_m)
    )
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(FAISS_HEADER.size)
    except OSError as exc:
        raise DrarenaError(f"{path}: cannot read the FAISS index ({exc.strerror})") from None
    claims = FAISS_HEADER.unpack(head)[1:] if len(head) == FAISS_HEADER.size else None
    if not least <= size <= most or claims != (dim, count):
        raise DrarenaError(
            f"{path}: damaged FAISS index ({size:,} bytes; manifest.json counts {count:,} "
            f"vectors of {dim} dimensions, {least:,} to {most:,} bytes); rebuild it with {hint}"
        )


def plan_of(manifest: DenseManifest) -> ann.IndexPlan:
    """The index plan a manifest records (what `ann.open_index` sets before searching)."""
    return ann.IndexPlan(
        manifest.faiss,
        nlist=manifest.ivf_nlist,
        nprobe=manifest.ivf_nprobe,
        hnsw_m=manifest.hnsw_m,
        ef_search=manifest.hnsw_ef_search,
        seed=manifest.train_seed or 0,
    )


class DenseArgs(BaseModel):
    """Which embedder's index to search (it must have been built by `drarena search index`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(default=embed.DEFAULT_MODEL, description="model name or local folder")
    depth: int = Field(default=50, ge=1, le=10000, description="passages fetched before MaxP")


class DenseRetriever:
    """Cosine similarity between the query and passage embeddings; pages by best passage."""

    name = "dense"

    def __init__(self, snapshot_dir: Path, index_root: Path, args: DenseArgs) -> None:

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
        hint = layout.rebuild_hint("--force")
        check_faiss_file(folder / "index", self.manifest, hint)
        try:
            self._index = ann.open_index(folder / "index", plan_of(self.manifest))
            # the ids memory-mapped, 8 bytes a passage held (a list of strings was ~80)
            self._ids = LineList(folder / "docid", "dense index's passage ids")
        except (RuntimeError, MemoryError, OSError, ValueError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            raise DrarenaError(
                f"{folder}: unreadable dense index ({first[:200]}); rebuild it with {hint}"
            ) from None
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
