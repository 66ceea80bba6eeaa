"""Index folders and their manifests: what each index was built from, and whether it is stale.

Why: an index answers for one exact docs.jsonl of one exact snapshot. Its manifest records
the snapshot fingerprint, the docs.jsonl digest and the passage settings; a build whose
inputs are unchanged does nothing, and a retriever refuses an index built from other bytes
with an error naming the command that rebuilds it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.files import read_bounded, write_atomic
from drarena.search.docstore import docs_file, snapshot_fingerprint
from drarena.search.passages import PassageSettings
from drarena.search.stamps import verified_sha256

MANIFEST = "manifest.json"
# An index folder may be copied from someone else or damaged, so its manifest is read bounded.
# Why 64 MiB: a manifest holds a fixed set of fields (digests, settings, counts), under 2 KB
# whatever the crawl's size (1 million pages change only the numbers), so the limit only has
# to be far above that: the project's bound for small files.
MAX_MANIFEST_BYTES = 64 << 20
M = TypeVar("M", bound="SourceState")


class SourceState(BaseModel):
    """The inputs of an index: equal states mean an up-to-date index."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    snapshot: str = Field(description="snapshot folder name")
    snapshot_fingerprint: str | None = Field(description="from the snapshot's manifest.json")
    docs_sha256: str = Field(description="sha256 of docs.jsonl")
    passages: PassageSettings = Field(description="how pages were cut into passages")

    def same_source(self, other: SourceState) -> bool:
        keys = ("snapshot_fingerprint", "docs_sha256", "passages")
        return all(getattr(self, k) == getattr(other, k) for k in keys)


class PassagesManifest(SourceState):
    kind: Literal["passages"] = "passages"
    doc_count: int
    passage_count: int
    passages_sha256: str
    offsets_sha256: str | None = Field(
        default=None,
        description="sha256 of offsets.npy, the passages' byte offsets by id (None: passages "
        "built before the file existed, which a retriever asks to rebuild)",
    )
    drarena_version: str = __version__


class Bm25Manifest(SourceState):
    kind: Literal["bm25"] = "bm25"
    doc_count: int
    passage_count: int
    analyzer: str = Field(default="anserini default English: Porter stemming, Lucene stopwords")
    drarena_version: str = __version__


class DenseManifest(SourceState):
    kind: Literal["dense"] = "dense"
    doc_count: int
    passage_count: int
    passages_per_doc: int | None = Field(description="first passages of each page; None: all")
    model: str = Field(description="model name or path as given")
    model_path: str
    dimension: int
    max_tokens: int = Field(description="word pieces read per passage and query")
    max_tokens_arg: int | None = Field(description="the limit asked for (None: the model's)")
    precision: Literal["fp32", "bf16", "int8"]
    backend: str = Field(
        default="sentence-transformers on torch",
        description="what encoded the passages (and must encode queries)",
    )
    faiss: Literal["flat", "hnsw", "ivf-sq8"] = Field(
        description="flat below the threshold (search.ann.FLAT_MAX), approximate above"
    )
    hnsw_m: int | None = None
    hnsw_ef_search: int | None = None
    ivf_nlist: int | None = None
    ivf_nprobe: int | None = Field(default=None, description="lists read per query (tuned)")
    train_seed: int | None = Field(default=None, description="seed of k-means and its sample")
    train_size: int | None = Field(default=None, description="vectors k-means trained on")
    train_rows_sha256: str | None = Field(
        default=None, description="sha256 of the sampled row numbers, comma-joined"
    )
    recall_at_10: float | None = Field(
        default=None, description="against exact search on the diagnostic queries (None: flat)"
    )
    recall_floor: float | None = None
    recall_queries: int | None = Field(default=None, description="diagnostic queries used")
    recall_queries_sha256: str | None = Field(
        default=None, description="sha256 of the diagnostic query texts, newline-joined"
    )
    metric: str = "inner product on unit vectors (cosine)"
    drarena_version: str = __version__


class IndexLayout:
    """index/<name>/{passages,bm25,dense-<model>}/ for one snapshot, and beside them
    doctables/ (the DocStore's tables: search.doctables) and the stamps of the files last
    hashed (search.stamps)."""

    def __init__(self, index_root: Path, snapshot_dir: Path) -> None:
        self.snapshot_dir = snapshot_dir
        self.root = Path(index_root) / snapshot_dir.name
        self.passages = self.root / "passages"
        self.bm25 = self.root / "bm25"
        self.doctables = self.root / "doctables"

    def dense(self, slug: str) -> Path:
        return self.root / f"dense-{slug}"

    def rebuild_hint(self, *options: str) -> str:
        root = self.root.parent
        option = "" if root == Path("index") else f" --index-root {root}"
        extra = "".join(f" {o}" for o in options)
        return f"`drarena search index {self.snapshot_dir}{option}{extra}`"


def current_state(
    snapshot_dir: Path, settings: PassageSettings, stamps: Path | None = None
) -> SourceState:
    """The snapshot's inputs as they are now; docs.jsonl's sha256 taken from the stamps in
    folder `stamps` when its stat is unchanged (search.stamps; None: hashed)."""
    return SourceState(
        snapshot=snapshot_dir.name,
        snapshot_fingerprint=snapshot_fingerprint(snapshot_dir),
        docs_sha256=verified_sha256(docs_file(snapshot_dir), stamps),
        passages=settings,
    )


def read_manifest(folder: Path, model: type[M], strict: bool = True) -> M | None:
    """The manifest in folder; None when absent, or (strict=False) unreadable: a build then
    starts over, while a retriever reports the problem."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        raw = read_bounded(path, MAX_MANIFEST_BYTES, what="index manifest")
        return model.model_validate_json(raw.decode("utf-8"))
    except DrarenaError:  # larger than the limit, or unreadable: one line naming the file
        if not strict:
            return None
        raise
    except ValueError as exc:  # ValueError: not UTF-8; ValidationError is one
        if not strict:
            return None
        first = str(exc).splitlines()[0]
        raise DrarenaError(f"{path}: unreadable index manifest ({first})") from None


def write_manifest(folder: Path, manifest: BaseModel) -> None:
    data = json.loads(manifest.model_dump_json())
    write_atomic(folder / MANIFEST, json.dumps(data, indent=2, sort_keys=True) + "\n")


def require_fresh(
    folder: Path, model: type[M], snapshot_dir: Path, layout: IndexLayout, what: str
) -> M:
    """The manifest of an index that matches the snapshot as it is now, else a clear error.
    docs.jsonl is hashed unless the index folder's stamps say it is unchanged since it was
    (search.stamps): an edited or replaced docs.jsonl is hashed, and refused, as before."""
    manifest = read_manifest(folder, model)
    if manifest is None:
        raise DrarenaError(f"no {what} index at {folder}: build it with {layout.rebuild_hint()}")
    now = current_state(snapshot_dir, manifest.passages, layout.root)
    if manifest.snapshot_fingerprint != now.snapshot_fingerprint:
        raise DrarenaError(
            f"{what} index {folder} is stale: built from snapshot fingerprint "
            f"{_short(manifest.snapshot_fingerprint)}, the snapshot is now "
            f"{_short(now.snapshot_fingerprint)}; rebuild it with {layout.rebuild_hint()}"
        )
    if manifest.docs_sha256 != now.docs_sha256:
        raise DrarenaError(
            f"{what} index {folder} is stale: {snapshot_dir / 'docs.jsonl'} changed since it "
            f"was built; rebuild it with {layout.rebuild_hint()}"
        )
    return manifest


def replace_folder(tmp: Path, final: Path) -> None:
    """Swap a freshly built folder in place of the old one (the old one goes last). A
    `<final>.old` already there is an earlier swap cut short, and deleted, only when it holds
    an index manifest as every folder drarena builds does: any other is someone else's."""
    old = final.with_name(final.name + ".old")
    if old.exists() or old.is_symlink():
        if old.is_symlink() or not old.is_dir() or not (old / "manifest.json").is_file():
            raise DrarenaError(
                f"{old}: in the way of the new {final.name} and not a folder drarena built "
                "(no manifest.json); move it aside"
            )
        shutil.rmtree(old)
    if final.exists() or final.is_symlink():
        final.rename(old)
    tmp.rename(final)
    if old.is_symlink():  # a link in the index's place (a received folder): the link goes,
        old.unlink()  # its target stays
    elif old.exists():
        shutil.rmtree(old)


def _short(value: str | None) -> str:
    return value[:12] if value else "none"
