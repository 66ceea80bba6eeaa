"""The int8 ONNX Runtime encoder against sentence-transformers fp32, CPU flag detection, and
the precision checks of `drarena index`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drarena.errors import DrarenaError
from drarena.search import embed

TEXTS = [
    "argparse: parser for command-line options, arguments and sub-commands",
    "sqlite3 DB-API 2.0 interface for SQLite databases. SQLite is a C library that provides a "
    "lightweight disk-based database that doesn't require a separate server process.",
    "x",
    # longer than the model's 256 word pieces: the tokenizer's truncation must be the same
    " ".join(["The asyncio event loop runs tasks, callbacks and network IO."] * 60),
    "Décimal: arithmétique décimale à virgule fixe et flottante",
    "   leading and trailing spaces   ",
]


@pytest.mark.slow
def test_int8_graph_agrees_with_fp32(tmp_path: Path) -> None:
    """Same tokens in, vectors at mean cosine >= 0.99 to fp32 out, row order kept; the graph's
    own normalisation gives unit vectors; max_tokens truncates through the same tokenizer."""
    encoder = embed.load_encoder(embed.DEFAULT_MODEL)
    path = tmp_path / embed.ONNX_FILE
    embed.export_int8(encoder, path)
    int8 = embed.OnnxEncoder(encoder, path, threads=1)
    reference = embed.encode(encoder, TEXTS, "fp32", threads=1)
    vectors = embed.encode(int8, TEXTS, "int8", batch_size=4)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    cosine = (vectors * reference).sum(axis=1)
    # the project's bar is a mean of 0.99; a one-character text drifts most (0.979 measured)
    assert cosine.mean() >= 0.99 and cosine.min() >= 0.97, cosine
    assert (vectors @ reference.T).argmax(axis=1).tolist() == list(range(len(TEXTS)))
    short_ref = embed.encode(encoder, TEXTS[3:4], "fp32", max_tokens=32, threads=1)
    short = embed.encode(int8, TEXTS[3:4], "int8", max_tokens=32)
    assert float((short * short_ref).sum()) >= 0.98
    assert float((short * vectors[3]).sum()) < 0.999  # truncation changed the input
    assert encoder.max_seq_length == embed.max_tokens_of(int8) == 256  # restored after use
    assert embed.backend_of("int8").startswith("onnxruntime ")


def test_bf16_is_detected_from_cpu_flags() -> None:
    assert embed.bf16_supported({"avx2", "amx_bf16", "amx_tile"})
    assert embed.bf16_supported({"avx512f", "avx512_bf16"})
    assert not embed.bf16_supported({"avx2", "fma", "avx512f"})
    assert not embed.bf16_supported(set())
    assert embed.bf16_supported() == bool(embed.cpu_flags() & {"amx_bf16", "avx512_bf16"})


def test_precision_is_checked() -> None:
    assert embed.check_precision("fp32") == "fp32"
    with pytest.raises(DrarenaError, match="choose one of fp32, bf16, int8"):
        embed.check_precision("fp16")
    assert embed.default_precision() == "fp32"  # int8 opt-in until its recall is measured


def test_int8_refuses_models_it_cannot_express() -> None:
    class Transformer:
        pass

    class Pooling:
        pooling_mode_mean_tokens = False
        pooling_mode_cls_token = True

    with pytest.raises(DrarenaError, match="mean Pooling"):
        embed.export_int8([Transformer(), Pooling()], Path("/nonexistent/encoder.onnx"))
