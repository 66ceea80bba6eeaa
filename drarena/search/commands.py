"""CLI for search: `drarena search index`, `query`, `serve`, `diagnose`.

Imports stay light here; Lucene, torch and FAISS load inside the command functions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError
from drarena.quoting import shown


def register(subparsers: Any) -> None:
    idx = subparsers.add_parser(
        "index",
        help="build the BM25 and dense indexes of a snapshot",
        description="Cut the snapshot's pages into passages, then build a Lucene BM25 index "
        "(index/<name>/bm25/) and a FAISS dense index (index/<name>/dense-<model>/). Extracts "
        "the pages first when needed; up-to-date indexes are left alone.",
    )
    idx.add_argument("snapshot", help="snapshot folder or name under snapshots/")
    idx.add_argument(
        "--dense-model",
        default=None,
        help="sentence-transformers model name or folder "
        "(default all-MiniLM-L6-v2, shipped offline)",
    )
    idx.add_argument("--no-dense", action="store_true", help="build the BM25 index only")
    idx.add_argument(
        "--dense-per-doc",
        type=int,
        default=None,
        metavar="N",
        help="embed only the first N passages of each page (default: all)",
    )
    idx.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="word pieces the encoder reads per passage (default: the model's)",
    )
    idx.add_argument(
        "--encode-threads",
        type=int,
        default=None,
        metavar="N",
        help="encoder threads while indexing (default: one per core; 1 can be "
        "faster on a busy machine)",
    )
    idx.add_argument(
        "--precision",
        choices=("fp32", "bf16", "int8"),
        default=None,
        help="encoder: bf16 (OpenVINO; the default where the CPU has AMX or AVX512-BF16), "
        "fp32 (torch; the default elsewhere), int8 (ONNX Runtime)",
    )
    idx.add_argument("--passage-words", type=int, default=None, help="passage length (160)")
    idx.add_argument(
        "--passage-stride", type=int, default=None, help="words between passage starts (120)"
    )
    idx.add_argument(
        "--hnsw-threshold",
        type=int,
        default=None,
        help="passages from which --dense-index auto is approximate, not flat (100000)",
    )
    idx.add_argument(
        "--bm25-threads",
        type=int,
        default=1,
        help="BM25 indexing threads; above 1, Anserini's IndexCollection over sharded JSON "
        "(same rankings; for large corpora)",
    )
    idx.add_argument(
        "--dense-index",
        choices=["auto", "flat", "hnsw", "ivf-sq8"],
        default="auto",
        help="FAISS index: auto (flat below the threshold, ivf-sq8 from it up), or one kind",
    )
    idx.add_argument(
        "--dense-recall-floor",
        type=float,
        default=None,
        help="least recall@10 against exact search an approximate index must reach (0.95)",
    )
    idx.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="dense encoding: local (default: this process) or ray (a pool of Ray actors, each "
        "loading the encoder once, one a GPU where the cluster has GPUs; needs `make "
        "setup-scale`); on one CPU with one --encode-threads the vectors are the same bytes",
    )
    idx.add_argument(
        "--address",
        default=None,
        help="with --engine ray: a running Ray cluster (host:port, or `auto`); default: a "
        "local Ray of --workers CPUs",
    )
    idx.add_argument(
        "--workers", type=int, default=None, help="with --engine ray: actors (default: all CPUs)"
    )
    idx.add_argument("--force", action="store_true", help="rebuild even when up to date")
    _common(idx)
    idx.set_defaults(func=cmd_index)

    srch = subparsers.add_parser("search", help="search a snapshot, print a ranked table")
    srch.add_argument("snapshot", help="snapshot folder or name under snapshots/")
    srch.add_argument("query", help="the query text")
    srch.add_argument("-k", type=int, default=10, help="results (default 10)")
    srch.add_argument("--json", action="store_true", help="print hits as JSON lines")
    _retriever_args(srch)
    _common(srch)
    srch.set_defaults(func=cmd_search)

    srv = subparsers.add_parser(
        "serve-search",
        help="serve search + open over HTTP (native, SearXNG) and MCP",
        description="HTTP on 127.0.0.1: /search (add format=json for SearXNG's JSON), /open, "
        "/health and MCP (streamable HTTP) at /mcp; or MCP over stdio with --stdio.",
    )
    srv.add_argument("snapshot", help="snapshot folder or name under snapshots/")
    srv.add_argument("--port", type=int, default=8766, help="port (default 8766)")
    srv.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    srv.add_argument("--stdio", action="store_true", help="MCP over stdin/stdout instead")
    srv.add_argument(
        "--live-web",
        action="store_true",
        help="allow --retriever live, which fetches public pages for any caller "
        "(refused without it unless it replays a capture)",
    )
    _retriever_args(srv)
    _common(srv)
    srv.set_defaults(func=cmd_serve)

    diag = subparsers.add_parser(
        "diagnose-retrievers",
        help="recall@k and MRR of each retriever on tree targets",
        description="Queries from the tree target pages (titles and key phrases; all pages "
        "when no trees exist), recall@k and MRR@k per retriever, TREC run files and qrels "
        "(scored again by pyserini's trec_eval) under index/<name>/diagnostics/.",
    )
    diag.add_argument("snapshot", help="snapshot folder or name under snapshots/")
    diag.add_argument(
        "--retrievers",
        default="bm25,dense,hybrid",
        help="comma-separated kinds (default bm25,dense,hybrid)",
    )
    diag.add_argument("--dense-model", default=None, help="model of the dense index")
    diag.add_argument("-k", type=int, default=10, help="cut-off (default 10)")
    diag.add_argument("--max-pages", type=int, default=200, help="gold pages sampled (default 200)")
    diag.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    diag.add_argument(
        "--out", type=Path, default=None, help="output folder (default index/<name>/diagnostics)"
    )
    _common(diag)
    diag.set_defaults(func=cmd_diagnose)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--index-root",
        type=Path,
        default=Path("index"),
        help="folder holding index/<name>/ (default ./index)",
    )


def _retriever_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retriever", default="bm25", help="retriever kind (default bm25; see `drarena kinds`)"
    )
    parser.add_argument("--dense-model", default=None, help="model of the dense index")
    parser.add_argument(
        "--retriever-args",
        default=None,
        metavar="JSON",
        help='extra args, e.g. \'{"k1": 1.2, "b": 0.75}\'',
    )


def retriever_spec(
    kind: str, dense_model: str | None = None, extra_json: str | None = None
) -> dict[str, Any]:
    """The {kind, args} a command line names."""
    args: dict[str, Any] = {}
    if extra_json:
        try:
            args = json.loads(extra_json)
        except ValueError as exc:
            raise DrarenaError(f"--retriever-args: not JSON ({exc})") from None
        if not isinstance(args, dict):
            raise DrarenaError("--retriever-args: must be a JSON object")
    if dense_model:
        if kind == "dense":
            args.setdefault("model", dense_model)
        elif kind == "hybrid":
            args.setdefault(
                "retrievers", [{"kind": "bm25"}, {"kind": "dense", "args": {"model": dense_model}}]
            )
    return {"kind": kind, "args": args}


def _open_retriever(args: argparse.Namespace) -> tuple[Any, Path]:
    from drarena.search.base import build_retriever
    from drarena.search.docstore import resolve_snapshot

    snapshot = resolve_snapshot(args.snapshot)
    spec = retriever_spec(args.retriever, args.dense_model, args.retriever_args)
    return build_retriever(spec, snapshot, args.index_root), snapshot


def cmd_index(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from drarena.search import build, embed
    from drarena.search.docstore import resolve_snapshot
    from drarena.search.manifest import IndexLayout
    from drarena.search.passages import PassageSettings

    snapshot = resolve_snapshot(args.snapshot)
    if (snapshot / "manifest.json").is_file():
        from drarena.corpus.extract import extract_snapshot

        extract_snapshot(snapshot)
    overrides = {
        k: v
        for k, v in (("words", args.passage_words), ("stride", args.passage_stride))
        if v is not None
    }
    try:
        settings = PassageSettings(**overrides)
    except ValidationError as exc:
        raise DrarenaError(f"passage settings: {exc.errors()[0]['msg']}") from None
    if args.dense_per_doc is not None and args.dense_per_doc < 1:
        raise DrarenaError("--dense-per-doc must be at least 1")
    if args.encode_threads is not None and args.encode_threads < 1:
        raise DrarenaError("--encode-threads must be at least 1")
    if args.max_tokens is not None and not 8 <= args.max_tokens <= 32768:
        raise DrarenaError("--max-tokens must be in 8..32768")
    if args.workers is not None and args.workers < 1:
        raise DrarenaError("--workers must be at least 1")
    if args.engine == "ray" and not args.no_dense:
        from drarena.rayrun import ray_module

        ray_module()  # before any work: a missing Ray is one line naming `make setup-scale`
    layout = IndexLayout(args.index_root, snapshot)
    passages, state = build.build_passages(layout, settings, force=args.force)
    if args.bm25_threads < 1:
        raise DrarenaError("--bm25-threads must be at least 1")
    results = [passages, build.build_bm25(layout, state, args.force, args.bm25_threads)]
    if not args.no_dense:
        results.append(
            build.build_dense(
                layout,
                state,
                build.DenseSettings(
                    model=args.dense_model or embed.DEFAULT_MODEL,
                    precision=args.precision,
                    per_doc=args.dense_per_doc,
                    max_tokens=args.max_tokens,
                    threads=args.encode_threads,
                    engine=args.engine,
                    address=args.address,
                    workers=args.workers,
                    hnsw_threshold=args.hnsw_threshold or build.HNSW_THRESHOLD,
                    index_kind=args.dense_index,
                    recall_floor=(
                        args.dense_recall_floor
                        if args.dense_recall_floor is not None
                        else build.RECALL_FLOOR
                    ),
                ),
                force=args.force,
            )
        )
    for r in results:
        what = f"built in {r.seconds:.1f} s" if r.built else "up to date"
        print(f"{r.stage:9} {r.path}  {r.count} passages  {what}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    retriever, _ = _open_retriever(args)
    hits = retriever.search(args.query, args.k)
    if args.json:
        for hit in hits:
            print(hit.to_json())
        return 0
    if not hits:
        print("no results")
        return 0
    print(f"{'rank':>4}  {'score':>8}  {'docid':16}  title / url")
    for hit in hits:
        title = shown(" ".join(hit.title.replace("¶", "").split()), 70)  # a page's text
        print(f"{hit.rank:>4}  {hit.score:8.4f}  {shown(hit.docid, 16):16}  {title}")
        print(f"{'':>32}{shown(hit.url, 2000)}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from drarena.search import server

    if not 0 <= args.port <= 65535:  # socket.bind's OverflowError otherwise
        raise DrarenaError(f"--port {args.port}: a port is 0 (any free port) to 65535")
    server.check_loopback(args.host)
    live = server.check_live(
        retriever_spec(args.retriever, args.dense_model, args.retriever_args), args.live_web
    )
    retriever, snapshot = _open_retriever(args)
    if args.stdio:
        server.serve_stdio(retriever, snapshot.name, live)
    else:
        server.serve_http(retriever, snapshot.name, args.host, args.port, live)
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from drarena.search.diagnose import run_diagnostics
    from drarena.search.docstore import resolve_snapshot

    for option, value in (("--max-pages", args.max_pages), ("-k", args.k)):
        if value < 1:  # random.sample's ValueError otherwise
            raise DrarenaError(f"{option} {value}: must be at least 1")
    snapshot = resolve_snapshot(args.snapshot)
    kinds = [k.strip() for k in args.retrievers.split(",") if k.strip()]
    from drarena.search.base import RETRIEVERS

    known = RETRIEVERS.kinds()
    unknown = [k for k in kinds if k not in known]
    if not kinds or unknown:
        raise DrarenaError(f"--retrievers: unknown kinds {unknown} (known: {', '.join(known)})")
    specs = [retriever_spec(k, args.dense_model) for k in kinds]
    out = args.out or args.index_root / snapshot.name / "diagnostics"
    report = run_diagnostics(
        snapshot, args.index_root, specs, out, k=args.k, max_pages=args.max_pages, seed=args.seed
    )
    print(report, file=sys.stdout)
    return 0
