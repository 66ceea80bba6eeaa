"""`drarena snapshot import`: freeze archives made by other tools (wget, Heritrix, Browsertrix,
Webrecorder, Common Crawl) as a drarena snapshot, with the layout of a crawl.

Why this shape: a valid gzip-per-record (or uncompressed) WARC file is kept byte for byte (hard
link, else copy) and only indexed, so its digests, and the snapshot fingerprint, are the
source's; the rest is copied or rewritten (importfile.py). Memory stays flat: records stream
through a sliding window (warcfile.Window), their blocks are never held, and CDXJ lines are
staged on disk. Files can be imported in parallel worker processes, with the same result.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import sys
import threading
import zlib
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.files import disk_full
from drarena.web.warc.importfile import (
    FileJob,
    FileResult,
    Progress,
    RangeResult,
    Source,
    Staging,
    add_originals,
    import_file,
    index_range,
    place,
    plan_names,
)
from drarena.web.warc.manifest import (
    CDXJ_NAME,
    MANIFEST_NAME,
    Counts,
    FileDigest,
    Manifest,
    fingerprint,
    load_manifest,
    write_manifest,
)
from drarena.web.warc.scope import ImportScope
from drarena.web.warc.urls import safe_file_name
from drarena.web.warc.warcfile import GZIP_MAGIC, find_split, sha256_file
from drarena.web.warc.writer import utc_now, warc_date

KEEP_MODES = ("auto", "link", "copy")
BUILD_MARK = ".drarena-import"  # in the build folder: only a folder holding it is removed
WARC_SUFFIXES = (".warc", ".warc.gz", ".wacz")


# --- inputs ----------------------------------------------------------------------------------


def expand_inputs(inputs: Sequence[Path]) -> list[Path]:
    """Files as given, folders expanded to their WARC/WACZ files (sorted, recursive)."""
    out: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(WARC_SUFFIXES)
            )
            if not found:
                raise DrarenaError(f"{path}: no .warc, .warc.gz or .wacz file in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise DrarenaError(f"{path}: no such file or folder")
    return out


def sniff(path: Path) -> bool:
    """True for gzip, False for an uncompressed WARC; DrarenaError for anything else."""
    with path.open("rb") as fh:
        lead = fh.read(4096)
    if not lead:
        raise DrarenaError(f"{path}: empty file (no WARC records)")
    if lead.startswith(b"WARC/1."):
        return False
    if lead.startswith(b"PK\x03\x04"):
        raise DrarenaError(f"{path}: a zip file, but not named .wacz (rename it to import it)")
    if not lead.startswith(GZIP_MAGIC):
        raise DrarenaError(f"{path}: not a WARC file (starts with {lead[:16]!r})")
    try:
        head = zlib.decompressobj(wbits=31).decompress(lead, 16)
    except zlib.error:
        return True  # a damaged first member: the scan counts it and reads on
    if head and not head.startswith(b"WARC/1."[: len(head)]):
        raise DrarenaError(
            f"{path}: a gzip file, but not a WARC file (content starts with {head[:16]!r})"
        )
    return True


# --- worker processes ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Task:
    """One file's work, or one byte range of a kept file (`span`), as sent to a worker."""

    build: Path
    scope: ImportScope
    keep: str
    source: Source
    index: int
    names: dict[str, str]
    span: tuple[int, int] | None = None
    part: int = 0
    read_from: Path | None = None

    @property
    def staging(self) -> Path:
        return self.build / f".staging-{self.index:05d}-{self.part:03d}.sqlite"


_SHARED: Any = None  # the worker's progress counter (set by _init_worker)


def _init_worker(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def run_task(task: _Task, bar: Any = None) -> tuple[FileResult | RangeResult, Counts]:
    """Import one file, or index one range, into its own staging table (merged by the
    parent)."""
    staging = Staging(task.staging)
    job = FileJob(
        task.build,
        task.scope,
        task.keep,
        staging,
        task.names,
        progress=Progress(bar=bar, shared=_SHARED),
    )
    try:
        result: FileResult | RangeResult
        if task.span is None or task.read_from is None:
            result = import_file(job, task.source, task.index)
        else:
            result = index_range(job, task.read_from, task.source.gzipped, task.index, *task.span)
        job.progress.flush()
        staging.flush()
        staging.db.commit()
    finally:
        staging.close()
    return result, job.counts


def _run_tasks(
    tasks: list[_Task], jobs: int, bar: Any, engine: str = "local", address: str | None = None
) -> list[tuple[FileResult | RangeResult, Counts]]:
    if engine == "ray":
        return _run_tasks_ray(tasks, jobs, bar, address)
    if jobs <= 1 or len(tasks) == 1:
        return [run_task(task, bar) for task in tasks]
    import multiprocessing
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    shared = ctx.Array("q", 2)
    seen = 0
    with ProcessPoolExecutor(
        min(jobs, len(tasks)), mp_context=ctx, initializer=_init_worker, initargs=(shared,)
    ) as pool:
        futures = [pool.submit(run_task, task) for task in tasks]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
            if any(f.exception() for f in done):
                pool.shutdown(cancel_futures=True)
                break
            if bar is not None:
                with shared.get_lock():
                    moved, records = shared[0], shared[1]
                bar.update(moved - seen)
                seen = moved
                bar.set_postfix_str(f"{records} records", refresh=False)
        for future in futures:  # the first failure, not a cancelled neighbour's error
            if future.done() and not future.cancelled() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
        return [f.result() for f in futures]


def _run_tasks_ray(
    tasks: list[_Task], jobs: int, bar: Any, address: str | None
) -> list[tuple[FileResult | RangeResult, Counts]]:
    """Each task as a Ray task (drarena.rayrun), results in task order, so the merge and
    the snapshot are those of the local path. Each writes its own staging table in the
    build folder, which on a cluster must be on a filesystem the nodes share."""
    from drarena import rayrun

    def advance(i: int, result: tuple[FileResult | RangeResult, Counts]) -> None:
        if bar is not None:
            span = tasks[i].span
            bar.update(span[1] - span[0] if span else tasks[i].source.path.stat().st_size)

    with rayrun.session(address, jobs) as ray:
        cpus = max(1, int(ray.cluster_resources().get("CPU", jobs)))
        return list(rayrun.ordered_map(ray, run_task, tasks, in_flight=2 * cpus, on_done=advance))


# --- one large file in parallel ---------------------------------------------------------------

SPLIT_MIN = 32 << 20  # bytes per range, at least: below this a worker costs more than it saves


def split_points(src: Source, jobs: int) -> list[int]:
    """Range bounds [0, s1, ..., size] for importing one file with `jobs` workers, each split
    moved forward to the next record start; [] to import it whole (small, a whole-file
    gzip, no record start found)."""
    size = src.path.stat().st_size
    parts = min(jobs, size // SPLIT_MIN)
    if parts < 2 or (src.gzipped and find_split(src.path, True, 0, 1) != 0):
        return []
    bounds = [0]
    for i in range(1, parts):
        guess = size * i // parts
        at = find_split(src.path, src.gzipped, max(guess, bounds[-1] + 1), size // parts)
        if at is not None and at < size:
            bounds.append(at)
    return [*bounds, size] if len(bounds) > 1 else []


class _Hasher(threading.Thread):
    """The sha256 of a kept file (and its copy, with --copy), while workers index it."""

    def __init__(self, path: Path, copy_to: Path | None) -> None:
        super().__init__(daemon=True)
        self.path, self.copy_to = path, copy_to
        self.sha = ""
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        digest = hashlib.sha256()
        try:
            with (
                self.path.open("rb") as fh,
                self.copy_to.open("xb") if self.copy_to else nullcontext() as out,
            ):
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                    if out is not None:
                        out.write(chunk)
        except BaseException as exc:  # re-raised in the parent by result()
            self.error = exc
        self.sha = digest.hexdigest()

    def result(self) -> str:
        self.join()
        if self.error is not None:
            raise self.error
        return self.sha


class _Split:
    """A kept file indexed in ranges: placed (linked, copied or moved) by the parent, which
    hashes it meanwhile; read again whole, in one process, if a range meets damage, a
    multi-record member, or ends anywhere but at the next range's start (a false split)."""

    def __init__(self, task: _Task, bounds: list[int], kept: str, read_from: Path) -> None:
        self.task, self.bounds, self.kept, self.read_from = task, bounds, kept, read_from
        self.target = task.build / task.names["keep"]
        self.hasher = _Hasher(read_from, self.target if kept == "copy" else None)

    def tasks(self) -> list[_Task]:
        return [
            replace(self.task, span=(a, b), part=k + 1, read_from=self.read_from)
            for k, (a, b) in enumerate(itertools.pairwise(self.bounds))
        ]

    def result(self, parts: list[RangeResult]) -> FileResult | None:
        """The file's result, or None when it must be imported whole."""
        sha = self.hasher.result()
        inner = zip(parts, self.bounds[1:-1], strict=False)
        if any(p.trouble for p in parts) or any(p.reached != at for p, at in inner):
            if self.kept == "moved":
                os.replace(self.target, self.task.source.path)
            else:
                self.target.unlink(missing_ok=True)
            return None
        src = self.task.source
        if src.declared_sha256 and sha != src.declared_sha256:
            raise DrarenaError(
                f"{src.label}: changed while it was read (sha256 {sha[:12]}..., "
                f"declared {src.declared_sha256[:12]}...)"
            )
        size = self.target.stat().st_size
        return FileResult(
            src,
            sha,
            size,
            self.kept,
            [
                FileDigest(
                    name=self.target.name,
                    sha256=sha,
                    size=size,
                    records=sum(p.records for p in parts),
                )
            ],
        )


def read_whole(task: _Task, bar: Any) -> tuple[FileResult | RangeResult, Counts]:
    """A file whose split failed, imported whole in this process (as with --jobs 1)."""
    return run_task(task, bar)


def _merge(
    tasks: list[_Task],
    done: list[tuple[FileResult | RangeResult, Counts]],
    splits: dict[int, _Split],
    staging: Staging,
    bar: Any,
) -> tuple[list[FileResult], Counts]:
    """Per source, in order: its result, its counts and its staged lines, as one process
    would have made them."""
    results: list[FileResult] = []
    counts = Counts()
    for index in sorted({t.index for t in tasks}):
        mine = [(t, r, part) for t, (r, part) in zip(tasks, done, strict=True) if t.index == index]
        result = mine[0][1]
        if index in splits:
            ranges = [r for _, r, _ in mine if isinstance(r, RangeResult)]
            result = splits[index].result(ranges)  # type: ignore[assignment]
            if result is None:
                for task, _, _ in mine:
                    task.staging.unlink()
                if bar is not None:
                    bar.total += splits[index].bounds[-1]
                whole, part = read_whole(splits[index].task, bar)
                mine = [(splits[index].task, whole, part)]
                result = whole
        assert isinstance(result, FileResult)
        results.append(result)
        for task, _, part in mine:
            counts = counts.plus(part)
            staging.absorb(task.staging)
    return results, counts


# --- the whole import --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What `import_archives` did (`up_to_date`: nothing, the snapshot already matched)."""

    out: Path
    manifest: Manifest
    up_to_date: bool
    files: tuple[dict[str, Any], ...] = ()

    def summary(self) -> str:
        c = self.manifest.counts
        if self.up_to_date:
            return f"{self.out}: up to date (imported from the same files and scope)"
        skipped = ", ".join(f"{k} {v}" for k, v in c.skipped.items()) or "none"
        damaged = sum(int(f.get("damaged_records", 0)) for f in self.files)
        kept = ", ".join(sorted({str(f["kept"]) for f in self.files}))
        return (
            f"{self.out}: {c.records} records from {len(self.files)} file(s) ({kept}); "
            f"indexed {c.responses} captures ({c.revisits} revisits), {c.pages} pages, "
            f"{c.redirects} redirects, {c.http_errors} HTTP errors; damaged records "
            f"{damaged}; skipped: {skipped}; fingerprint {self.manifest.fingerprint[:16]}"
        )


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """How `import_archives` imports. `keep`: how a kept WARC file reaches the snapshot
    (KEEP_MODES: "auto" hard-links, else copies). `scope`: which captures are indexed (an
    active scope rewrites the files). `progress`: a progress bar on stderr. `jobs` > 1: that
    many files (or byte ranges of one large file) at once in worker processes (same result);
    `engine` "ray" runs each as a Ray task instead (drarena.rayrun, on the cluster at
    `address`; same result). `clock`: what names the import's start and end (tests fix it)."""

    keep: str = "auto"
    scope: ImportScope = field(default_factory=ImportScope)
    progress: bool = True
    jobs: int = 1
    clock: Callable[[], datetime] = utc_now
    engine: str = "local"
    address: str | None = None


def import_archives(
    name: str, inputs: Sequence[Path], out: Path | None = None, options: ImportOptions | None = None
) -> ImportResult:
    """Build snapshot `out` (default snapshots/NAME) from WARC files, folders and WACZ files,
    as `options` say (default: ImportOptions())."""
    from drarena.rayrun import check_engine

    options = options or ImportOptions()
    check_engine(options.engine)
    safe_file_name(name, "snapshot name")
    if options.keep not in KEEP_MODES:
        raise DrarenaError(f"keep mode {options.keep!r}: expected one of {', '.join(KEEP_MODES)}")
    out = Path(out) if out is not None else Path("snapshots") / name
    files = expand_inputs(inputs)
    plain = [f for f in files if not f.name.lower().endswith(".wacz")]
    for path in plain:
        sniff(path)
    started = warc_date(options.clock())
    if (out / MANIFEST_NAME).is_file():
        return _up_to_date(out, name, files, options.scope)
    if out.exists():
        raise DrarenaError(f"{out}: exists and is not a snapshot; remove it or pass --out")
    build = out.with_name(f".{out.name}.importing")
    mark = build / BUILD_MARK
    if build.exists() or build.is_symlink():
        if not mark.is_file() or build.is_symlink():  # not a build folder drarena made
            raise DrarenaError(
                f"{build}: exists and was not made by drarena snapshot import; "
                "remove it or pass another --out"
            )
        shutil.rmtree(build)  # an interrupted import's leftovers
    build.mkdir(parents=True)
    mark.touch()
    try:
        sources = _sources(files, build)
        manifest, results = _run(name, sources, build, options, started)
        mark.unlink()
        os.replace(build, out)
    except BaseException as exc:
        shutil.rmtree(build, ignore_errors=True)
        if disk_full(exc):  # one line, and the build folder (all that was written) is gone
            raise DrarenaError(
                f"{out}: no room left to write the import ({exc}); nothing was kept"
            ) from None
        raise
    return ImportResult(out, manifest, False, tuple(r.record() for r in results))


def _sources(files: list[Path], build: Path) -> list[Source]:
    sources: list[Source] = []
    for path in files:
        if not path.name.lower().endswith(".wacz"):
            sources.append(Source(path, str(path.resolve()), sniff(path)))
            continue
        from drarena.web.warc.wacz import WaczPackage

        with WaczPackage.open(path) as package:
            problems = package.verify()
            if problems:
                more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
                raise DrarenaError(f"{path}: {problems[0]}{more}")
            budget, written = package.most_written(), 0
            for number, member in enumerate(package.warcs):
                dest = build / f".wacz-{len(sources):05d}-{number}"
                package.extract_warc(member, dest)
                written += dest.stat().st_size
                if written > budget:  # bounded by the package's size, whatever it lists
                    raise DrarenaError(
                        f"{path}: its WARC files hold more than a package of "
                        f"{path.stat().st_size} bytes can ({budget}); refused"
                    )
                try:
                    gz = sniff(dest)
                except DrarenaError as exc:
                    raise DrarenaError(
                        f"{path}: {member.name}: {str(exc).split(': ', 1)[-1]}"
                    ) from None
                sources.append(
                    Source(dest, f"{path.resolve()}#{member.name}", gz, True, member.sha256)
                )
    return sources


def _run(
    name: str, sources: list[Source], build: Path, options: ImportOptions, started: str
) -> tuple[Manifest, list[FileResult]]:
    """Import `sources` into `build`: the files placed, the CDXJ index and the manifest
    written."""
    bar = _progress_bar(name, sources) if options.progress else None
    names = plan_names(name, sources)
    staging = Staging(build / ".staging.sqlite")
    counts = Counts()
    splits: dict[int, _Split] = {}
    try:
        tasks = _plan_tasks(sources, build, names, options, splits)
        done = _run_tasks(tasks, options.jobs, bar, options.engine, options.address)
        results, counts = _merge(tasks, done, splits, staging, bar)
        if options.scope.active:
            counts = add_originals(staging, counts, build, sources, names, results)
        unresolved = staging.unresolved()  # no longer revisits (nor responses): skipped
        counts = counts.plus(
            Counts(
                responses=-unresolved,
                revisits=-unresolved,
                skipped={"revisit-unresolved": unresolved},
            )
        )
        cdxj = build / CDXJ_NAME
        lines = staging.write_sorted(cdxj)
    finally:
        if bar is not None:
            bar.set_postfix_str(f"{counts.records} records", refresh=False)
            bar.close()
        staging.close()
        for split in splits.values():
            split.hasher.join()
        for leftover in [*build.glob(".staging*.sqlite"), *build.glob(".wacz-*")]:
            leftover.unlink()  # staging tables; WACZ members that were copied, not moved
    if lines == 0:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(counts.skipped.items()) if v)
        raise DrarenaError(
            f"{', '.join(s.label for s in sources)}: nothing importable: "
            f"{counts.records} records, none an HTTP capture in scope "
            f"({skipped or 'no records'})"
        )
    index = FileDigest(
        name=CDXJ_NAME, sha256=sha256_file(cdxj), size=cdxj.stat().st_size, records=lines
    )
    manifest = _manifest(name, options, started, results, counts, index)
    write_manifest(build, manifest)
    return manifest, results


def _progress_bar(name: str, sources: list[Source]) -> Any:
    """A tqdm bar over the sources' bytes, on stderr."""
    from tqdm import tqdm

    return tqdm(
        total=sum(s.path.stat().st_size for s in sources),
        desc=f"import {name}",
        unit="B",
        unit_scale=True,
        unit_divisor=1000,
        file=sys.stderr,
        mininterval=0.5,
    )


def _plan_tasks(
    sources: list[Source],
    build: Path,
    names: list[dict[str, str]],
    options: ImportOptions,
    splits: dict[int, _Split],
) -> list[_Task]:
    """One task per source, or one per byte range of a large kept file, whose split is filed
    in `splits` as it is made (so the caller joins its hasher however the import ends)."""
    tasks: list[_Task] = []
    for i, src in enumerate(sources):
        task = _Task(build, options.scope, options.keep, src, i, names[i])
        bounds = split_points(src, options.jobs) if not options.scope.active else []
        if not bounds:
            tasks.append(task)
            continue
        placed = place(src, build / names[i]["keep"], options.keep)
        split = splits[i] = _Split(task, bounds, *placed)
        tasks.extend(split.tasks())
    return tasks


def _manifest(
    name: str,
    options: ImportOptions,
    started: str,
    results: list[FileResult],
    counts: Counts,
    index: FileDigest,
) -> Manifest:
    """The import's manifest: its sources and scope, its WARC files, the CDXJ `index`."""
    warc_files = tuple(d for r in results for d in r.outputs)
    scope = options.scope
    spec = {
        "import": {
            "sources": [r.record() for r in results],
            "scope": scope.model_dump(mode="json") if scope.active else None,
            "keep": options.keep,
        }
    }
    return Manifest(
        name=name,
        complete=True,
        spec=spec,
        software={"drarena": __version__, "python": sys.version.split()[0]},
        started_at=started,
        ended_at=warc_date(options.clock()),
        warc_files=warc_files,
        cdxj=index,
        counts=counts,
        fingerprint=fingerprint(warc_files),
    )


def _wacz_member_same(source: str, sha256: str, declared: dict[str, dict[str, str]]) -> bool:
    """Whether `package.wacz#member` still declares the sha256 the import recorded. Why the
    declaration, not the bytes: it is what the import checked the member against, and reading
    datapackage.json costs nothing, where hashing every member again would cost a whole read
    of the package; a WACZ overwritten by another export declares other hashes."""
    from drarena.web.warc.wacz import WaczPackage

    package, _, member = source.partition("#")
    if package not in declared:
        try:
            with WaczPackage.open(Path(package)) as opened:
                declared[package] = {m.name: m.sha256 for m in opened.warcs}
        except (DrarenaError, OSError):
            declared[package] = {}
    return declared[package].get(member) == sha256


def _up_to_date(out: Path, name: str, files: list[Path], scope: ImportScope) -> ImportResult:
    manifest = load_manifest(out)
    spec = manifest.spec.get("import") if isinstance(manifest.spec, dict) else None
    same = (
        isinstance(spec, dict)
        and manifest.name == name
        and spec.get("scope") == (scope.model_dump(mode="json") if scope.active else None)
    )
    if same:
        recorded = spec["sources"] if isinstance(spec, dict) else []
        wanted = {str(p.resolve()) for p in files}
        paths = {str(s["path"]).split("#")[0] for s in recorded}
        declared: dict[str, dict[str, str]] = {}  # per WACZ: member -> its declared sha256
        same = paths == wanted and all(
            _wacz_member_same(str(s["path"]), str(s["sha256"]), declared)
            if "#" in str(s["path"])
            else (Path(s["path"]).is_file() and sha256_file(Path(s["path"])) == s["sha256"])
            for s in recorded
        )
    if not same:
        raise DrarenaError(f"{out}: already holds a different snapshot; remove it or pass --out")
    return ImportResult(out, manifest, True)
