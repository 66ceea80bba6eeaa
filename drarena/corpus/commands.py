"""CLI for the corpus stage: `drarena snapshot extract`, `snapshot trees`, `snapshot trees show`.

Imports stay light here; trafilatura, lxml and networkx load inside the command functions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    ext = subparsers.add_parser(
        "extract",
        help="snapshot -> docs.jsonl + links.jsonl",
        description="Extract main text (trafilatura), title and links of every HTML page of a "
        "snapshot into <snapshot>/docs.jsonl and links.jsonl. Does nothing when up to date.",
    )
    ext.add_argument("snapshot", type=Path, help="snapshot folder, e.g. snapshots/pydocs")
    ext.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    ext.add_argument("--force", action="store_true", help="extract even when up to date")
    ext.add_argument("--no-progress", action="store_true", help="no progress bar")
    ext.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local (default: a process pool here) or ray (shards as Ray tasks, resumable; "
        "needs `make setup-scale`); the output is the same bytes",
    )
    ext.add_argument(
        "--address",
        default=None,
        help="with --engine ray: a running Ray cluster (host:port, or `auto`); default: a "
        "local Ray of --workers CPUs",
    )
    ext.set_defaults(func=cmd_extract)

    trees = subparsers.add_parser(
        "trees",
        help="build Information Trees, or `trees show TREE`",
        description="`drarena snapshot trees SNAPSHOT --count N --seed S` builds N seeded trees "
        "into <snapshot>/trees/ (extracting first if needed). `drarena snapshot trees show TREE` "
        "prints one "
        "tree indented; with --dot it prints Graphviz DOT.",
    )
    trees.add_argument("snapshot", type=Path, help="snapshot folder, or the word `show`")
    trees.add_argument("tree", type=Path, nargs="?", help="tree file (with `show`)")
    trees.add_argument("--count", type=int, default=10, help="number of trees (default 10)")
    trees.add_argument("--seed", type=int, default=1, help="seed (default 1)")
    trees.add_argument("--max-depth", type=int, default=None, help="depth cap (default 4)")
    trees.add_argument(
        "--max-width", type=int, default=None, help="children per node cap (default 6)"
    )
    trees.add_argument(
        "--max-nodes", type=int, default=None, help="nodes per tree cap (default 150)"
    )
    trees.add_argument(
        "--workers", type=int, default=None, help="extraction processes, when extraction is needed"
    )
    trees.add_argument("--dot", action="store_true", help="with `show`: Graphviz DOT output")
    trees.add_argument("--no-progress", action="store_true", help="no progress bar")
    trees.set_defaults(func=cmd_trees)

    imp = subparsers.add_parser(
        "snapshot-import-trees",
        help="the DR-Arena paper's released trees as a snapshot",
        description="Write the Information Trees of the DR-Arena reference repository "
        "(iNLP-Lab/DR-Arena: web_tree/data/dataset/trees/tree_NNNN.json) as a snapshot: each "
        "node a text-only page of a WARC file (the reference keeps no HTML), extracted, and "
        "the trees in drarena's format with the reference's structure and relations. DIR is "
        "a clone of the repository or the folder of its tree files. See docs/paper-trees.md.",
    )
    imp.add_argument("dir", type=Path, help="clone of iNLP-Lab/DR-Arena, or its trees folder")
    imp.add_argument("name", help="snapshot name")
    imp.add_argument(
        "--out", type=Path, default=None, help="snapshot folder (default: snapshots/<name>)"
    )
    imp.set_defaults(func=cmd_import_trees)


def cmd_extract(args: argparse.Namespace) -> int:
    from drarena.corpus.extract import extract_snapshot

    result = extract_snapshot(
        args.snapshot,
        workers=args.workers,
        force=args.force,
        progress=not args.no_progress,
        engine=args.engine,
        address=args.address,
    )
    c = result.counts
    if result.up_to_date:
        print(f"{result.docs_path.parent}: up to date ({c['pages']} pages, {c['links']} links)")
        return 0
    print(
        f"{result.docs_path}: {c['pages']} pages ({c['content_pages']} with unique content; "
        f"near-empty {c['near_empty']}, duplicates {c['duplicates']}, unparsable "
        f"{c['unparsable']}, fallback text {c['fallback_text']}, truncated {c['truncated']})"
    )
    print(
        f"{result.links_path}: {c['links']} links ({c['nav_links']} navigation, "
        f"{c['in_snapshot_links']} in the snapshot, {c['self_links']} self-links left out)"
    )
    skipped = ", ".join(f"{k} {v}" for k, v in c["skipped_responses"].items())
    if skipped:
        print(f"responses not extracted: {skipped}")
    if c["pages"] == 0:
        print(
            f"warning: no HTML pages in {result.snapshot_dir} "
            f"({c['responses']} responses); see {result.manifest_path}",
            file=sys.stderr,
        )
    return 0


def cmd_trees(args: argparse.Namespace) -> int:
    from drarena.errors import DrarenaError

    if str(args.snapshot) == "show":
        if args.tree is None:
            raise DrarenaError(
                "trees show: give a tree file, e.g. snapshots/pydocs/trees/tree-000.json"
            )
        return _show(args.tree, args.dot)
    if args.tree is not None:
        raise DrarenaError(
            f"trees: unexpected argument {args.tree} (did you mean "
            f"`drarena snapshot trees show {args.tree}`?)"
        )
    from drarena.corpus.trees import TreeParams, build_snapshot_trees, load_tree, summarize

    defaults = TreeParams()
    params = TreeParams(
        count=args.count,
        seed=args.seed,
        max_depth=args.max_depth if args.max_depth is not None else defaults.max_depth,
        max_width=args.max_width if args.max_width is not None else defaults.max_width,
        max_nodes=args.max_nodes if args.max_nodes is not None else defaults.max_nodes,
    )
    result = build_snapshot_trees(
        args.snapshot, params, workers=args.workers, progress=not args.no_progress
    )
    state = "up to date" if result.up_to_date else "written"
    print(
        f"{result.out_dir}: {len(result.files)} trees {state} ({result.candidates} root candidates)"
    )
    print(summarize([load_tree(f) for f in result.files]))
    return 0


def _show(path: Path, dot: bool) -> int:
    from drarena.corpus.trees import load_tree
    from drarena.corpus.treeview import render_dot, render_text

    tree = load_tree(path)
    sys.stdout.write(render_dot(tree) if dot else render_text(tree))
    return 0


def cmd_import_trees(args: argparse.Namespace) -> int:
    from drarena.corpus.papertrees import import_trees

    out = args.out if args.out is not None else Path("snapshots") / args.name
    result = import_trees(args.dir, args.name, out)
    print(
        f"{len(result.trees)} trees, {result.nodes} nodes over {result.pages} pages "
        f"({result.repeats} nodes repeat a page of their tree; {result.differing} copies of a "
        f"URL had another text than the page kept) -> {result.out}\n"
        f"fingerprint {result.fingerprint}"
    )
    return 0
