"""Passages tokenized ahead, in a thread, while the dense index's encoder is still loading.

Why: building a dense index first imports sentence-transformers and torch, loads the model,
exports the ONNX graph and compiles it (7.5-12 s on 2 cores, measured 1 Dec 2026), mostly on
one core, and only then tokenized each batch on the cores the encoder's streams run on (5.5 s
of CPU for the committed snapshot's 6,856 passages). The model folder's own tokenizer.json,
read by the `tokenizers` library (imported in 0.1 s), tokenizes all passages on the idle core
during that set-up, and the encoder then meets batches sorted by their real length in word
pieces, which pads 2.3% fewer of them than sorting by characters did.

The tokens must be the ones sentence-transformers would have produced, or the vectors would
change. `TokenizeJob.result` checks three things once the model is loaded, and returns None
(the caller tokenizes the usual way) with the reason if any fails:
- the tokenizer's whole configuration (normalizer, pre-tokenizer, vocabulary, post-processor,
  added tokens), as `tokenizers` serializes it, equals that of the model's loaded tokenizer,
  truncation and padding aside; the same pipeline gives the same ids for every text;
- the truncation length equals the one `embed.encode` would set;
- a sample of the texts (the longest, the shortest and some evenly spaced) gives identical
  padded ids, attention masks and token types through sentence-transformers' own `tokenize`,
  which covers what sentence-transformers does around the tokenizer.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from drarena.errors import DrarenaError

TOKENIZER_FILE = "tokenizer.json"
ST_CONFIG_FILE = "sentence_bert_config.json"
CHUNK = 2048  # texts per tokenizer call: the Encoding objects of one call are freed after it
SAMPLE = 16  # evenly spaced texts checked against sentence-transformers, besides the extremes
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclasses.dataclass(frozen=True, slots=True)
class Tokens:
    """Texts' word-piece ids, unpadded, in flat arrays: row r is ids[offsets[r]:offsets[r+1]].

    Why flat: `tokenizers` returns one Encoding object per text with its ids, tokens as
    strings, character offsets and masks; an index may hold millions of passages, and 4 bytes
    a word piece (plus 1 for its token type) is what the encoder needs."""

    ids: np.ndarray  # int32
    type_ids: np.ndarray  # int8
    offsets: np.ndarray  # int64, len(texts) + 1
    max_length: int

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def batch(self, rows: Sequence[int] | np.ndarray, pad_id: int) -> dict[str, np.ndarray]:
        """The encoder's int64 inputs for these rows, padded on the right to the longest, as
        sentence-transformers pads (ids pad_id, mask 0, token type 0)."""
        lengths = self.lengths()
        width = int(max((lengths[r] for r in rows), default=0))
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        types = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            start, end = int(self.offsets[r]), int(self.offsets[r + 1])
            ids[i, : end - start] = self.ids[start:end]
            mask[i, : end - start] = 1
            types[i, : end - start] = self.type_ids[start:end]
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int) -> Tokens:
    """All texts through a `tokenizers.Tokenizer`, truncated to max_length word pieces
    (special tokens included, as transformers truncates), unpadded."""
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()
    lengths = np.zeros(len(texts) + 1, dtype=np.int64)
    ids: list[np.ndarray] = []
    types: list[np.ndarray] = []
    for start in range(0, len(texts), CHUNK):
        for i, encoding in enumerate(tokenizer.encode_batch(list(texts[start : start + CHUNK]))):
            ids.append(np.asarray(encoding.ids, dtype=np.int32))
            types.append(np.asarray(encoding.type_ids, dtype=np.int8))
            lengths[start + i + 1] = len(encoding.ids)
    return Tokens(
        ids=np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32),
        type_ids=np.concatenate(types) if types else np.zeros(0, dtype=np.int8),
        offsets=np.cumsum(lengths),
        max_length=max_length,
    )


def configured_max_length(folder: Path) -> int | None:
    """sentence-transformers' max_seq_length for a model folder (None: not stated there)."""
    try:
        value = json.loads((folder / ST_CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    length = value.get("max_seq_length") if isinstance(value, dict) else None
    return length if isinstance(length, int) and length > 0 else None


def sample_rows(texts: Sequence[str]) -> list[int]:
    """The rows checked against sentence-transformers: the 4 longest and 4 shortest texts by
    characters (truncation and the near-empty case) and SAMPLE evenly spaced ones."""
    by_length = sorted(range(len(texts)), key=lambda r: (len(texts[r]), r))
    step = max(1, len(texts) // SAMPLE)
    picked = set(by_length[:4]) | set(by_length[-4:]) | set(range(0, len(texts), step))
    return sorted(picked)


def _pipeline(tokenizer_json: str) -> dict[str, Any]:
    """A serialized tokenizer without its truncation and padding (set per call)."""
    config = json.loads(tokenizer_json)
    config.pop("truncation", None)
    config.pop("padding", None)
    return dict(config)


class TokenizeJob:
    """Tokenizes texts with a model folder's tokenizer.json in a daemon thread, started at
    construction. `tokenizers` releases the GIL while it works, so the caller's imports run
    beside it."""

    def __init__(self, folder: Path, texts: Sequence[str], max_length: int) -> None:
        self.folder = folder
        self.texts = texts
        self.max_length = max_length
        self._tokens: Tokens | None = None
        self._error: str | None = None
        self._json = ""
        self._thread = threading.Thread(target=self._run, name="drarena-tokenize", daemon=True)
        self._thread.start()

    @classmethod
    def start(
        cls, folder: Path, texts: Sequence[str], max_tokens: int | None
    ) -> TokenizeJob | None:
        """A running job, or None where the folder lacks tokenizer.json or a stated length."""
        configured = configured_max_length(folder)
        if configured is None or not (folder / TOKENIZER_FILE).is_file():
            return None
        length = min(max_tokens, configured) if max_tokens is not None else configured
        return cls(folder, texts, length)

    def _run(self) -> None:
        try:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
            self._json = tokenizer.to_str()
            self._tokens = tokenize(tokenizer, self.texts, self.max_length)
        except Exception as exc:  # tokenizers' own exception types
            self._error = f"{self.folder / TOKENIZER_FILE}: {type(exc).__name__}: {exc}"

    def result(
        self,
        encoder: Any,
        expected_length: int,
        reference: Callable[[list[str]], Mapping[str, np.ndarray]],
    ) -> tuple[Tokens | None, str]:
        """(tokens, "") when they are what the loaded sentence-transformers `encoder` gives,
        else (None, why not). expected_length: the truncation `embed.encode` would set;
        reference: the encoder's own padded int64 inputs for some texts at that length. Waits
        for the thread."""
        self._thread.join()
        if self._error is not None or self._tokens is None:
            return None, self._error or "the tokenizer thread produced nothing"
        if expected_length != self.max_length:
            return None, (
                f"{ST_CONFIG_FILE} says {self.max_length} word pieces, the model truncates at "
                f"{expected_length}"
            )
        backend = getattr(getattr(encoder, "tokenizer", None), "backend_tokenizer", None)
        if backend is None:
            return None, "the model's tokenizer is not a fast (tokenizers) one"
        if _pipeline(backend.to_str()) != _pipeline(self._json):
            return None, f"{TOKENIZER_FILE} differs from the tokenizer the model loads"
        rows = sample_rows(self.texts)
        theirs = reference([self.texts[r] for r in rows])
        ours = self._tokens.batch(rows, pad_id_of(encoder))
        for name in ONNX_INPUTS:
            if theirs[name].shape != ours[name].shape or not np.array_equal(
                theirs[name], ours[name]
            ):
                return None, f"{name} differ from sentence-transformers' on the sampled texts"
        return self._tokens, ""


def pad_id_of(encoder: Any) -> int:
    """The pad token id of a sentence-transformers model's tokenizer."""
    pad = getattr(getattr(encoder, "tokenizer", None), "pad_token_id", None)
    if not isinstance(pad, int):
        raise DrarenaError("dense model: its tokenizer has no pad token")
    return pad
