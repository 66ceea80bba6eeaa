"""CLI for the frozen web: `drarena snapshot crawl|import|export|verify|serve`.

(`drarena run replay RUN` belongs to the tournament: it re-executes a run from its model cache.)

Imports stay light here; the crawler, warcio and aiohttp load inside the command functions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from drarena.quoting import shown


def register(subparsers: Any) -> None:
    # the old combined form `drarena snapshot SPEC` (deprecated: `drarena snapshot crawl`)
    snap = subparsers.add_parser(
        "snapshot",
        help="crawl a spec into a WARC snapshot, or import/export archives",
        usage="drarena snapshot SPEC [--out DIR] [--resume] [--install-local-site]\n"
        "       drarena snapshot import NAME FILE_OR_DIR... [--out DIR] [--link|--copy]"
        " [--host H]... [--prefix URL]... [--mime T]... [--status N]... [--jobs N]\n"
        "       drarena snapshot export SNAPSHOT --wacz OUT.wacz",
        description="Freeze the pages a crawl spec names into snapshots/<name>/ (WARC + CDXJ + "
        "manifest.json). `import` builds the same layout from WARC files (gzipped or not), "
        "folders of them and WACZ packages made by any crawler; `export` writes a snapshot as a "
        "WACZ package for ReplayWeb.page or pywb.",
    )
    snap.add_argument(
        "spec", type=Path, help="crawl spec (e.g. corpus/pydocs.yaml), or `import` / `export`"
    )
    snap.add_argument("args", nargs="*", help="import: NAME FILE_OR_DIR...; export: SNAPSHOT")
    crawl_options(snap)
    imp = snap.add_argument_group("import")
    import_options(imp)
    exp = snap.add_argument_group("export")
    exp.add_argument("--wacz", type=Path, default=None, help="WACZ file to write")
    snap.set_defaults(func=cmd_snapshot, keep=None, intermixed="args")

    crawl = subparsers.add_parser(
        "snapshot-crawl",
        help="crawl a spec into a WARC snapshot",
        description="Freeze the pages a crawl spec names into snapshots/<name>/ (WARC + CDXJ + "
        "manifest.json).",
    )
    crawl.add_argument("spec", type=Path, help="crawl spec, e.g. corpus/pydocs.yaml")
    crawl_options(crawl)
    crawl.set_defaults(func=cmd_crawl)

    imp = subparsers.add_parser(
        "snapshot-import",
        help="build a snapshot from WARC files, folders of them or WACZ",
        usage="drarena snapshot import NAME FILE_OR_DIR... [--out DIR] [--link|--copy]"
        " [--host H]... [--prefix URL]... [--mime T]... [--status N]... [--jobs N]",
        description="Build the snapshot layout from WARC files (gzipped or not), folders of "
        "them and WACZ packages made by any crawler.",
    )
    imp.add_argument(
        "args",
        nargs="+",
        metavar="NAME FILE_OR_DIR",
        help="snapshot name, then the archives to import",
    )
    imp.add_argument(
        "--out", type=Path, default=None, help="snapshot folder (default: snapshots/<name>)"
    )
    import_options(imp)
    imp.add_argument("--no-progress", action="store_true", help="no progress bar")
    imp.set_defaults(
        func=cmd_import,
        keep=None,
        resume=False,
        install_local_site=False,
        wacz=None,
        intermixed="args",
    )

    exp = subparsers.add_parser(
        "snapshot-export",
        help="write a snapshot as a WACZ package",
        description="Write a snapshot as a WACZ package for ReplayWeb.page or pywb.",
    )
    exp.add_argument("args", nargs=1, metavar="SNAPSHOT", help="snapshot folder")
    exp.add_argument("--wacz", type=Path, default=None, help="WACZ file to write (required)")
    exp.set_defaults(
        func=cmd_export,
        keep=None,
        host=[],
        prefix=[],
        mime=[],
        status=[],
        out=None,
        resume=False,
        install_local_site=False,
    )

    ver = subparsers.add_parser(
        "verify",
        help="recompute a snapshot's digests",
        description="Check every file digest, record block digest "
        "and the fingerprint of a snapshot; exit 1 on any problem.",
    )
    ver.add_argument("snapshot", type=Path, help="snapshot folder")
    ver.set_defaults(func=cmd_verify)

    rep = subparsers.add_parser(
        "replay-snapshot",
        help="serve a snapshot over HTTP on 127.0.0.1",
        description="Serve captured pages as they were captured "
        "(status, headers, body, redirects); 404 otherwise.",
    )
    rep.add_argument("snapshot", type=Path, help="snapshot folder")
    rep.add_argument("--port", type=int, default=8765, help="port (default 8765, 0 = any)")
    rep.add_argument(
        "--origin",
        default=None,
        help="captured origin that request paths map to (default: first seed's)",
    )
    rep.set_defaults(func=cmd_replay)


def _ensure_local_site(root: Path, package: str | None, install: bool) -> None:
    from drarena.errors import DrarenaError
    from drarena.web.crawling.spec import check_debian_package

    if root.is_dir():
        return
    if not package:
        raise DrarenaError(f"local_site.root {root} does not exist")
    try:  # validated with the spec already; checked again here, where it meets root
        check_debian_package(package)
    except ValueError as exc:
        raise DrarenaError(f"local_site.apt_package: {exc}") from None
    if not install:
        raise DrarenaError(
            f"local_site.root {root} does not exist; install it with "
            f"`apt-get install {package}` or pass --install-local-site"
        )
    # `--` ends apt-get's options: the name can only ever be read as a package name
    apt = ["apt-get", "install", "-y", "--no-install-recommends", "--", package]
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            raise DrarenaError(f"installing {package} needs root; run `sudo {' '.join(apt)}`")
        apt = ["sudo", "-n", *apt]
    print(f"drarena: installing {package} ({' '.join(apt)})", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(apt, env=env).returncode != 0:
        update = ["apt-get", "update"] if apt[0] != "sudo" else ["sudo", "-n", "apt-get", "update"]
        subprocess.run(update, env=env)
        if subprocess.run(apt, env=env).returncode != 0:
            raise DrarenaError(f"apt-get could not install {package}")
    if not root.is_dir():
        raise DrarenaError(f"{package} is installed but {root} is still missing")


_IMPORT_ONLY = ("keep", "host", "prefix", "mime", "status")  # crawl: all empty


def crawl_options(parser: Any) -> None:
    """The options of `snapshot crawl`, on the crawl command and on the older combined
    `snapshot SPEC|import|export` parser alike."""
    parser.add_argument(
        "--out", type=Path, default=None, help="snapshot folder (default: snapshots/<name>)"
    )
    parser.add_argument("--resume", action="store_true", help="continue an interrupted snapshot")
    parser.add_argument(
        "--install-local-site",
        action="store_true",
        help="apt-get install the spec's local_site.apt_package when missing",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def import_options(imp: Any) -> None:
    """The options of `snapshot import` (scope filters, link or copy, jobs), on the import
    command and on the older combined `snapshot SPEC|import|export` parser alike."""
    how = imp.add_mutually_exclusive_group()
    how.add_argument(
        "--link",
        dest="keep",
        action="store_const",
        const="link",
        help="hard-link valid WARC files into the snapshot (error if impossible)",
    )
    how.add_argument(
        "--copy",
        dest="keep",
        action="store_const",
        const="copy",
        help="copy valid WARC files (default: hard link, else copy)",
    )
    imp.add_argument(
        "--host",
        action="append",
        default=[],
        help="keep captures of this host (and subdomains; host:port for one port)",
    )
    imp.add_argument(
        "--prefix",
        action="append",
        default=[],
        help="keep captures whose URL starts with this prefix",
    )
    imp.add_argument(
        "--mime",
        action="append",
        default=[],
        help="keep captures of this media type (text/html, or text/*)",
    )
    imp.add_argument(
        "--status",
        action="append",
        default=[],
        help="keep captures with this status (200) or class (2xx)",
    )
    imp.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="files imported at once, one process each (default: the CPU count, "
        "at most 4; the result is the same for any value)",
    )
    imp.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local (default: --jobs processes here) or ray (a Ray task per file; "
        "needs `make setup-scale`); the snapshot is the same bytes",
    )
    imp.add_argument(
        "--address",
        default=None,
        help="with --engine ray: a running Ray cluster (host:port, or `auto`; the output "
        "folder must be on a filesystem every node shares); default: a local Ray",
    )


def cmd_snapshot(args: argparse.Namespace) -> int:
    from drarena.errors import DrarenaError

    action = str(args.spec)
    if action == "import":
        return cmd_import(args)
    if action == "export":
        return cmd_export(args)
    if args.args:
        raise DrarenaError(
            f"snapshot {action}: unexpected arguments {' '.join(args.args)} "
            "(a crawl takes one spec; did you mean `snapshot import`?)"
        )
    used = [f"--{n}" for n in _IMPORT_ONLY if getattr(args, n)] + (["--wacz"] if args.wacz else [])
    if used:
        raise DrarenaError(
            f"snapshot {action}: {', '.join(used)} only apply to "
            "`snapshot import` / `snapshot export`"
        )
    return cmd_crawl(args)


def cmd_import(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from drarena.errors import DrarenaError
    from drarena.web.warc.importer import ImportOptions, import_archives
    from drarena.web.warc.scope import ImportScope

    if len(args.args) < 2:
        raise DrarenaError(
            "snapshot import: expected NAME FILE_OR_DIR... (e.g. "
            "`drarena snapshot import mysite crawl.warc.gz`)"
        )
    if args.resume or args.install_local_site or args.wacz:
        raise DrarenaError(
            "snapshot import: --resume, --install-local-site and --wacz do not apply"
        )
    try:
        scope = ImportScope(
            hosts=tuple(args.host),
            prefixes=tuple(args.prefix),
            mimes=tuple(args.mime),
            statuses=tuple(args.status),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        option = {
            "hosts": "--host",
            "prefixes": "--prefix",
            "mimes": "--mime",
            "statuses": "--status",
        }.get(str(err["loc"][0]), str(err["loc"][0]))
        raise DrarenaError(
            f"snapshot import: {option}: {str(err['msg']).removeprefix('Value error, ')}"
        ) from None
    if args.jobs is None:
        args.jobs = max(1, min(os.cpu_count() or 1, 4))
    if args.jobs < 1:
        raise DrarenaError(f"snapshot import: --jobs {args.jobs}: must be at least 1")
    name, *inputs = args.args
    result = import_archives(
        name,
        [Path(i) for i in inputs],
        args.out,
        ImportOptions(
            keep=args.keep or "auto",
            scope=scope,
            progress=not args.no_progress,
            jobs=args.jobs,
            engine=getattr(args, "engine", "local"),
            address=getattr(args, "address", None),
        ),
    )
    print(result.summary())
    for item in result.files:
        for problem in item.get("damage", [])[:5]:
            print(f"{item['path']}: damaged: {problem}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from drarena.errors import DrarenaError

    if len(args.args) != 1 or args.wacz is None:
        raise DrarenaError("snapshot export: expected SNAPSHOT --wacz OUT.wacz")
    used = [f"--{n}" for n in _IMPORT_ONLY if getattr(args, n)]
    if used or args.out or args.resume or args.install_local_site:
        raise DrarenaError("snapshot export: only --wacz applies")
    from drarena.web.warc.wacz import export_wacz

    report = export_wacz(Path(args.args[0]), args.wacz)
    print(report.summary())
    return 0


def _cancel_on_signals(stopped: list[int], crawler: Any) -> None:
    """SIGTERM (kill, systemd, a CI timeout) and Ctrl-C stop the crawl alike: the crawler is
    told to stop after the page it is committing and the running task is cancelled, so the
    WARC being written is finished and the manifest marks the snapshot incomplete, ready for
    --resume. The stop flag makes it certain: a cancellation that lands inside a fetch can be
    reported by the HTTP client as a timeout and swallowed as a fetch error. Only the first
    signal acts: a second one must not break into the cleanup that writes the manifest."""
    import asyncio
    import contextlib
    import signal

    task = asyncio.current_task()

    def on_signal(signum: int) -> None:
        if not stopped and task is not None:
            stopped.append(signum)
            crawler.stop_requested = True
            task.cancel()

    # no Unix signals (Windows), or not the main thread: the signals keep their defaults
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)


def cmd_crawl(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from drarena.web.crawling.crawl import Crawler
    from drarena.web.crawling.spec import load_spec
    from drarena.web.serving.serve import serving, static_app
    from drarena.web.warc.manifest import Manifest

    spec = load_spec(args.spec)
    out = args.out if args.out is not None else Path("snapshots") / spec.name
    crawler = Crawler(spec, out, resume=args.resume, progress=not args.no_progress)
    stopped: list[int] = []

    async def main() -> Manifest | None:
        _cancel_on_signals(stopped, crawler)
        if crawler.up_to_date():
            return None
        site = spec.local_site
        if site is None:
            return await crawler.run()
        _ensure_local_site(site.root, site.apt_package, args.install_local_site)
        async with serving(static_app(site.root), site.host, site.port):
            return await crawler.run()

    try:
        manifest = asyncio.run(main())
    except asyncio.CancelledError:
        if not stopped:
            raise
        left = (
            f"{out} is left incomplete (continue it with --resume)"
            if (out / "manifest.json").is_file()
            else "no snapshot was written"
        )
        word = "interrupted" if stopped[0] == signal.SIGINT else "terminated"
        print(f"drarena: {word}; {left}", file=sys.stderr)
        return 128 + stopped[0]
    if manifest is None:
        print(f"{out}: up to date (complete snapshot of this spec)")
        return 0
    c = crawler.counts
    print(
        f"{out}: {c.pages} pages, {c.responses} responses ({c.revisits} revisits), "
        f"{c.redirects} redirects, {c.http_errors} HTTP errors, {c.fetch_errors} fetch errors, "
        f"{c.robots_blocked} blocked by robots.txt, {c.bytes / 1e6:.1f} MB; "
        f"fingerprint {manifest.fingerprint[:16]}"
    )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from drarena.web.warc.snapshot import Snapshot

    with Snapshot.open(args.snapshot) as snap:
        report = snap.verify()
    for problem in report.problems:
        print(f"{shown(str(args.snapshot), 1000)}: {shown(problem, 1000)}")
    state = "complete" if report.complete else "INCOMPLETE (resume with --resume)"
    verdict = "OK" if report.ok else f"FAILED ({len(report.problems)} problem(s))"
    print(
        f"{args.snapshot}: {verdict}: {report.files_checked} files, {report.records_checked} "
        f"records, {state}, fingerprint {snap.fingerprint[:16]}"
    )
    return 0 if report.ok else 1


def cmd_replay(args: argparse.Namespace) -> int:
    import asyncio

    from drarena.web.serving.serve import default_origin, replay_app, serve_forever
    from drarena.web.warc.snapshot import Snapshot

    with Snapshot.open(args.snapshot) as snap:
        origin = args.origin or default_origin(snap)
        banner = (  # the name and origin are the snapshot's: shown, and never format()ted
            f"replaying {shown(snap.name)} ({len(snap)} captures of {shown(origin, 500)}) on "
            "http://127.0.0.1:{port}/  (Ctrl-C stops)"
        )
        try:
            asyncio.run(serve_forever(replay_app(snap, origin), "127.0.0.1", args.port, banner))
        except KeyboardInterrupt:
            return 0
    return 0
