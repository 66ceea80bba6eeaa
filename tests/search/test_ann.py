"""Dense index kinds at size (drarena.search.ann): flat below the threshold, a seeded IVF-SQ8
above it, tuned to a recall floor against exact search or refused, opened memory-mapped."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from drarena.errors import DrarenaError
from drarena.search import ann


def _vectors(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    """Unit vectors around 40 centres: neighbours exist, as in real embeddings."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    x = centres[rng.integers(0, 40, n)] + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_plan_follows_the_corpus_size() -> None:
    assert ann.plan_index(99_999).kind == "flat"
    big = ann.plan_index(1_000_000)
    assert big.kind == "ivf-sq8" and big.nlist == 1984 and big.nlist % 64 == 0
    assert ann.plan_index(10, kind="hnsw").kind == "hnsw"
    assert ann.plan_index(10**6, kind="flat").kind == "flat"
    with pytest.raises(DrarenaError, match="expected one of"):
        ann.plan_index(10, kind="pq")


def test_ivf_training_is_seeded_and_recorded(tmp_path: Path) -> None:
    import faiss

    vectors = _vectors(6000)
    plan = ann.plan_index(len(vectors), flat_max=1000)
    digests, samples = [], []
    for run in range(2):
        index, sample = ann.build_index(vectors, plan)
        faiss.write_index(index, str(tmp_path / f"i{run}"))
        digests.append(hashlib.sha256((tmp_path / f"i{run}").read_bytes()).hexdigest())
        samples.append(sample)
    assert digests[0] == digests[1]  # the same bytes from the same vectors and seed
    assert samples[0] == samples[1] and samples[0] is not None
    assert samples[0].size == (plan.nlist or 0) * ann.TRAIN_PER_LIST
    assert samples[0].rows_sha256 == ann.rows_digest(
        ann.train_rows(len(vectors), samples[0].size, plan.seed)
    )
    other, _ = ann.build_index(vectors, ann.IndexPlan("ivf-sq8", nlist=plan.nlist, seed=5))
    faiss.write_index(other, str(tmp_path / "other"))
    assert hashlib.sha256((tmp_path / "other").read_bytes()).hexdigest() != digests[0]


def test_tuned_to_the_floor_or_refused() -> None:
    vectors = _vectors(6000)
    rng = np.random.default_rng(1)
    queries = vectors[rng.integers(0, len(vectors), 100)] + 0.1 * rng.standard_normal(
        (100, 32)
    ).astype(np.float32)
    exact = ann.exact_neighbours(vectors, queries)
    index, _ = ann.build_index(vectors, ann.plan_index(len(vectors), flat_max=1000))
    plan = ann.plan_index(len(vectors), flat_max=1000)
    tuned, got = ann.tune(index, plan, queries, exact, floor=0.9)
    assert got >= 0.9 and (tuned.nprobe or 0) >= (plan.nprobe or 0)
    assert got == ann.recall(index, queries, exact)  # the index is left at the tuned setting
    with pytest.raises(DrarenaError, match=r"recall@10 0\.\d+ .* below the floor 1\.01.*refused"):
        ann.tune(index, plan, queries, exact, floor=1.01)
    flat, _ = ann.build_index(vectors, ann.IndexPlan("flat"))
    assert ann.recall(flat, queries, exact) == 1.0


@pytest.mark.parametrize("kind", ["flat", "ivf-sq8", "hnsw"])
def test_memory_mapped_index_answers_as_the_built_one(kind: str, tmp_path: Path) -> None:
    import faiss

    vectors = _vectors(3000)
    plan = ann.plan_index(len(vectors), flat_max=1000, kind=kind)
    index, _ = ann.build_index(vectors, plan)
    faiss.write_index(index, str(tmp_path / "index"))
    opened = ann.open_index(tmp_path / "index", plan)
    queries = vectors[:20]
    assert np.array_equal(index.search(queries, 10)[1], opened.search(queries, 10)[1])
