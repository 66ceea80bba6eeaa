"""A dense build saves its chunks as it goes and an interrupted one resumes where it stopped.

The unit tests drive search.checkpoint on its own (no model): what is reused, what is thrown
away and what is never touched. The end-to-end test interrupts a real build of the committed
snapshot (`build_dense`, the real encoder) and checks the resumed build encodes only what was
left and gives the index a build without interruption gives.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drarena.errors import DrarenaError
from drarena.search import build, checkpoint, embed
from drarena.search.checkpoint import DenseCheckpoint
from drarena.search.manifest import IndexLayout
from drarena.search.passages import PassageSettings

IDENTITY = {"source": "s", "passages": "p", "precision": "fp32"}
DIM = 4


def _chunk(rows: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((rows, DIM), dtype=np.float32)


def _saved(folder: Path, chunks: list[np.ndarray], identity: dict[str, Any] = IDENTITY) -> None:
    with DenseCheckpoint(folder, identity, chunk=3) as saved:
        assert saved.resume(sum(len(c) for c in chunks), DIM) == []
        for i, vectors in enumerate(chunks):
            saved.save(i, vectors)


def test_saved_chunks_come_back_under_the_same_identity(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    chunks = [_chunk(3, 1), _chunk(3, 2)]
    _saved(folder, chunks)
    with DenseCheckpoint(folder, dict(IDENTITY), chunk=3) as saved:
        back = saved.resume(8, DIM)  # 8 passages: two full chunks saved, the last (2) not
    assert len(back) == 2
    assert all(np.array_equal(a, b) for a, b in zip(back, chunks, strict=True))


def test_a_forced_build_reuses_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(3, 1)])
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        assert saved.resume(6, DIM, reuse=False) == []
    assert not (folder / "chunk-000000.npy").exists()


def test_another_identity_throws_the_chunks_away_and_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(3, 1)])
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    with DenseCheckpoint(folder, {**IDENTITY, "precision": "bf16"}, chunk=3) as saved:
        assert saved.resume(6, DIM) == []
    assert not (folder / "chunk-000000.npy").exists()
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_an_identity_over_the_limit_throws_the_chunks_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """identity.json is read bounded (its size was stat()ed, which a FIFO or a growing file
    does not answer truly): one over MAX_IDENTITY_BYTES is not this build's, like a damaged
    one, so the chunks are encoded again."""
    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(3, 1)])
    assert (folder / checkpoint.IDENTITY_FILE).stat().st_size > 16
    monkeypatch.setattr(checkpoint, "MAX_IDENTITY_BYTES", 16)
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        assert saved.resume(6, DIM) == []
    assert not (folder / "chunk-000000.npy").exists()


def test_reuse_stops_at_the_first_missing_or_bad_chunk(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(3, 1), _chunk(3, 2), _chunk(3, 3), _chunk(3, 4)])
    second = folder / "chunk-000001.npy"
    second.write_bytes(second.read_bytes()[:-5])  # cut short, as by a full disk
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        back = saved.resume(12, DIM)
    assert len(back) == 1
    assert sorted(p.name for p in folder.glob("chunk-*")) == ["chunk-000000.npy"]


def test_a_chunk_of_the_wrong_shape_or_not_an_array_is_not_reused(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(2, 1)])  # 2 rows where a chunk of 3 is due
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        assert saved.resume(6, DIM) == []
    _saved(folder, [_chunk(3, 1)])
    size = (folder / "chunk-000000.npy").stat().st_size
    (folder / "chunk-000000.npy").write_bytes(b"\x93NUMPY garbage".ljust(size, b"x"))
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        assert saved.resume(6, DIM) == []
    (folder / "chunk-000000.npy").write_bytes(b"x" * 10**6)  # too big to be a chunk: not read
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        assert saved.resume(6, DIM) == []


def test_a_chunk_whose_header_claims_a_huge_array_is_not_reused(tmp_path: Path) -> None:
    """np.load allocated the shape a chunk's header claimed before reading any data, so a
    damaged chunk of the right size claiming a terabyte was a MemoryError (or that much
    memory); the header is now checked first and the chunk thrown away."""
    from numpy.lib import format as npy

    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(3, 1), _chunk(3, 2)])
    first = folder / "chunk-000000.npy"
    size = first.stat().st_size
    with first.open("wb") as fh:
        npy.write_array_header_1_0(
            fh, {"descr": "<f4", "fortran_order": False, "shape": (1 << 38, DIM)}
        )
        fh.write(b"\0" * (size - fh.tell()))
    assert first.stat().st_size == size
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        assert saved.resume(6, DIM) == []
    assert not first.exists()


def test_one_build_at_a_time_holds_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    with (
        DenseCheckpoint(folder, IDENTITY),
        pytest.raises(DrarenaError) as err,
        DenseCheckpoint(folder, IDENTITY),
    ):
        pass
    assert str(folder) in str(err.value)
    with DenseCheckpoint(folder, IDENTITY):  # released
        pass


def test_finish_removes_its_own_files_only(tmp_path: Path) -> None:
    folder = tmp_path / "dense-m.partial"
    _saved(folder, [_chunk(3, 1)])
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        saved.finish()
    assert not folder.exists()
    _saved(folder, [_chunk(3, 1)])
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    with DenseCheckpoint(folder, IDENTITY, chunk=3) as saved:
        saved.finish()
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_temporary_folders_of_dead_builds_are_removed_live_ones_kept(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = tmp_path / f"dense-m.tmp-{done.stdout.strip()}"
    live = tmp_path / f"dense-m.tmp-{os.getppid()}"
    other = tmp_path / "dense-other.tmp-1"
    for folder in (dead, live, other):
        (folder / "sub").mkdir(parents=True)
    fresh = build._tmp_for(tmp_path / "dense-m")
    assert fresh.is_dir() and not any(fresh.iterdir())
    assert not dead.exists()
    assert live.exists() and other.exists()


def test_an_interrupted_build_resumes_and_gives_the_same_index(
    pydocs_extracted: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import faiss

    monkeypatch.setattr(checkpoint, "CHUNK_PASSAGES", 64)
    real_encode = embed.encode
    calls: list[int] = []

    def counted(encoder: Any, texts: list[str], *args: Any, **kwargs: Any) -> np.ndarray:
        calls.append(len(texts))
        if len(calls) == 3 and stop_at_third:
            raise KeyboardInterrupt  # as Ctrl-C during the third chunk
        return real_encode(encoder, texts, *args, **kwargs)

    monkeypatch.setattr(embed, "encode", counted)

    def layout_at(root: Path) -> tuple[IndexLayout, Any]:
        layout = IndexLayout(root, pydocs_extracted)
        _, state = build.build_passages(layout, PassageSettings())
        return layout, state

    layout, state = layout_at(tmp_path / "index")
    folder = layout.dense(embed.model_slug(embed.DEFAULT_MODEL))
    stop_at_third = True
    with pytest.raises(KeyboardInterrupt):
        build.build_dense(layout, state, build.DenseSettings(per_doc=1))
    partial = folder.with_name(folder.name + ".partial")
    assert sorted(p.name for p in partial.glob("chunk-*")) == [
        "chunk-000000.npy",
        "chunk-000001.npy",
    ]
    assert not folder.exists()
    assert not list(folder.parent.glob(f"{folder.name}.tmp-*"))

    stop_at_third, calls[:] = False, []
    capsys.readouterr()
    result = build.build_dense(layout, state, build.DenseSettings(per_doc=1))
    total = result.count
    assert f"dense: resuming, 128 of {total} passages already encoded" in capsys.readouterr().err
    assert calls == [min(64, total - i) for i in range(128, total, 64)]  # only the rest
    assert not partial.exists()

    other, other_state = layout_at(tmp_path / "fresh")
    calls[:] = []
    build.build_dense(other, other_state, build.DenseSettings(per_doc=1))
    assert len(calls) == math.ceil(total / 64)
    resumed = faiss.read_index(str(folder / "index")).reconstruct_n(0, total)
    fresh_folder = other.dense(embed.model_slug(embed.DEFAULT_MODEL))
    fresh = faiss.read_index(str(fresh_folder / "index")).reconstruct_n(0, total)
    assert (folder / "docid").read_text() == (fresh_folder / "docid").read_text()
    np.testing.assert_allclose(resumed, fresh, atol=1e-5)
