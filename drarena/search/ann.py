"""Which FAISS index a dense index is, how it is trained, how it is checked against exact search
and how it is opened.

Why the type follows the corpus size: a flat index is exact and needs no training, but every
query reads every vector (1M passages of 384 dimensions: 1.5 GB per query, ~0.1 s on one
core). Below FLAT_MAX passages flat is fast enough and stays the choice, so every existing
index and the committed snapshot keep their exact results. From FLAT_MAX up the default is
IVF with 8-bit scalar quantisation (a quarter of flat's memory; a query reads nprobe of nlist
lists), trained with k-means on a seeded sample of the vectors; HNSW stays available
(`kind="hnsw"`), but its graph costs ~270 bytes a vector and builds ~50x slower than IVF
trains on 2 cores.

Why a recall floor: an approximate index that silently loses a tenth of the exact neighbours
changes every tournament that searches it. At build time the search parameter (IVF nprobe,
HNSW efSearch) is raised step by step until recall@10 against exact search on the
diagnostic queries reaches the floor; an index that cannot reach it is refused, not written.

Why memory-mapped loading: a tournament runs several search processes; with the vectors
mapped from the index file (IO_FLAG_MMAP_IFC: flat codes, HNSW storage and IVF lists alike)
they share the page cache instead of each holding a private copy.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from drarena.errors import DrarenaError

FLAT_MAX = 100_000  # passages: flat (exact) below this, approximate from here up
Kind = Literal["flat", "hnsw", "ivf-sq8"]
KINDS: tuple[str, ...] = ("auto", "flat", "hnsw", "ivf-sq8")
DEFAULT_SEED = 0
RECALL_FLOOR = 0.95
RECALL_K = 10
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
EF_LADDER = (64, 128, 256, 512, 1024)
NPROBE_LADDER = (8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
TRAIN_PER_LIST = 40  # k-means points per list (FAISS warns below 39)
KMEANS_ITERATIONS = 20


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """What to build: the kind and its parameters (search parameter set by `tune`)."""

    kind: Kind
    nlist: int | None = None
    nprobe: int | None = None
    hnsw_m: int | None = None
    ef_search: int | None = None
    seed: int = DEFAULT_SEED


@dataclass(frozen=True, slots=True)
class TrainSample:
    """The rows k-means trained on: a seeded sample, recorded so anyone can redo it."""

    seed: int
    size: int
    rows_sha256: str


def plan_index(
    count: int, flat_max: int = FLAT_MAX, kind: str = "auto", seed: int = DEFAULT_SEED
) -> IndexPlan:
    """The index for `count` vectors: flat below flat_max under "auto", else IVF-SQ8 with
    nlist = 2 sqrt(count) (a multiple of 64, at most count / TRAIN_PER_LIST): 2,048 lists at
    1M vectors, trained on 82K of them; k-means cost grows with nlist squared, and a query
    that reads 32 lists of ~500 vectors is already 60x less work than flat."""
    if kind not in KINDS:
        raise DrarenaError(f"dense index kind {kind!r}: expected one of {', '.join(KINDS)}")
    if kind == "flat" or (kind == "auto" and count < flat_max):
        return IndexPlan("flat", seed=seed)
    if kind == "hnsw":
        return IndexPlan("hnsw", hnsw_m=HNSW_M, ef_search=EF_LADDER[0], seed=seed)
    nlist = max(1, min(64 * max(1, round(2 * math.sqrt(count) / 64)), count // TRAIN_PER_LIST))
    return IndexPlan("ivf-sq8", nlist=nlist, nprobe=min(NPROBE_LADDER[0], nlist), seed=seed)


def train_rows(count: int, size: int, seed: int) -> list[int]:
    """A sorted seeded sample of row numbers (all rows when size >= count). random.Random:
    the same rows on every Python version, where numpy's samplers are not promised stable."""
    if size >= count:
        return list(range(count))
    return sorted(random.Random(f"drarena-ann-train:{seed}").sample(range(count), size))


def rows_digest(rows: list[int]) -> str:
    return "sha256:" + hashlib.sha256(",".join(map(str, rows)).encode()).hexdigest()


def build_index(vectors: np.ndarray, plan: IndexPlan) -> tuple[Any, TrainSample | None]:
    """The FAISS index of `vectors` (unit rows, inner product) as planned, with the sample it
    was trained on (None: flat and HNSW need no training)."""
    import faiss

    dim = int(vectors.shape[1])
    if plan.kind == "flat":
        index: Any = faiss.IndexFlatIP(dim)
        index.add(vectors)
        return index, None
    if plan.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, plan.hnsw_m or HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = plan.ef_search or EF_LADDER[0]
        index.add(vectors)
        return index, None
    nlist = plan.nlist or 1
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.cp.seed = plan.seed
    index.cp.niter = KMEANS_ITERATIONS
    index.cp.max_points_per_centroid = TRAIN_PER_LIST  # no second, unseeded subsample
    rows = train_rows(len(vectors), nlist * TRAIN_PER_LIST, plan.seed)
    index.train(np.ascontiguousarray(vectors[rows]))
    step = 65_536
    for start in range(0, len(vectors), step):  # bounded temporaries while encoding codes
        index.add(vectors[start : start + step])
    index.nprobe = plan.nprobe or 1
    return index, TrainSample(plan.seed, len(rows), rows_digest(rows))


def exact_neighbours(vectors: np.ndarray, queries: np.ndarray, k: int = RECALL_K) -> np.ndarray:
    """Exact top-k rows by inner product, without a second copy of the vectors."""
    import faiss

    _, rows = faiss.knn(queries, vectors, k, metric=faiss.METRIC_INNER_PRODUCT)
    return np.asarray(rows)


def recall(index: Any, queries: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of the exact top-k rows the index returns in its own top-k."""
    k = exact.shape[1]
    _, rows = index.search(queries, k)
    hits = sum(len(set(a) & set(b)) for a, b in zip(rows.tolist(), exact.tolist(), strict=True))
    return hits / (len(exact) * k) if len(exact) else 1.0


def set_search(index: Any, plan: IndexPlan) -> None:
    if plan.kind == "ivf-sq8" and plan.nprobe:
        index.nprobe = plan.nprobe
    elif plan.kind == "hnsw" and plan.ef_search:
        index.hnsw.efSearch = plan.ef_search


def tune(
    index: Any,
    plan: IndexPlan,
    queries: np.ndarray,
    exact: np.ndarray,
    floor: float = RECALL_FLOOR,
) -> tuple[IndexPlan, float]:
    """The cheapest search parameter whose recall@k reaches `floor`, and that recall; a
    DrarenaError when even the largest falls short (the index is then not written)."""
    if plan.kind == "flat":
        return plan, 1.0
    if plan.kind == "ivf-sq8":
        nlist = plan.nlist or 1
        tries = [replace(plan, nprobe=n) for n in NPROBE_LADDER if n < nlist] + [
            replace(plan, nprobe=nlist)
        ]
    else:
        tries = [replace(plan, ef_search=ef) for ef in EF_LADDER]
    got = 0.0
    for candidate in tries:
        set_search(index, candidate)
        got = recall(index, queries, exact)
        if got >= floor:
            return candidate, got
    last = tries[-1]
    knob = f"nprobe {last.nprobe}" if plan.kind == "ivf-sq8" else f"efSearch {last.ef_search}"
    raise DrarenaError(
        f"dense index {plan.kind}: recall@{exact.shape[1]} {got:.3f} against exact search on "
        f"{len(queries)} diagnostic queries, below the floor {floor:.2f} even at {knob}; "
        "refused. Build it flat (--dense-index flat) or lower --dense-recall-floor"
    )


def mmap_flags(kind: str) -> int:
    """read_index flags that map the vectors from the file instead of copying them.
    IO_FLAG_MMAP_IFC for every kind: for IVF it maps the lists as they are (no private
    copy: 0 MB of anonymous memory for a 200K-vector index, searched as fast as one read
    whole), where IO_FLAG_MMAP turns them into OnDiskInvertedLists, measured 4-37x slower
    a query (faiss 1.15)."""
    import faiss

    del kind  # the same flag for every kind today; kept for the next kind that differs
    return int(faiss.IO_FLAG_MMAP_IFC)


def open_index(path: Path, plan: IndexPlan) -> Any:
    """The index at `path`, memory-mapped, with the search parameter of its manifest."""
    import faiss

    index = faiss.read_index(str(path), mmap_flags(plan.kind))
    set_search(index, plan)
    return index


def file_bounds(kind: str, count: int, dim: int, nlist: int | None, hnsw_m: int | None) -> int:
    """Bytes past count * dim a sound file of this kind can hold: IVF stores an 8-byte id a
    vector, its centroids and list headers; HNSW about 16 M + 16 bytes a vector of graph."""
    if kind == "ivf-sq8":
        return count * 8 + (nlist or 0) * (dim * 4 + 64)
    if kind == "hnsw":
        return count * (16 * (hnsw_m or HNSW_M) + 16)
    return 0
