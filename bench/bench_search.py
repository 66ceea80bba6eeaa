"""Search benchmark on the committed snapshot: index build, query latency, encoding speed, and
BM25 through Lucene (pyserini) against bm25s in the same run.

Run: .venv/bin/python bench/bench_search.py [--snapshot snapshots/pydocs] [--queries 200]
     [--parts bm25,serve,dense,encode,bm25s]

Works on a temporary copy of the snapshot (extracted there) and a temporary index root, so the
repository is never written. Prints:
- BM25 index build: seconds, pages/s and passages/s (Lucene through pyserini's SimpleIndexer);
- dense index build (part dense): every passage by default (as tournaments embed them;
  --dense-per-doc N for each page's first N), with drarena's default precision, after the
  torch fp32 build of the same passages with --dense-fp32 (the baseline, same run);
- per retriever (bm25, dense, hybrid) at k=10 after two untimed passes: queries/s, p50 and
  p95 latency, and raw Lucene passage search for reference;
- dense encoding (part encode, 1,000 passages by default): passages/s of sentence-transformers
  fp32 on torch (1 thread, torch's threads), bf16 where the CPU has AMX/AVX512-BF16 (torch
  autocast, and the exported graph on OpenVINO: drarena's default there), and the int8 ONNX
  Runtime graph (1 and 2 threads), each with its cosine against fp32 (a default must keep
  >= 0.99), per wall second and per CPU-second of this process (the second moves less with
  the machine's load), and the load average after each;
- bm25s over the same passages, tokenized by the same Lucene analyzer: queries/s ratio and
  mean top-10 passage overlap with Lucene;
- bm25 before/after (part bm25): pyserini's own LuceneSearcher, drarena's bulk Lucene path, and
  the bm25 retriever today against the same retriever reading Lucene's hits one at a time
  (SimpleSearcher through pyjnius, the code before the bulk path), with the count of queries
  whose top 10 differ between the two (must be 0);
- serve-search under bounded load (part serve): 500 distinct SearXNG-format queries (none
  repeats, so no cache could help; serve-search keeps no result cache), 10 in flight, to
  `drarena serve-search`'s app over the per-hit retriever (the code issue 19 measured at 64
  q/s) and over the bulk one (today), one after the other, each after two untimed passes of
  the 200 queries above (the JVM's compiler is still busy after a few hundred).
The load average is printed with each part: absolute figures follow the machine's load, the
ratios to the peer measured in the same run much less.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drarena.corpus.extract import extract_snapshot  # noqa: E402
from drarena.search import build, embed, lucene  # noqa: E402
from drarena.search.base import build_retriever  # noqa: E402
from drarena.search.bm25 import Bm25Args, Bm25Retriever  # noqa: E402
from drarena.search.diagnose import build_queries  # noqa: E402
from drarena.search.docstore import load_source_docs  # noqa: E402
from drarena.search.manifest import IndexLayout  # noqa: E402
from drarena.search.passages import PassageSettings  # noqa: E402

K = 10
WARMUP = 2
ISSUE_SERVE_QPS = 64.0  # serve-search's throughput when issue 19 was filed (heavily loaded machine)


def latencies(fn: Callable[[str], Any], queries: list[str]) -> tuple[float, float, float]:
    """(queries/s, p50 ms, p95 ms) over queries, after WARMUP untimed passes over them all
    (the JVM compiles Lucene's hot paths only after a few hundred queries)."""
    for _ in range(WARMUP):
        for q in queries:
            fn(q)
    times = []
    start = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t) * 1000)
    total = time.perf_counter() - start
    times.sort()
    return len(queries) / total, statistics.median(times), times[int(0.95 * (len(times) - 1))]


def row(name: str, qps: float, p50: float, p95: float) -> str:
    return f"  {name:26} {qps:9.1f} q/s   p50 {p50:7.2f} ms   p95 {p95:7.2f} ms"


def export_sdpa(encoder: Any, path: Path) -> None:
    """The bf16 graph as drarena exported it before 1 Dec 2026 (attention left to torch's
    scaled_dot_product_attention), for a before/after row."""
    embed.export_fp32(encoder, path, eager_attention=False)


def encoding(texts: list[str], work: Path) -> list[str]:
    """Each encoder on the same passages: passages/s (wall and per CPU-second of this process)
    and cosine against fp32. bf16 only where the CPU has AMX or AVX512-BF16; the bf16 graph on
    OpenVINO (drarena's default there), the same graph as exported before its attention was
    made eager (the SDPA graph), and torch's bf16 autocast side by side."""
    encoder = embed.load_encoder(embed.DEFAULT_MODEL)
    embed.encode(encoder, texts[:4])
    tokens, shapes = encoder_shapes(encoder, texts)
    gemm = {"before": gemm_rate(shapes)}
    flags = embed.cpu_flags()
    noted = flags & {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16"}
    out = [f"  CPU flags: {' '.join(sorted(noted)) or 'none of note'}"]
    graphs: dict[str, Any] = {}
    exports: list[tuple[str, Callable[[Any, Path], None], str]] = [
        ("int8", embed.export_int8, "onnxruntime"),
        ("bf16", embed.export_fp32, "openvino"),
        ("bf16-sdpa", export_sdpa, "openvino"),
    ]
    for name, export, runtime in exports:
        if name.startswith("bf16") and not (
            embed.bf16_supported(flags) and embed.openvino_available()
        ):
            continue
        start = time.perf_counter()
        path = work / name / (embed.graph_file("int8" if name == "int8" else "bf16") or "")
        path.parent.mkdir(exist_ok=True)
        export(encoder, path)
        out.append(
            f"  {name} export ({path.name}): {time.perf_counter() - start:.1f} s, "
            f"{path.stat().st_size / 1e6:.1f} MB"
        )
        graphs[name] = (path, runtime)
    reference = None
    rates: dict[str, float] = {}
    configs: list[tuple[str, embed.Precision, int | None, int]] = [
        ("fp32 torch, 1 thread", "fp32", 1, 32),
        ("fp32 torch, default threads", "fp32", None, 32),
        ("bf16 torch autocast", "bf16", None, 32),
        ("bf16 openvino", "bf16", None, embed.OPENVINO_BATCH),
        ("bf16 openvino, SDPA graph", "bf16", None, embed.OPENVINO_BATCH),
        ("int8 onnxruntime, 1 thread", "int8", 1, 32),
        ("int8 onnxruntime, 2 threads", "int8", 2, 32),
    ]
    for label, precision, threads, batch in configs:
        if precision == "bf16" and not embed.bf16_supported(flags):
            out.append(f"  {label:28} not supported here (no amx_bf16 / avx512_bf16 flag)")
            continue
        enc: Any = encoder
        if label.startswith(("int8", "bf16 openvino")):
            graph = "bf16-sdpa" if "SDPA" in label else precision
            if graph not in graphs:
                out.append(f"  {label:28} not installed")
                continue
            path, runtime = graphs[graph]
            enc = embed.OnnxEncoder(encoder, path, threads, runtime)
            embed.encode(enc, texts[:8], precision, batch)
        start, cpu = time.perf_counter(), time.process_time()
        vectors = embed.encode(enc, texts, precision, batch_size=batch, threads=threads)
        rate = len(texts) / (time.perf_counter() - start)
        cpu_rate = len(texts) / max(time.process_time() - cpu, 1e-9)
        if reference is None:
            reference, base, cpu_base = vectors, rate, cpu_rate
        cos = (vectors * reference).sum(axis=1)
        rates[label] = rate
        out.append(
            f"  {label:28} {rate:7.1f} passages/s ({rate / base:4.2f}x)  "
            f"{cpu_rate:6.1f} per CPU-s ({cpu_rate / cpu_base:4.2f}x)   cosine vs fp32 "
            f"min {cos.min():.5f} mean {cos.mean():.5f}   ({load()})"
        )
    out.append(f"  default precision here: {embed.default_precision(flags)}")
    if "bf16 openvino" in rates:
        gemm["after the encoders"] = gemm_rate(shapes)
        out += compute_floor(encoder, tokens, rates["bf16 openvino"], gemm)
    return out


def encoder_flops(encoder: Any, tokens: list[int]) -> float:
    """Multiply-adds x 2 of a BERT-style encoder over texts of these word-piece counts: the
    dense layers (Q, K, V, output; two feed-forward) per token, and attention's QK^T and AV,
    which grow with the text's length. Layer norms, softmax and GELU are not counted."""
    config = encoder[0].auto_model.config
    h, ffn, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    dense = 2 * (4 * h * h + 2 * h * ffn)
    return float(sum(layers * n * (dense + 4 * n * h) for n in tokens))


def gemm_rate(shapes: list[tuple[int, int, int]]) -> float:
    """FLOP/s of torch's bf16 matrix product on one thread (oneDNN; AMX where present) over
    these (m, k, n) shapes, best of three: what this machine's cores can do at all."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        total_flops = total_s = 0.0
        for m, k, n in shapes:
            a = torch.randn(m, k, dtype=torch.bfloat16)
            b = torch.randn(k, n, dtype=torch.bfloat16)
            for _ in range(3):
                a @ b
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                for _ in range(10):
                    a @ b
                best = min(best, (time.perf_counter() - start) / 10)
            total_flops += 2.0 * m * k * n
            total_s += best
        return total_flops / total_s
    finally:
        torch.set_num_threads(threads)


def encoder_shapes(encoder: Any, texts: list[str]) -> tuple[list[int], list[tuple[int, int, int]]]:
    """Word pieces a text (after the model's cap) and the dense layers' (m, k, n) matrix
    products for one batch of the default size at the mean length."""
    config = encoder[0].auto_model.config
    h, ffn = config.hidden_size, config.intermediate_size
    limit = int(encoder.max_seq_length)
    tokens = [min(len(ids), limit) for ids in encoder.tokenizer(texts)["input_ids"]]
    rows = embed.OPENVINO_BATCH * round(statistics.mean(tokens))
    return tokens, [(rows, h, h), (rows, h, ffn), (rows, ffn, h)]


def compute_floor(
    encoder: Any, tokens: list[int], rate: float, gemm: dict[str, float]
) -> list[str]:
    """How close the default encoder runs to this machine's bf16 matrix products, and what
    it would do if every FLOP ran at that rate on every core (no softmax, norms, tokenizing
    or memory traffic). `gemm`: the matmul rate measured at several points of the run; it
    moved 0.37-1.49 TFLOP/s within minutes on the 2-core Intel machine (AMX), so all are
    printed and the best is taken as what the cores can do. `tokens`: each passage's word
    pieces, from encoder_shapes."""
    flops = encoder_flops(encoder, tokens)
    peak = max(gemm.values())
    cores = os.cpu_count() or 1
    achieved = flops / len(tokens) * rate
    return [
        f"  compute: {flops / len(tokens) / 1e9:.2f} GFLOP a passage (mean "
        f"{statistics.mean(tokens):.0f} word pieces); torch bf16 matmul, 1 thread, the "
        "encoder's shapes: " + ", ".join(f"{v / 1e12:.3f} TFLOP/s {k}" for k, v in gemm.items()),
        f"  bf16 openvino ran at {achieved / 1e12:.3f} TFLOP/s = {achieved / (cores * peak):.0%}"
        f" of {cores} cores x the best; at 100% it would do "
        f"{cores * peak * len(tokens) / flops:.0f} passages/s",
    ]


def bm25s_compare(
    passages: list[Any], settings: PassageSettings, queries: list[str], bm25: Any
) -> list[str]:
    import bm25s

    analyzer = lucene.autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    utils = lucene.autoclass("io.anserini.analysis.AnalyzerUtils")

    def analyze(text: str) -> list[str]:
        return [str(t) for t in utils.analyze(analyzer, text)]

    start = time.perf_counter()
    corpus_tokens = [analyze(p.indexed_text(settings)) for p in passages]
    tokenize_s = time.perf_counter() - start
    start = time.perf_counter()
    index = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    index.index(corpus_tokens, show_progress=False)
    build_s = time.perf_counter() - start
    ids = [p.id for p in passages]
    query_tokens = [analyze(q) or ["-"] for q in queries]
    by_text = dict(zip(queries, query_tokens, strict=True))

    def bm25s_search(q: str) -> list[str]:
        rows, _ = index.retrieve([by_text[q]], k=K, show_progress=False, n_threads=1)
        return [ids[i] for i in rows[0]]

    def lucene_search(q: str) -> list[str]:
        return [pid for pid, _ in bm25.search_passages(q, K)]

    lq = latencies(lucene_search, queries)
    sq = latencies(bm25s_search, queries)
    overlap = statistics.mean(
        len(set(lucene_search(q)) & set(bm25s_search(q))) / K for q in queries
    )
    return [
        f"  bm25s index: {build_s:.2f} s (+ {tokenize_s:.1f} s Lucene analysis of the passages)",
        row("Lucene passages k=10", *lq),
        row("bm25s passages k=10", *sq),
        f"  Lucene / bm25s throughput: {lq[0] / sq[0]:.2f}x   mean top-10 overlap: "
        f"{overlap:.3f} (same tokens; bm25s queries pre-analyzed)",
    ]


def _searcher(retriever: Any) -> Callable[[str], Any]:
    return lambda q: retriever.search(q, K)


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


class PerHitBm25(Bm25Retriever):
    """The bm25 retriever as it was before the bulk path: SimpleSearcher's ScoredDoc objects
    read one at a time through pyjnius (the 'before' of the same-run comparison)."""

    def __init__(self, snapshot_dir: Path, index_root: Path, args: Bm25Args) -> None:
        super().__init__(snapshot_dir, index_root, args)
        self._simple = lucene.simple_searcher(
            IndexLayout(index_root, snapshot_dir).bm25, args.k1, args.b
        )

    def search_passages(self, query: str, depth: int) -> list[tuple[str, float]]:
        with self._lock:
            return [(str(r.docid), float(r.score)) for r in self._simple.search(query, depth)]


def bm25_retrievers(snapshot: Path, index_root: Path) -> dict[str, Any]:
    return {
        "before": PerHitBm25(snapshot, index_root, Bm25Args()),
        "after": build_retriever({"kind": "bm25"}, snapshot, index_root),
    }


def bm25_part(snapshot: Path, layout: IndexLayout, queries: list[str]) -> None:
    print(f"\nbm25 before/after, {len(queries)} queries, k={K} ({load()} at start)")
    retrievers = bm25_retrievers(snapshot, layout.root.parent)
    pyserini = lucene.pyserini_lucene_searcher_class()(str(layout.bm25))
    bulk = retrievers["after"]

    def pyserini_hits(depth: int) -> Callable[[str], Any]:
        return lambda q: [(h.docid, h.score) for h in pyserini.search(q, depth)]

    rows = [
        ("pyserini LuceneSearcher k=10", pyserini_hits(10)),
        ("drarena bulk Lucene k=10", lambda q: bulk.search_passages(q, 10)),
        ("pyserini LuceneSearcher 50", pyserini_hits(50)),
        ("drarena bulk Lucene 50", lambda q: bulk.search_passages(q, 50)),
        ("bm25 retriever before", _searcher(retrievers["before"])),
        ("bm25 retriever after", _searcher(retrievers["after"])),
    ]
    measured = {}
    for name, fn in rows:
        measured[name] = latencies(fn, queries)
        print(row(name, *measured[name]))
    for peer, ours in (
        ("pyserini LuceneSearcher k=10", "drarena bulk Lucene k=10"),
        ("pyserini LuceneSearcher 50", "drarena bulk Lucene 50"),
        ("bm25 retriever before", "bm25 retriever after"),
    ):
        print(
            f"  {ours} / {peer}: {measured[ours][0] / measured[peer][0]:.2f}x queries/s, "
            f"p50 {measured[peer][1] / measured[ours][1]:.2f}x lower"
        )
    differ = sum(
        retrievers["before"].search(q, K) != retrievers["after"].search(q, K) for q in queries
    )
    print(f"  queries whose top {K} pages differ before/after: {differ} of {len(queries)}")
    print(f"  ({load()} at end)")


SERVE_MODES = ("per-hit", "bulk")


def serve_main(mode: str, snapshot: Path, index_root: Path, port: int) -> None:
    """Child process of the serve part: serve-search's app over the per-hit retriever (the
    code the issue measured) or the bulk one (serve-search today)."""
    from drarena.search import server

    retriever = bm25_retrievers(snapshot, index_root)["before" if mode == "per-hit" else "after"]
    server.serve_http(retriever, snapshot.name, "127.0.0.1", port)


async def load_test(
    port: int, queries: list[str], total: int, concurrency: int
) -> tuple[float, list[float]]:
    """total GET /search?format=json requests, `concurrency` keep-alive connections each with
    one request in flight; a bare asyncio client so the client's own CPU stays small."""
    import asyncio
    from urllib.parse import quote

    todo = iter(range(total))
    times: list[float] = []

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for i in todo:
                q = quote(queries[i % len(queries)])
                start = time.perf_counter()
                writer.write(
                    f"GET /search?q={q}&format=json HTTP/1.1\r\nHost: 127.0.0.1:{port}"
                    f"\r\n\r\n".encode()
                )
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    raise SystemExit(f"serve-search answered {head[:60]!r}")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                times.append((time.perf_counter() - start) * 1000)
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, sorted(times)


def serve_part(
    snapshot: Path,
    layout: IndexLayout,
    warm: list[str],
    queries: list[str],
    concurrency: int,
) -> None:
    import asyncio
    import socket
    import subprocess

    total = len(queries)
    print(
        f"\nserve-search, SearXNG format, {total} distinct queries, {concurrency} in flight, "
        f"after {WARMUP * len(warm)} warm-up requests ({load()} at start)"
    )
    rates, cpu_ms = {}, {}
    for mode in SERVE_MODES:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                mode,
                "--snapshot",
                str(snapshot),
                "--index-root",
                str(layout.root.parent),
                "--port",
                str(port),
            ],
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(1200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            asyncio.run(load_test(port, warm, WARMUP * len(warm), concurrency))
            cpu = process_cpu(proc.pid)
            secs, times = asyncio.run(load_test(port, queries, total, concurrency))
            cpu_ms[mode] = (process_cpu(proc.pid) - cpu) * 1000 / total
        finally:
            proc.terminate()
            proc.wait()
        rates[mode] = total / secs
        print(
            f"  bm25 {mode:8} {rates[mode]:7.1f} q/s   p50 {statistics.median(times):6.2f} ms"
            f"   p95 {times[int(0.95 * (len(times) - 1))]:6.2f} ms   server CPU "
            f"{cpu_ms[mode]:5.2f} ms/query"
        )
    print(
        f"  bulk / per-hit: {rates['bulk'] / rates['per-hit']:.2f}x queries/s, server CPU per "
        f"query {cpu_ms['per-hit'] / cpu_ms['bulk']:.2f}x lower; bulk / the issue's 64 q/s: "
        f"{rates['bulk'] / ISSUE_SERVE_QPS:.1f}x ({load()} at end)"
    )


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its threads (the JVM's included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, default=REPO / "snapshots" / "pydocs")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--parts", default="bm25,serve,dense,encode,bm25s")
    parser.add_argument("--encode-sample", type=int, default=1000)
    parser.add_argument(
        "--dense-per-doc",
        type=int,
        default=None,
        help="embed only each page's first N passages (default: every passage, as tournaments do)",
    )
    parser.add_argument(
        "--dense-fp32",
        action="store_true",
        help="also build the same dense index with torch fp32, the baseline, in this run",
    )
    parser.add_argument("--serve-queries", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--serve", choices=SERVE_MODES, help=argparse.SUPPRESS)
    parser.add_argument("--index-root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_main(args.serve, args.snapshot, args.index_root, args.port)
        return 0
    parts = {p.strip() for p in args.parts.split(",")}

    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    try:
        snapshot = work / args.snapshot.name
        shutil.copytree(args.snapshot, snapshot, ignore=shutil.ignore_patterns("trees"))
        extract_snapshot(snapshot, progress=False)  # a no-op when the copy is up to date
        settings = PassageSettings()
        layout = IndexLayout(work / "index", snapshot)
        _, state = build.build_passages(layout, settings)
        passages = build.load_passages(layout)
        pages = len({p.doc_id for p in passages})
        lucene.autoclass("java.lang.System")
        result = build.build_bm25(layout, state)
        print(f"{load()} at start on {os.cpu_count()} cores")
        print(
            f"snapshot {args.snapshot.name}: {pages} pages, {len(passages)} passages "
            f"({settings.words} words, stride {settings.stride})"
        )
        print(
            f"BM25 index build (Lucene via pyserini): {result.seconds:.1f} s, "
            f"{pages / result.seconds:.1f} pages/s, {len(passages) / result.seconds:.0f} "
            "passages/s"
        )
        docs = load_source_docs(snapshot)
        queries = [
            q.text
            for q in build_queries(
                docs, [d.id for d in docs if d.indexed], max_pages=args.queries // 2 + 1
            )
        ]
        queries = queries[: args.queries]
        print(
            f"\nqueries: {len(queries)} (page titles and key phrases), k={K}, "
            f"after {WARMUP} untimed passes over them"
        )
        if "bm25" in parts:
            bm25_part(snapshot, layout, queries)
        if "serve" in parts:
            gold = [d.id for d in docs if d.indexed]
            every = build_queries(docs, gold, max_pages=len(gold))
            distinct = list(dict.fromkeys(q.text for q in every))
            if len(distinct) < args.serve_queries:
                raise SystemExit(
                    f"--serve-queries {args.serve_queries}: this snapshot gives "
                    f"{len(distinct)} distinct queries"
                )
            serve_part(snapshot, layout, queries, distinct[: args.serve_queries], args.concurrency)
        if "dense" in parts:
            which = (
                "every passage"
                if args.dense_per_doc is None
                else f"first {args.dense_per_doc} passage(s) per page"
            )
            default = embed.default_precision()
            # fp32 first, so the retrievers below read the default's index
            builds: list[embed.Precision] = (
                ["fp32", default] if args.dense_fp32 and default != "fp32" else [default]
            )
            seconds: dict[str, float] = {}
            for precision in builds:
                before = load()
                dense_build = build.build_dense(
                    layout,
                    state,
                    build.DenseSettings(precision=precision, per_doc=args.dense_per_doc),
                    force=True,
                )
                seconds[precision] = dense_build.seconds
                print(
                    f"\ndense index build (MiniLM {precision}, {which}): "
                    f"{dense_build.seconds:.1f} s, "
                    f"{dense_build.count / dense_build.seconds:.1f} passages/s "
                    f"({before} before, {load()} after)"
                )
            if len(seconds) == 2:
                print(
                    f"dense index build: {default} is {seconds['fp32'] / seconds[default]:.2f}x "
                    "fp32 (same passages, same run)"
                )
            for kind in ("dense", "hybrid"):
                retriever = build_retriever({"kind": kind}, snapshot, layout.root.parent)
                print(row(f"{kind} retriever", *latencies(_searcher(retriever), queries)))
        if "encode" in parts:
            sample = [
                p.indexed_text(settings)
                for p in passages[:: max(1, len(passages) // args.encode_sample)]
            ][: args.encode_sample]
            print(f"\ndense encoding, {len(sample)} passages spread over the snapshot ({load()}):")
            for line in encoding(sample, work):
                print(line)
        if "bm25s" in parts:
            print("\nBM25 peer: bm25s (k1=0.9, b=0.4, method lucene) on the same passages")
            bm25 = build_retriever({"kind": "bm25"}, snapshot, layout.root.parent)
            for line in bm25s_compare(passages, settings, queries, bm25):
                print(line)
        print(f"{load()} at end")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
