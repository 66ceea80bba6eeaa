"""The int8 ONNX Runtime and bf16 OpenVINO encoders against sentence-transformers fp32, CPU
flag detection, and the precision checks of `drarena index`."""

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


@pytest.mark.slow
@pytest.mark.skipif(not embed.bf16_supported(), reason="no AMX / AVX512-BF16 on this CPU")
def test_bf16_graph_agrees_with_fp32(tmp_path: Path) -> None:
    """The float32 graph compiled by OpenVINO in bfloat16: unit vectors at cosine >= 0.99 to
    fp32 in the input order, over several streams and batches as over one text."""
    encoder = embed.load_encoder(embed.DEFAULT_MODEL)
    path = tmp_path / embed.ONNX_FP32_FILE
    embed.export_fp32(encoder, path)
    bf16 = embed.OnnxEncoder(encoder, path, threads=2, runtime="openvino")
    reference = embed.encode(encoder, TEXTS, "fp32", threads=1)
    vectors = embed.encode(bf16, TEXTS, "bf16", batch_size=2)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    cosine = (vectors * reference).sum(axis=1)
    assert cosine.min() >= 0.99, cosine
    one = embed.encode(bf16, TEXTS[1:2], "bf16", batch_size=2)
    assert float((one * vectors[1]).sum()) >= 0.999
    short = embed.encode(bf16, TEXTS[3:4], "bf16", max_tokens=32)
    assert float((short * vectors[3]).sum()) < 0.999  # truncation changed the input
    assert encoder.max_seq_length == 256
    assert embed.backend_of("bf16").startswith("openvino ")
    loaded = embed.load_graph(embed.DEFAULT_MODEL, tmp_path, "bf16", threads=1)
    assert float((embed.encode(loaded, TEXTS[:1], "bf16") * vectors[0]).sum()) >= 0.999


@pytest.mark.slow
@pytest.mark.skipif(not embed.openvino_available(), reason="onnx is not installed")
def test_exported_graph_uses_plain_attention(tmp_path: Path) -> None:
    """The export writes attention as MatMul -> Softmax -> MatMul (what OpenVINO fuses), not
    SDPA's IsNaN/Where guard, and leaves the torch model on its own attention afterwards."""
    import onnx

    encoder = embed.load_encoder(embed.DEFAULT_MODEL)
    config = encoder[0].auto_model.config
    before = config._attn_implementation
    path = tmp_path / embed.ONNX_FP32_FILE
    embed.export_fp32(encoder, path)
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert "Softmax" in ops and "IsNaN" not in ops, sorted(ops)
    assert config._attn_implementation == before
    if before == "sdpa":  # the graph the check tells apart: SDPA's guard for masked rows
        embed.export_fp32(encoder, tmp_path / "sdpa.onnx", eager_attention=False)
        assert "IsNaN" in {
            node.op_type for node in onnx.load(str(tmp_path / "sdpa.onnx")).graph.node
        }


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
    # bf16 (OpenVINO) only where the CPU does bf16 in hardware; int8 stays opt-in
    assert embed.default_precision({"avx2", "avx512f"}) == "fp32"
    expected = "bf16" if embed.openvino_available() else "fp32"
    assert embed.default_precision({"avx512f", "avx512_bf16"}) == expected
    if not embed.bf16_supported():
        with pytest.raises(DrarenaError, match="AMX or AVX512-BF16"):
            embed.check_precision("bf16")
    for precision in embed.PRECISIONS:
        assert (
            embed.graph_file(precision)
            == {
                "fp32": None,
                "bf16": embed.ONNX_FP32_FILE,
                "int8": embed.ONNX_FILE,
            }[precision]
        )


def test_int8_refuses_models_it_cannot_express() -> None:
    class Transformer:
        pass

    class Pooling:
        pooling_mode_mean_tokens = False
        pooling_mode_cls_token = True

    with pytest.raises(DrarenaError, match="mean Pooling"):
        embed.export_int8([Transformer(), Pooling()], Path("/nonexistent/encoder.onnx"))
    with pytest.raises(DrarenaError, match="mean Pooling"):
        embed.export_fp32([Transformer(), Pooling()], Path("/nonexistent/encoder.onnx"))
