"""`drarena search index`: passages, the Lucene BM25 index and the FAISS dense index of a snapshot.

Each stage writes into a temporary folder and swaps it in when complete, so an interrupted
build never leaves a half index behind; a stage whose manifest matches its inputs does nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from drarena.errors import DrarenaError
from drarena.search import ann, checkpoint, embed
from drarena.search.diagnose import clean_title
from drarena.search.docstore import DocStore, docs_file, file_sha256, load_source_docs
from drarena.search.manifest import (
    Bm25Manifest,
    DenseManifest,
    IndexLayout,
    PassagesManifest,
    SourceState,
    current_state,
    read_manifest,
    replace_folder,
    write_manifest,
)
from drarena.search.passages import Passage, PassageSettings, split_docs
from drarena.search.passagestore import (
    OFFSETS_FILE,
    PASSAGES_FILE,
    OffsetsWriter,
    iter_passages,
)
from drarena.search.stamps import verified_sha256

HNSW_THRESHOLD = ann.FLAT_MAX  # the old name: flat below it, approximate from it up
RECALL_FLOOR = ann.RECALL_FLOOR
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
HNSW_EF_SEARCH = 128
BM25_BATCH = 500


@dataclasses.dataclass(frozen=True, slots=True)
class StageResult:
    """What one build stage did: built (with its time) or found up to date."""

    stage: str
    path: Path
    built: bool
    seconds: float
    count: int


def _tmp_for(final: Path) -> Path:
    """A fresh `<final>.tmp-<pid>` folder to build into. Those of builds whose process is gone
    (killed before they could clean up: a dense one holds a ~90 MB exported encoder) are
    deleted first; a live process's are left alone."""
    if final.parent.is_dir():
        for stale in final.parent.glob(f"{final.name}.tmp-*"):
            pid = stale.name.rsplit("-", 1)[1]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
    tmp = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def build_passages(
    layout: IndexLayout, settings: PassageSettings, force: bool = False
) -> tuple[StageResult, SourceState]:
    """Cuts docs.jsonl into passages.jsonl (the JsonCollection both indexes read) and writes
    offsets.npy beside it (each passage's line by id: passagestore.py). Passages built before
    offsets.npy existed (no offsets_sha256 in their manifest) are built again: the same
    passages.jsonl, so the BM25 and dense indexes built from it stay up to date. Then the
    DocStore's tables are kept in doctables/ (search.doctables; left alone when they are of
    this docs.jsonl), so a retriever's first open maps them too."""
    result, state = _passages(layout, settings, force)
    DocStore.from_snapshot(layout.snapshot_dir, layout.doctables, state.docs_sha256)
    return result, state


def _passages(
    layout: IndexLayout, settings: PassageSettings, force: bool
) -> tuple[StageResult, SourceState]:
    state = current_state(layout.snapshot_dir, settings, layout.root)
    old = read_manifest(layout.passages, PassagesManifest, strict=False)
    if (
        old is not None
        and not force
        and old.same_source(state)
        and _same_bytes(layout, PASSAGES_FILE, old.passages_sha256)
        and _same_bytes(layout, OFFSETS_FILE, old.offsets_sha256)
    ):
        return StageResult("passages", layout.passages, False, 0.0, old.passage_count), state
    start = time.perf_counter()
    docs = load_source_docs(layout.snapshot_dir)
    if not any(doc.indexed for doc in docs):
        raise DrarenaError(
            f"{docs_file(layout.snapshot_dir)} holds no pages with text: nothing to index"
        )
    tmp = _tmp_for(layout.passages)
    offsets = OffsetsWriter()
    try:
        with (tmp / PASSAGES_FILE).open("wb") as fh:
            for passage in split_docs(
                tqdm(docs, desc="passages", unit="doc", file=sys.stderr), settings
            ):
                line = (passage.to_json() + "\n").encode("utf-8")
                fh.write(line)
                offsets.add(passage.id, line)
        offsets.write(tmp / OFFSETS_FILE)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    count = len(offsets)
    write_manifest(
        tmp,
        PassagesManifest(
            **state.model_dump(),
            doc_count=sum(d.indexed for d in docs),
            passage_count=count,
            passages_sha256=file_sha256(tmp / PASSAGES_FILE),
            offsets_sha256=file_sha256(tmp / OFFSETS_FILE),
        ),
    )
    replace_folder(tmp, layout.passages)
    return StageResult("passages", layout.passages, True, time.perf_counter() - start, count), state


def _same_bytes(layout: IndexLayout, name: str, sha256: str | None) -> bool:
    """Whether passages/<name> is still the file its manifest recorded (None: none was): one
    read of a file the size of docs.jsonl unless the stamps say it was not written since it
    was last hashed (search.stamps), and a damaged or edited file is rebuilt without --force."""
    path = layout.passages / name
    return sha256 is not None and path.is_file() and verified_sha256(path, layout.root) == sha256


def load_passages(layout: IndexLayout) -> list[Passage]:
    """Every passage in memory: for the index builds, which read them all."""
    return list(iter_passages(layout))


def build_bm25(
    layout: IndexLayout, state: SourceState, force: bool = False, threads: int = 1
) -> StageResult:
    """A Lucene index of the passages through pyserini's Anserini indexer (Porter, BM25).
    threads > 1: Anserini's multi-threaded IndexCollection over the passages cut into
    sharded JSON files (see _index_collection); the same analysis, so the same scores, and
    the searcher breaks ties by passage id, so the same rankings as one thread."""
    old = read_manifest(layout.bm25, Bm25Manifest, strict=False)
    if old is not None and not force and old.same_source(state):
        return StageResult("bm25", layout.bm25, False, 0.0, old.passage_count)
    from drarena.search import lucene

    if threads > 1:
        return _index_collection(layout, state, threads)
    passages = load_passages(layout)
    start = time.perf_counter()
    tmp = _tmp_for(layout.bm25)
    try:
        indexer = lucene.simple_indexer(tmp)
        with tqdm(total=len(passages), desc="bm25", unit="passage", file=sys.stderr) as bar:
            for i in range(0, len(passages), BM25_BATCH):
                batch = passages[i : i + BM25_BATCH]
                indexer.addRawDocuments(
                    [
                        json.dumps({"id": p.id, "contents": p.indexed_text(state.passages)})
                        for p in batch
                    ]
                )
                bar.update(len(batch))
        indexer.close()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_manifest(
        tmp,
        Bm25Manifest(
            **state.model_dump(),
            doc_count=len({p.doc_id for p in passages}),
            passage_count=len(passages),
        ),
    )
    replace_folder(tmp, layout.bm25)
    return StageResult("bm25", layout.bm25, True, time.perf_counter() - start, len(passages))


BM25_SHARD_PASSAGES = 50_000


def _index_collection(layout: IndexLayout, state: SourceState, threads: int) -> StageResult:
    """build_bm25 on `threads` threads: passages.jsonl streamed into JsonCollection shards of
    BM25_SHARD_PASSAGES lines (at least one per thread), then Anserini's IndexCollection in a
    separate JVM (a thread per shard file). Memory stays that of one line here; the shards
    are deleted once the index is in place."""
    import subprocess

    from drarena.search import lucene

    path = layout.passages / PASSAGES_FILE
    if not path.is_file():
        raise DrarenaError(f"{path} is missing: build it with {layout.rebuild_hint()}")
    start = time.perf_counter()
    tmp = _tmp_for(layout.bm25)
    shards = layout.bm25.with_name(f"{layout.bm25.name}.collection-{os.getpid()}")
    shutil.rmtree(shards, ignore_errors=True)
    shards.mkdir(parents=True)
    count, docs = 0, set()
    try:
        total = sum(1 for line in path.open("rb") if line.strip())
        per_shard = max(1, min(BM25_SHARD_PASSAGES, -(-total // threads)))
        out = None
        with path.open("rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                passage = Passage.from_json(line.decode("utf-8"))
                if count % per_shard == 0:
                    if out is not None:
                        out.close()
                    out = (shards / f"part-{count // per_shard:05d}.jsonl").open("w")
                assert out is not None
                text = passage.indexed_text(state.passages)
                out.write(json.dumps({"id": passage.id, "contents": text}) + "\n")
                docs.add(passage.doc_id)
                count += 1
        if out is not None:
            out.close()
        cmd = [
            str(lucene.java_executable()),
            "-cp",
            str(lucene.anserini_jar()),
            "io.anserini.index.IndexCollection",
            "-collection",
            "JsonCollection",
            "-generator",
            "DefaultLuceneDocumentGenerator",
            "-input",
            str(shards),
            "-index",
            str(tmp),
            "-threads",
            str(threads),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            detail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise DrarenaError(f"Anserini IndexCollection failed on {shards}: {detail[:300]}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(shards, ignore_errors=True)
    write_manifest(
        tmp, Bm25Manifest(**state.model_dump(), doc_count=len(docs), passage_count=count)
    )
    replace_folder(tmp, layout.bm25)
    return StageResult("bm25", layout.bm25, True, time.perf_counter() - start, count)


def make_faiss_index(vectors: np.ndarray, hnsw_threshold: int = HNSW_THRESHOLD) -> Any:
    """Exact inner-product search for small corpora, HNSW from hnsw_threshold vectors up."""
    import faiss

    dim = int(vectors.shape[1])
    index: Any
    if len(vectors) >= hnsw_threshold:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
    else:
        index = faiss.IndexFlatIP(dim)
    index.add(vectors)
    return index


def lead_passages(passages: list[Passage], per_doc: int | None) -> list[Passage]:
    """The first per_doc passages of every page (all when per_doc is None), in order."""
    if per_doc is None:
        return passages
    taken: dict[str, int] = {}
    out = []
    for p in passages:
        if taken.get(p.doc_id, 0) < per_doc:
            taken[p.doc_id] = taken.get(p.doc_id, 0) + 1
            out.append(p)
    return out


@dataclasses.dataclass(frozen=True)
class DenseSettings:
    """How the dense index is built (`drarena search index`'s dense flags).

    `per_doc` keeps only each page's first passages (as BrowseComp-Plus embeds the first 512
    tokens of a page): on 2 CPU cores the encoder, not FAISS, is what takes time. `max_tokens`
    truncates passages and queries to fewer word pieces than the model allows; `threads` is
    torch's (ONNX Runtime's, OpenVINO's) thread count while encoding (it does not change the
    vectors, only the speed). `precision` None is `embed.default_precision()` (bf16 on OpenVINO
    where the CPU has AMX or AVX512-BF16, else fp32); int8 and bf16 export the model to ONNX
    into the index folder first (see embed.export_int8, embed.export_fp32) and encode with that
    file. `batch_size` None: embed.OPENVINO_BATCH for bf16, 32 (sentence-transformers' own)
    otherwise. `index_kind` "auto": flat below `hnsw_threshold` passages, IVF-SQ8 from it up
    (search.ann); an approximate index is tuned to recall@10 >= `recall_floor` against exact
    search on the diagnostic queries, or refused (DrarenaError, nothing written). `engine`
    "ray" encodes the chunks on a pool of Ray actors (`drarena.rayrun.actor_map`), each
    loading the encoder once: a local Ray of `workers` CPUs, or the cluster at `address`, one
    actor a GPU where the cluster has GPUs (fp32 only), else one a CPU (at most `workers`).
    The chunks and their order are the local path's, so on the same CPU with the same
    `threads` the vectors are the same bytes (the tests compare them); a GPU's differ in the
    last bits, as any other machine's do."""

    model: str = embed.DEFAULT_MODEL
    precision: embed.Precision | None = None
    hnsw_threshold: int = HNSW_THRESHOLD
    per_doc: int | None = None
    index_kind: str = "auto"
    recall_floor: float = RECALL_FLOOR
    max_tokens: int | None = None
    threads: int | None = None
    batch_size: int | None = None
    engine: str = "local"
    address: str | None = None
    workers: int | None = None


@dataclasses.dataclass(frozen=True)
class _Encoding:
    """The encoder as one build uses it: its model's folder, the precision resolved, the
    batch size chosen."""

    encoder: Any
    model_path: str
    precision: embed.Precision
    batch: int
    max_tokens: int | None
    threads: int | None

    def __call__(self, texts: list[str]) -> np.ndarray:
        return embed.encode(
            self.encoder, texts, self.precision, self.batch, self.max_tokens, self.threads
        )


@dataclasses.dataclass(frozen=True)
class _Built:
    """What the manifest says of an ANN index as built and tuned."""

    plan: ann.IndexPlan
    sample: ann.TrainSample | None
    recall: float | None
    queries: list[str]


def build_dense(
    layout: IndexLayout, state: SourceState, settings: DenseSettings, *, force: bool = False
) -> StageResult:
    """Embeds the passages and writes `index` (FAISS), `docid` and manifest.json, unless an
    index built from the same source with the same settings is there (`force`: always, and
    no encoded chunk of an interrupted build is reused). DenseSettings says what each
    setting does."""
    precision = embed.check_precision(settings.precision or embed.default_precision())
    folder = layout.dense(embed.model_slug(settings.model))
    path = embed.model_path(settings.model)
    old = read_manifest(folder, DenseManifest, strict=False)
    if old is not None and not force and _up_to_date(old, state, str(path), precision, settings):
        return StageResult("dense", folder, False, 0.0, old.passage_count)
    passages = lead_passages(load_passages(layout), settings.per_doc)
    start = time.perf_counter()
    batch = settings.batch_size or (embed.OPENVINO_BATCH if precision == "bf16" else 32)
    texts = [p.indexed_text(state.passages) for p in passages]
    saved = checkpoint.DenseCheckpoint(
        folder.with_name(f"{folder.name}.partial"),
        {
            "source": state.model_dump(mode="json"),
            "passages": checkpoint.texts_digest([p.id for p in passages], texts),
            "model_path": str(path),
            "precision": precision,
            "max_tokens": settings.max_tokens,
            "batch": batch,
            "libraries": checkpoint.library_versions(),
            "cpu": checkpoint.cpu_name(),
        },
    )
    with saved:  # held until the index is in place: one build of this index at a time
        tmp = _tmp_for(folder)
        try:
            encoding = _Encoding(
                _encoder(settings, precision, tmp),
                str(path),
                precision,
                batch,
                settings.max_tokens,
                settings.threads,
            )
            with contextlib.ExitStack() as stack:
                chunks_encoder = None
                if settings.engine == "ray":
                    chunks_encoder = stack.enter_context(_ray_encoder(settings, encoding, tmp))
                vectors = _encode_saved(
                    saved,
                    texts,
                    embed.dimension(encoding.encoder),
                    encoding,
                    f"dense {folder.name} ({precision}{', Ray' if chunks_encoder else ''})",
                    reuse=not force,
                    chunks_encoder=chunks_encoder,
                )
            built = _write_index(tmp, vectors, passages, state, encoding, settings)
            _write_dense_manifest(tmp, built, passages, vectors.shape[1], encoding, state, settings)
            replace_folder(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        saved.finish()  # the index is in place: its chunks are no longer needed
    return StageResult("dense", folder, True, time.perf_counter() - start, len(passages))


def _up_to_date(
    old: DenseManifest,
    state: SourceState,
    model_path: str,
    precision: embed.Precision,
    settings: DenseSettings,
) -> bool:
    """Whether the index on disk was built from the same source with the same settings
    (threads and batch size only change the speed; `auto` accepts the kind it chose)."""
    return (
        old.same_source(state)
        and old.model_path == model_path
        and old.precision == precision
        and old.passages_per_doc == settings.per_doc
        and old.max_tokens_arg == settings.max_tokens
        and (settings.index_kind == "auto" or old.faiss == settings.index_kind)
    )


def _encoder(settings: DenseSettings, precision: embed.Precision, tmp: Path) -> Any:
    """The model's encoder; for int8 and bf16 first exported to ONNX into `tmp` (the new
    index folder: the file stays with the index) and encoding through that file."""
    encoder: Any = embed.load_encoder(settings.model)
    if precision == "int8":
        embed.export_int8(encoder, tmp / embed.ONNX_FILE)
    elif precision == "bf16":
        embed.export_fp32(encoder, tmp / embed.ONNX_FP32_FILE)
    return _exported(settings, precision, tmp)


def _exported(
    settings: DenseSettings, precision: embed.Precision, tmp: Path, device: str = "cpu"
) -> Any:
    """The encoder `_encoder` made, loaded again from what it wrote into `tmp` (a Ray actor's;
    on a cluster of several machines `tmp`, in the index folder, must be on a shared disk
    for int8 and bf16)."""
    encoder: Any = embed.load_encoder(settings.model, device)
    if precision == "int8":
        return embed.OnnxEncoder(encoder, tmp / embed.ONNX_FILE, settings.threads)
    if precision == "bf16":
        return embed.OnnxEncoder(encoder, tmp / embed.ONNX_FP32_FILE, settings.threads, "openvino")
    return encoder


def _actor_encoding(
    settings: DenseSettings, encoding: _Encoding, tmp: Path, device: str
) -> _Encoding:
    """What a Ray actor encodes with (run once in each actor: drarena.rayrun.actor_map)."""
    return dataclasses.replace(
        encoding, encoder=_exported(settings, encoding.precision, tmp, device)
    )


@contextlib.contextmanager
def _ray_encoder(settings: DenseSettings, encoding: _Encoding, tmp: Path) -> Iterator[ChunkEncoder]:
    """Chunks encoded by Ray actors (DenseSettings says how many and where)."""
    from drarena import rayrun

    with rayrun.session(settings.address, settings.workers) as ray:
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0)) if encoding.precision == "fp32" else 0
        cpus = max(1, int(resources.get("CPU", 1)))
        actors = gpus or min(cpus, settings.workers or cpus)
        device = "cuda" if gpus else "cpu"
        make = functools.partial(
            _actor_encoding, settings, dataclasses.replace(encoding, encoder=None), tmp, device
        )
        print(
            f"dense: encoding on Ray, {actors} actor(s) on {'GPUs' if gpus else 'CPUs'}",
            file=sys.stderr,
            flush=True,
        )
        yield lambda pieces: rayrun.actor_map(
            ray, make, pieces, actors=actors, num_gpus=1 if gpus else 0
        )


def _write_index(
    tmp: Path,
    vectors: np.ndarray,
    passages: list[Passage],
    state: SourceState,
    encode: _Encoding,
    settings: DenseSettings,
) -> _Built:
    """The FAISS index the plan chooses written into `tmp`; an approximate one tuned first
    against exact search on the diagnostic queries (ann.tune refuses one below the recall
    floor). The index is not kept: only what the manifest says of it."""
    import faiss

    plan = ann.plan_index(len(vectors), settings.hnsw_threshold, settings.index_kind)
    index, sample = ann.build_index(vectors, plan)
    recall: float | None = None
    queries = diagnostic_queries(passages, state)
    if plan.kind != "flat":
        qvec = encode(queries)
        exact = ann.exact_neighbours(vectors, qvec)
        plan, recall = ann.tune(index, plan, qvec, exact, settings.recall_floor)
    faiss.write_index(index, str(tmp / "index"))
    return _Built(plan, sample, recall, queries)


def _write_dense_manifest(
    tmp: Path,
    built: _Built,
    passages: list[Passage],
    dimension: int,
    encoding: _Encoding,
    state: SourceState,
    settings: DenseSettings,
) -> None:
    """docid and manifest.json written into `tmp` (the folder before it is put in place)."""
    plan, sample, recall, queries = built.plan, built.sample, built.recall, built.queries
    hnsw = plan.kind == "hnsw"
    encoder, max_tokens = encoding.encoder, settings.max_tokens
    (tmp / "docid").write_text("".join(p.id + "\n" for p in passages), encoding="utf-8")
    write_manifest(
        tmp,
        DenseManifest(
            **state.model_dump(),
            doc_count=len({p.doc_id for p in passages}),
            passage_count=len(passages),
            passages_per_doc=settings.per_doc,
            model=settings.model,
            model_path=encoding.model_path,
            max_tokens_arg=max_tokens,
            max_tokens=min(
                max_tokens or embed.max_tokens_of(encoder), embed.max_tokens_of(encoder)
            ),
            dimension=int(dimension),
            precision=encoding.precision,
            backend=embed.backend_of(encoding.precision),
            faiss=plan.kind,
            hnsw_m=plan.hnsw_m if hnsw else None,
            hnsw_ef_search=plan.ef_search if hnsw else None,
            ivf_nlist=plan.nlist,
            ivf_nprobe=plan.nprobe if plan.kind == "ivf-sq8" else None,
            train_seed=sample.seed if sample else None,
            train_size=sample.size if sample else None,
            train_rows_sha256=sample.rows_sha256 if sample else None,
            recall_at_10=recall,
            recall_floor=settings.recall_floor if recall is not None else None,
            recall_queries=len(queries) if recall is not None else None,
            recall_queries_sha256=_texts_sha256(queries) if recall is not None else None,
        ),
    )


DIAGNOSTIC_QUERIES = 200


def diagnostic_queries(
    passages: list[Passage], state: SourceState, count: int = DIAGNOSTIC_QUERIES
) -> list[str]:
    """The queries an approximate index is checked on: the titles (as diagnose.py cleans
    them) of a seeded sample of pages, else their first words. Why titles: they are what the
    retrieval diagnostics ask too, short and unlike the passages they find, so recall is
    measured on the kind of query a tournament sends, not on passages finding themselves."""
    import random

    first: dict[str, Passage] = {}
    for p in passages:
        first.setdefault(p.doc_id, p)
    docs = sorted(first)
    picked = sorted(
        random.Random(f"drarena-dense-diagnostic:{state.docs_sha256}").sample(
            docs, min(count, len(docs))
        )
    )
    out = []
    for doc_id in picked:
        p = first[doc_id]
        text = clean_title(p.title) or " ".join(p.text.split()[:12])
        if text:
            out.append(text)
    return out


def _texts_sha256(texts: list[str]) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()


ChunkEncoder = Callable[[Iterator[list[str]]], Iterator[np.ndarray]]


def _encode_saved(
    saved: checkpoint.DenseCheckpoint,
    texts: list[str],
    dimension: int,
    encode: Callable[[list[str]], np.ndarray],
    label: str,
    *,
    reuse: bool = True,
    chunks_encoder: ChunkEncoder | None = None,
) -> np.ndarray:
    """Every text's vector, chunk by chunk: the chunks `saved` already holds are read back
    (unless not `reuse`: `--force`), the rest encoded and saved as they come (each chunk is
    a progress update, its texts sorted by length within it by the encoder). The chunks
    go through `encode` one by one, or through `chunks_encoder` (Ray's actors), which gives
    their vectors back in order."""
    step = saved.chunk
    chunks = saved.resume(len(texts), dimension, reuse=reuse)
    done = min(len(chunks) * step, len(texts))
    if done:
        print(
            f"dense: resuming, {done} of {len(texts)} passages already encoded ({saved.folder})",
            file=sys.stderr,
            flush=True,
        )
    pieces = (texts[i : i + step] for i in range(done, len(texts), step))
    encoded = chunks_encoder(pieces) if chunks_encoder is not None else map(encode, pieces)
    with tqdm(total=len(texts), initial=done, desc=label, unit="passage", file=sys.stderr) as bar:
        for n, vectors in enumerate(encoded):
            saved.save(done // step + n, vectors)
            chunks.append(vectors)
            bar.update(len(vectors))
    if not chunks:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.concatenate(chunks)


def build_indexes(
    snapshot_dir: Path,
    index_root: Path,
    *,
    dense: bool = True,
    dense_per_doc: int | None = None,
    force: bool = False,
) -> list[StageResult]:
    """Passages, BM25 and (with `dense`) the dense index of an extracted snapshot, each left
    alone when up to date: what `drarena search index` does, as a library call (a tournament builds
    the indexes its retrievers read through this)."""
    layout = IndexLayout(index_root, snapshot_dir)
    passages, state = build_passages(layout, PassageSettings(), force=force)
    results = [passages, build_bm25(layout, state, force=force)]
    if dense:
        results.append(
            build_dense(layout, state, DenseSettings(per_doc=dense_per_doc), force=force)
        )
    return results
