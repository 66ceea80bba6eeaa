"""CLI: `drarena drift SNAPSHOT [--against live|SNAPSHOT2] [--run RUN] [--json OUT]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drarena.errors import DrarenaError

if TYPE_CHECKING:
    from drarena.drift.report import DriftReport


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "drift",
        help="how far a snapshot has drifted from the live web or a later snapshot",
        description="Per page: gone, redirected, changed (similarity, sentences, numbers and "
        "dates) or unchanged; per tree: drifted nodes; with --run: the checklist "
        "items whose source sentences moved (stale ground truth).",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder, e.g. snapshots/pydocs")
    p.add_argument(
        "--against",
        default="live",
        help="'live' (re-fetch every page at its URL, the default) or the folder "
        "of a later snapshot",
    )
    p.add_argument(
        "--run",
        type=Path,
        default=None,
        help="a run folder: flag its stale checklist items, write drift.json and "
        "drift.html into it and add a drift section to its report.html",
    )
    p.add_argument(
        "--json",
        type=Path,
        default=None,
        dest="json_out",
        metavar="OUT",
        help="write the report as JSON here (and drift HTML next to it)",
    )
    live = p.add_argument_group("live re-fetch (defaults: the snapshot's crawl spec)")
    live.add_argument(
        "--connect-to",
        action="append",
        default=[],
        metavar="HOST:PORT=HOST:PORT",
        help="connect to the second address for URLs of the first (curl --connect-to); repeatable",
    )
    live.add_argument(
        "--allow-private",
        action="store_true",
        help="allow loopback and private addresses (refused by default)",
    )
    live.add_argument("--ignore-robots", action="store_true", help="do not obey robots.txt")
    live.add_argument("--concurrency", type=int, default=None, help="pages fetched at once")
    live.add_argument("--per-host-concurrency", type=int, default=None)
    live.add_argument(
        "--delay", type=float, default=None, help="seconds between request starts per host"
    )
    live.add_argument("--timeout", type=float, default=None, help="seconds per request")
    live.add_argument("--user-agent", default=None)
    live.add_argument(
        "--capture",
        type=Path,
        default=None,
        metavar="DIR",
        help="freeze every response fetched (and every failure) into a new "
        "snapshot in DIR, so this drift can be re-checked offline with "
        "--against DIR",
    )
    p.add_argument(
        "--url",
        action="append",
        default=[],
        dest="urls",
        metavar="URL",
        help="compare only this page (repeatable)",
    )
    p.add_argument(
        "--limit", type=int, default=None, help="compare only the first N pages (by URL)"
    )
    p.add_argument("--workers", type=int, default=None, help="extraction processes")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_drift)


def parse_connect_to(values: list[str]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        source, sep, target = value.partition("=")
        ok = sep and all(
            a.rpartition(":")[0] and a.rpartition(":")[2].isdigit() for a in (source, target)
        )
        if not ok:
            raise DrarenaError(f"--connect-to {value!r}: expected HOST:PORT=HOST:PORT")
        pairs.append((source.strip(), target.strip()))
    return tuple(pairs)


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise DrarenaError(f"{name} must be positive, got {value}")


def _drift_page(path: Path) -> bool:
    """Whether `path` is a page drift wrote (render_page's opening), so --json may replace it."""
    from drarena.drift.report import PAGE_START

    try:
        with path.open("rb") as f:
            return f.read(len(PAGE_START)) == PAGE_START
    except OSError:
        return False


def cmd_drift(args: argparse.Namespace) -> int:
    from drarena.drift.compare import DriftRequest, live_defaults, run_drift
    from drarena.drift.report import render_table
    from drarena.web.warc.manifest import load_manifest

    for name in ("concurrency", "per_host_concurrency", "timeout", "limit", "workers"):
        _positive("--" + name.replace("_", "-"), getattr(args, name))
    if args.delay is not None and args.delay < 0:
        raise DrarenaError(f"--delay must be >= 0, got {args.delay}")
    if not (args.snapshot / "manifest.json").is_file():
        raise DrarenaError(f"{args.snapshot}: not a snapshot folder (no manifest.json)")
    live = None
    if args.against == "live":
        live = live_defaults(
            load_manifest(args.snapshot).spec,
            user_agent=args.user_agent,
            timeout_s=args.timeout,
            concurrency=args.concurrency,
            per_host_concurrency=args.per_host_concurrency,
            delay_s=args.delay,
            allow_private=args.allow_private,
            connect_to=parse_connect_to(args.connect_to),
            robots=False if args.ignore_robots else None,
        )
    elif args.connect_to or args.allow_private or args.capture:
        raise DrarenaError(
            "--connect-to, --allow-private and --capture apply to --against live only"
        )
    # output paths are checked before the fetching, which can take minutes
    if args.json_out is not None:
        _check_json_out(args.json_out)
    if args.capture is not None and args.capture.exists() and not args.capture.is_dir():
        raise DrarenaError(f"--capture {args.capture}: exists and is not a folder")
    request = DriftRequest(
        args.snapshot,
        args.against,
        live,
        args.run,
        tuple(args.urls),
        args.limit,
        args.workers,
        progress=not args.no_progress,
        capture=args.capture,
    )
    report = run_drift(request)
    print(render_table(report))
    for path in _write_drift(report, args.json_out, args.run):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _check_json_out(json_out: Path) -> None:
    """--json OUT.json names a file drift may write, and its page OUT.html beside it one
    that is drift's or new."""
    if json_out.is_dir():
        raise DrarenaError(f"--json {json_out}: a folder; give a file name (OUT.json)")
    if json_out.suffix.lower() == ".html":  # the page goes beside it as OUT's stem.html
        raise DrarenaError(
            f"--json {json_out}: the HTML page is written beside the JSON as "
            f"{json_out.stem}.html; give the JSON a name of its own (OUT.json)"
        )
    page = json_out.with_name(json_out.stem + ".html")
    if page.exists() and not _drift_page(page):  # e.g. --json runs/x/report.json
        raise DrarenaError(
            f"--json {json_out}: the HTML page would replace {page}, which drift did "
            "not write; give the JSON another name"
        )


def _write_drift(report: DriftReport, json_out: Path | None, run: Path | None) -> list[Path]:
    """The report as JSON and an HTML page beside it, at --json and in the --run folder
    (drift.json), and its section spliced into the run's report.html; returns what was
    written."""
    from drarena.drift.report import drift_section, render_page, splice_section, write_json
    from drarena.files import write_atomic
    from drarena.ledger.folder import read_text

    # the run's report.html is read before anything is written: one that cannot be read
    # (not UTF-8, too large) is refused with nothing half done
    report_html = run / "report.html" if run is not None else None
    old_page = read_text(report_html) if report_html and report_html.is_file() else None
    written = []
    outs = []
    if json_out is not None:
        outs.append(json_out)
    if run is not None:
        outs.append(run / "drift.json")
    for out in outs:
        write_json(report, out)
        page = out.with_name(out.stem + ".html")
        write_atomic(page, render_page(report))
        written += [out, page]
    if report_html is not None and old_page is not None:
        write_atomic(report_html, splice_section(old_page, drift_section(report)))
        written.append(report_html)
    return written
