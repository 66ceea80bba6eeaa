"""Passages tokenized ahead for the dense index (drarena/search/tokens.py): the same ids,
masks and token types as sentence-transformers' own tokenizer, checked before use, and the
dense build's vectors unchanged by it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drarena.search import embed, tokens
from drarena.search.build import build_dense, build_passages
from drarena.search.manifest import IndexLayout
from drarena.search.passages import PassageSettings

TEXTS = [
    "argparse: parser for command-line options, arguments and sub-commands",
    "x",
    "",
    " ".join(["The asyncio event loop runs tasks, callbacks and network IO."] * 60),
    "Décimal: arithmétique décimale à virgule fixe et flottante",
    "   leading and trailing spaces   ",
    "汉字 and emoji 🐍 in one passage\nwith a newline\tand a tab",
]


def tiny_tokenizer_folder(folder: Path, max_seq_length: int = 8) -> Path:
    """A model folder holding only a word-level tokenizer.json (with [CLS] ... [SEP]) and
    sentence_bert_config.json: enough for TokenizeJob, no model weights."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4, "b": 5, "c": 6}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / tokens.TOKENIZER_FILE))
    (folder / tokens.ST_CONFIG_FILE).write_text(json.dumps({"max_seq_length": max_seq_length}))
    return folder


class ScriptedModel:
    """Stands in for a loaded sentence-transformers model in control-flow tests: its
    tokenizer's backend is whatever `tokenizers` pipeline the test gives it."""

    def __init__(self, backend: Any, pad_token_id: int = 0) -> None:
        self.tokenizer = type(
            "Tok", (), {"backend_tokenizer": backend, "pad_token_id": pad_token_id}
        )()


def padded_reference(
    folder: Path, length: int
) -> tuple[Callable[[list[str]], dict[str, np.ndarray]], Any]:
    """What a sentence-transformers model with this folder's tokenizer would feed: the texts
    through the same pipeline, padded to the longest, as int64 arrays."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / tokens.TOKENIZER_FILE))
    tokenizer.enable_truncation(max_length=length)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def reference(texts: list[str]) -> dict[str, np.ndarray]:
        out = tokenizer.encode_batch(texts)
        return {
            "input_ids": np.array([e.ids for e in out], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in out], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in out], dtype=np.int64),
        }

    return reference, tokenizer


def test_tokens_are_flat_and_pad_like_sentence_transformers(tmp_path: Path) -> None:
    folder = tiny_tokenizer_folder(tmp_path / "model", max_seq_length=5)
    job = tokens.TokenizeJob.start(folder, ["a b", "c c c c c c", "", "b zz a"], None)
    assert job is not None and job.max_length == 5
    reference, backend = padded_reference(folder, 5)
    got, why = job.result(ScriptedModel(backend), 5, reference)
    assert why == "" and got is not None
    assert len(got) == 4 and got.lengths().tolist() == [4, 5, 2, 5]  # [CLS] ... [SEP], cut at 5
    assert got.ids.dtype == np.int32 and got.offsets.tolist() == [0, 4, 9, 11, 16]
    batch = got.batch([1, 0, 2], pad_id=0)
    assert batch["input_ids"].tolist() == [[2, 6, 6, 6, 3], [2, 4, 5, 3, 0], [2, 3, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1] * 5, [1, 1, 1, 1, 0], [1, 1, 0, 0, 0]]
    assert all(a.dtype == np.int64 for a in batch.values())
    want = reference(["c c c c c c", "a b", ""])
    assert all(np.array_equal(batch[name], want[name]) for name in tokens.ONNX_INPUTS)
    # max_tokens below the model's length wins, above it does not
    assert tokens.TokenizeJob.start(folder, ["a"], 3).max_length == 3  # type: ignore[union-attr]
    assert tokens.TokenizeJob.start(folder, ["a"], 64).max_length == 5  # type: ignore[union-attr]


def test_tokens_are_refused_where_they_might_differ(tmp_path: Path) -> None:
    """Each check fails on its own, with its reason; the caller then tokenizes as before."""
    folder = tiny_tokenizer_folder(tmp_path / "model", max_seq_length=8)
    texts = ["a b c", "b", "c a"]
    reference, backend = padded_reference(folder, 8)

    job = tokens.TokenizeJob.start(folder, texts, None)
    assert job is not None
    got, why = job.result(ScriptedModel(backend), 16, reference)
    assert got is None and "says 8 word pieces, the model truncates at 16" in why

    from tokenizers import Tokenizer, normalizers

    other = Tokenizer.from_file(str(folder / tokens.TOKENIZER_FILE))
    other.normalizer = normalizers.Lowercase()  # what a model's tokenizer_config can change
    got, why = tokens.TokenizeJob.start(folder, texts, None).result(  # type: ignore[union-attr]
        ScriptedModel(other), 8, reference
    )
    assert got is None and "tokenizer.json differs from the tokenizer the model loads" in why

    def off_by_one(batch: list[str]) -> dict[str, np.ndarray]:
        out = reference(batch)
        out["input_ids"] = out["input_ids"] + 1
        return out

    got, why = tokens.TokenizeJob.start(folder, texts, None).result(  # type: ignore[union-attr]
        ScriptedModel(backend), 8, off_by_one
    )
    assert got is None and "input_ids differ from sentence-transformers'" in why

    got, why = tokens.TokenizeJob.start(folder, texts, None).result(  # type: ignore[union-attr]
        ScriptedModel(None), 8, reference
    )
    assert got is None and "not a fast (tokenizers) one" in why

    (folder / tokens.TOKENIZER_FILE).write_text("{not json", encoding="utf-8")
    got, why = tokens.TokenizeJob.start(folder, texts, None).result(  # type: ignore[union-attr]
        ScriptedModel(backend), 8, reference
    )
    assert got is None and str(folder / tokens.TOKENIZER_FILE) in why

    (folder / tokens.TOKENIZER_FILE).unlink()
    assert tokens.TokenizeJob.start(folder, texts, None) is None
    (folder / tokens.ST_CONFIG_FILE).write_text("{}")
    assert tokens.configured_max_length(folder) is None


def test_sample_rows_take_the_extremes_and_a_spread() -> None:
    texts = [str(i) * (i % 37 + 1) for i in range(1000)]
    rows = tokens.sample_rows(texts)
    by_length = sorted(range(len(texts)), key=lambda r: (len(texts[r]), r))
    assert set(by_length[:4]) <= set(rows) and set(by_length[-4:]) <= set(rows)
    assert rows == sorted(set(rows)) and 16 <= len(rows) <= 16 + 1 + 8
    assert tokens.sample_rows([]) == [] and tokens.sample_rows(["a"]) == [0]


@pytest.mark.slow
def test_the_model_folders_tokenizer_gives_sentence_transformers_ids() -> None:
    """Every text, one at a time and as one padded batch, at the model's 256 word pieces and
    at 32: the ids, masks and token types sentence-transformers feeds the encoder."""
    encoder = embed.load_encoder(embed.DEFAULT_MODEL)
    folder = embed.model_path(embed.DEFAULT_MODEL)
    for max_tokens, length in ((None, 256), (32, 32)):
        job = tokens.TokenizeJob.start(folder, TEXTS, max_tokens)
        assert job is not None and job.max_length == length

        def reference(batch: list[str], length: int = length) -> dict[str, np.ndarray]:
            default = encoder.max_seq_length
            encoder.max_seq_length = length
            try:
                features = encoder.tokenize(batch)
            finally:
                encoder.max_seq_length = default
            return {n: features[n].numpy().astype(np.int64) for n in tokens.ONNX_INPUTS}

        got, why = job.result(encoder, length, reference)
        assert why == "" and got is not None
        pad = tokens.pad_id_of(encoder)
        for rows in [[r] for r in range(len(TEXTS))] + [list(range(len(TEXTS)))]:
            want = reference([TEXTS[r] for r in rows])
            mine = got.batch(rows, pad)
            for name in tokens.ONNX_INPUTS:
                assert np.array_equal(mine[name], want[name]), (name, rows)
        assert int(got.lengths().max()) == length  # the long text is cut where ST cuts it


@pytest.mark.slow
def test_dense_build_vectors_are_those_of_batch_by_batch_tokenizing(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The build encodes tokens made ahead (no notice on stderr); with the check failing it
    says why and tokenizes batch by batch, as before. One passage a batch, so neither the
    padding nor int8's per-batch activation scales differ: the vectors must be bit for bit
    the same, row for row. int8 on ONNX Runtime runs on every CPU; 32 word pieces keep it
    short."""
    import faiss

    copy = tmp_path / snapshot.name
    shutil.copytree(snapshot, copy)
    layout = IndexLayout(tmp_path / "index", copy)
    _, state = build_passages(layout, PassageSettings())
    kwargs: dict[str, Any] = {"precision": "int8", "per_doc": 1, "max_tokens": 32}
    ahead = build_dense(layout, state, batch_size=1, **kwargs)
    assert "dense: tokenizing batch by batch" not in capsys.readouterr().err
    index = faiss.read_index(str(ahead.path / "index"))
    vectors, ids = index.reconstruct_n(0, index.ntotal), (ahead.path / "docid").read_text()

    def refused(self: Any, job: Any, max_tokens: int | None) -> tuple[None, str]:
        return None, "scripted refusal"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embed.OnnxEncoder, "check_tokens", refused)
        before = build_dense(layout, state, batch_size=1, force=True, **kwargs)
    assert "dense: tokenizing batch by batch (scripted refusal)" in capsys.readouterr().err
    index = faiss.read_index(str(before.path / "index"))
    assert (before.path / "docid").read_text() == ids and index.ntotal == len(ids.split())
    assert np.array_equal(index.reconstruct_n(0, index.ntotal), vectors)
    # batches of 8 (the build's default): the rows stay each passage's own vector
    batched = build_dense(layout, state, batch_size=8, force=True, **kwargs)
    index = faiss.read_index(str(batched.path / "index"))
    eight = index.reconstruct_n(0, index.ntotal)
    assert ((eight @ vectors.T).argmax(axis=1) == np.arange(len(vectors))).all()
