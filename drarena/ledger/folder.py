"""A run folder: header, finished matches, the canonical log, leaderboard and timings.

Layout of runs/<name>/:
  run.json           header: config, fingerprints, prompt hashes, versions, git revision
  matches/<id>.json  one file per finished match, written atomically as it finishes
                     (a kill at any moment loses at most the matches in flight)
  matches.jsonl      the canonical log: every finished match in plan order, one per line
  timings.jsonl      wall-clock figures (differ on every run, so kept out of the log)
  leaderboard.md/.csv/.json, report.html
  llm-cache.sqlite   every model call, for replay

A folder `drarena run replay` writes has `"replay_of": <source run>` in its run.json: only such a
folder is ever emptied, by a replay of that same run, and then only of the files a replay writes
(REPLAY_FILES).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from drarena.errors import DrarenaError, one_line
from drarena.files import (
    is_temp_of,
    open_append,
    open_input,
    own_folder,
    read_bounded,
    refuse_link,
    temp_target,
    write_atomic,
    write_error,
)
from drarena.ledger.header import RUN_SCHEMA_VERSION, RunHeader
from drarena.ledger.records import SCHEMA_VERSION, AnswerTiming, MatchRecord
from drarena.quoting import shown

REPLAY_MARK = "replay_of"
REPLAY_FILES = (
    "run.json",
    "matches.jsonl",
    "timings.jsonl",
    "leaderboard.md",
    "leaderboard.csv",
    "leaderboard.json",
    "report.html",
)

# Bounds on what a reader of a run folder holds in memory, far above anything drarena writes:
# one match record (a line of matches.jsonl, a matches/<id>.json) holds the full reports of at
# most a few dozen answers, a few KiB each in real runs (tests/arena/fixtures/recorded-run:
# 7 KiB); a whole file read at once (run.json, timings.jsonl, comparison.json) is a few KiB
# to a few MiB. A larger one is damaged or not drarena's, and is refused before it is read.
MAX_RECORD_BYTES = 64 << 20
MAX_TEXT_BYTES = 64 << 20


def read_text(path: Path, limit: int = MAX_TEXT_BYTES) -> str:
    """A run file's text, read bounded; bytes that are not UTF-8 are one line naming the file
    and the line they are on."""
    data = read_bounded(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DrarenaError(f"{path}:{line}: not UTF-8 (byte {exc.start})") from None


def jsonl_lines(path: Path) -> Iterator[tuple[str, str]]:
    """(`path:N`, text) for each line of a JSONL file, read one line at a time: a line over
    MAX_RECORD_BYTES is refused having read only that much of it, and a line that is not UTF-8
    is named by its number. Split on newlines only (str.splitlines would also split a record
    at a U+2028 or U+0085 inside a string, which to_json writes unescaped)."""
    with open_input(path) as f:  # a device or FIFO in its place: one line, no hang
        for n, raw in enumerate(iter(lambda: f.readline(MAX_RECORD_BYTES + 1), b""), 1):
            where = f"{path}:{n}"
            if len(raw) > MAX_RECORD_BYTES:
                raise DrarenaError(f"{where}: line longer than {MAX_RECORD_BYTES} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DrarenaError(f"{where}: not UTF-8") from None
            yield where, text


def append_whole(path: Path, data: bytes, *, lock: bool = False) -> None:
    """Append `data` unbuffered (nothing is left to flush after a failure); a write that
    fails (a full disk) is one line and what it had begun is cut off again, so no half line
    is left. `lock`: under an exclusive flock, for files several processes append to."""
    view = memoryview(data)
    with open_append(path, "ab") as out:
        fd = out.fileno()
        if lock:
            fcntl.flock(fd, fcntl.LOCK_EX)
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise write_error(path, exc) from None


def json_object(text: str, what: str) -> dict[str, Any]:
    """ValueError for text that is not one JSON object (the caller names the file)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("not valid JSON (nested too deeply)") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} is a JSON object, got {type(value).__name__}")
    return value


def check_schema(version: Any, supported: int, where: str, key: str = "schema_version") -> None:
    """A file written by a newer drarena is refused rather than misread."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DrarenaError(f"{where}: {key} must be a positive integer, got {version!r:.40}")
    if version > supported:
        raise DrarenaError(
            f"{where}: {key} {version} is newer than this drarena supports "
            f"({supported}); use the drarena that wrote it"
        )


def match_record(text: str, where: str) -> MatchRecord:
    """One match record from JSON text, its schema version checked first (a newer one is a
    DrarenaError naming `where`; damaged text is a ValueError)."""
    data = json_object(text, "a match record")
    check_schema(data.get("schema_version"), SCHEMA_VERSION, where)
    try:
        return MatchRecord.from_dict(data)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def typed_header(value: dict[str, Any], where: str) -> RunHeader:
    """A header dict through the RunHeader model; the first problem as one line."""
    try:
        return RunHeader.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top)"
        raise DrarenaError(f"{where}: {field}: {err['msg']}") from None


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.matches_dir = path / "matches"
        self.header_path = path / "run.json"
        self.log_path = path / "matches.jsonl"
        self.timings_path = path / "timings.jsonl"
        self.cache_path = path / "llm-cache.sqlite"
        # match id -> (record, its JSON line) as save_match wrote it: write_log rewrites the
        # whole log after every round and reuses the line of the same record object (frozen:
        # same object, same bytes) instead of serialising it again (a 128-agent round's
        # rewrite took 0.2 s of the event loop between rounds)
        self._lines: dict[str, tuple[MatchRecord, str]] = {}

    def create(self) -> None:
        """The folder and its matches/ (a link in matches/'s place, from a folder received
        from elsewhere, is refused: records would be written among the link target's files)."""
        self.path.mkdir(parents=True, exist_ok=True)
        own_folder(self.matches_dir)

    def header(self) -> RunHeader | None:
        """run.json as the typed RunHeader, or None when there is none; a header this
        drarena cannot read (not UTF-8, not a JSON object, no config, a newer schema, a
        field of the wrong type) is one line naming the file."""
        if not self.header_path.is_file():
            return None
        where = self.header_path
        try:
            value = json_object(read_text(where), "a run header")
        except ValueError as exc:
            raise DrarenaError(f"{where}: {exc}") from None
        if not isinstance(value.get("config"), dict):
            raise DrarenaError(f"{where}: no `config` object (not a run header)")
        for key, supported in (
            ("run_schema_version", RUN_SCHEMA_VERSION),
            ("match_schema_version", SCHEMA_VERSION),
        ):
            check_schema(value.get(key, supported), supported, str(where), key)
        return typed_header(value, str(where))  # a field of the wrong type: one line, here

    def require_header(self) -> RunHeader:
        """`header()` of a folder that must be a run: one without run.json is one line,
        `<folder>: no run.json (not a run folder)`."""
        header = self.header()
        if header is None:
            raise DrarenaError(f"{self.path}: no run.json (not a run folder)")
        return header

    def write_header(self, header: RunHeader | dict[str, Any]) -> None:
        """Write run.json through the RunHeader model (a dict is validated first)."""
        typed = (
            header if isinstance(header, RunHeader) else typed_header(header, str(self.header_path))
        )
        self.create()
        write_atomic(self.header_path, typed.to_json())

    def save_match(self, record: MatchRecord) -> None:
        write_atomic(self.matches_dir / f"{record.match_id}.json", self._line(record))

    def finished(self) -> dict[str, MatchRecord]:
        """Every finished match on disk; a damaged file is an error naming it (matches are
        never silently replayed or dropped)."""
        done = {}
        for path in sorted(self.matches_dir.glob("*.json")):
            try:
                data = read_bounded(path, MAX_RECORD_BYTES)
                record = match_record(data.decode("utf-8"), str(path))
            except ValueError as exc:  # UnicodeDecodeError included; a newer schema passes
                raise DrarenaError(
                    f"{path}: damaged match record ({one_line(exc)}); delete "
                    "it to play the match again"
                ) from None
            if record.match_id != path.stem:  # renamed or edited: which one is the match?
                raise DrarenaError(
                    f"{path}: holds match {record.match_id[:200]!r}, not {path.stem!r} (save_match "
                    "names each file by its match); move it aside to play that match again"
                )
            done[record.match_id] = record
        return done

    def _line(self, record: MatchRecord) -> str:
        """The record's JSON line, serialised once per record object."""
        known = self._lines.get(record.match_id)
        if known is not None and known[0] is record:
            return known[1]
        line = record.to_json() + "\n"
        self._lines[record.match_id] = (record, line)
        return line

    def write_log(self, records: Sequence[MatchRecord]) -> None:
        write_atomic(self.log_path, "".join(self._line(r) for r in records))

    def read_log(self) -> list[MatchRecord]:
        if not self.log_path.is_file():
            raise DrarenaError(f"{self.log_path}: no match log (has the tournament run?)")
        records = []
        for where, line in jsonl_lines(self.log_path):
            try:
                records.append(match_record(line, where))
            except ValueError as exc:
                raise DrarenaError(f"{where}: bad match record ({one_line(exc)})") from None
        return records

    def append_timings(self, timings: Iterable[AnswerTiming]) -> None:
        """Append the figures; a write that fails (a full disk) is one line, and the lines
        it had begun are cut off again, so no half line is left."""
        append_whole(self.timings_path, "".join(t.to_json() + "\n" for t in timings).encode())

    def read_timings(self) -> list[AnswerTiming]:
        """timings.jsonl as records (none when the run has no such file)."""
        if not self.timings_path.is_file():
            return []
        out = []
        for where, line in jsonl_lines(self.timings_path):
            try:
                out.append(AnswerTiming.from_dict(json_object(line, "a timing")))
            except (ValueError, TypeError) as exc:
                raise DrarenaError(f"{where}: bad timing ({one_line(exc)})") from None
        return out

    def answer_seconds(self) -> dict[str, list[float]]:
        seconds: dict[str, list[float]] = {}
        for t in self.read_timings():
            seconds.setdefault(t.agent, []).append(t.wall_s)
        return seconds


# Who holds a run folder (run_lock): written while held, removed when released; a killed
# holder's file is stale (the kernel released its lock) and is written over by the next one.
HOLDER_FILE = "run.lock"
MAX_HOLDER_BYTES = 64 << 10

# what a run interrupted before its run.json was first written can leave in its folder: the
# model cache (the examiner-check fills it before the header, which records its figures), its
# SQLite side files, the lock's holder file, and the header's own temporary file (is_temp_of)
# and matches/ folder
UNHEADED_FILES = frozenset(
    ["llm-cache.sqlite", HOLDER_FILE]
    + [f"llm-cache.sqlite{side}" for side in ("-wal", "-shm", "-journal")]
)

# folders this process holds (by real path): fd of the locked folder, times entered
_HELD: dict[str, list[int]] = {}
_HELD_LOCK = threading.Lock()


@contextlib.contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold `folder` (a run folder, made if missing) for the block: a second drarena that
    plays, resumes or replays into it at the same time is refused in one line naming the
    holder (pid, host, command, since when), instead of both running (timings.jsonl written
    twice, run.json's counts of the one that finished last).

    The lock is flock on the folder itself, so the kernel releases it when the holder dies,
    however it dies; HOLDER_FILE only says who holds it. Reentrant within one process (a
    replay holds its --out folder, then plays into it). A folder made here and left empty
    is removed again, so a refused run leaves nothing behind."""
    key = os.path.realpath(folder)
    with _HELD_LOCK:
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
    if held is not None:
        try:
            yield
        finally:
            with _HELD_LOCK:
                held[1] -= 1
        return
    made = []  # the folders mkdir makes, the run folder first: removed again if left empty
    up = folder
    while not up.exists() and not up.is_symlink() and up != up.parent:
        made.append(up)
        up = up.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DrarenaError(f"{folder}: exists and is not a folder; nothing was written") from None
    except OSError as exc:
        raise write_error(folder, exc, "cannot make the run folder") from None
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DrarenaError(
                f"{folder}: another drarena is running in this run folder "
                f"({_holder(folder / HOLDER_FILE)}); wait for it to finish, or stop it"
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(sys.argv)[:2000],
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        write_atomic(folder / HOLDER_FILE, json.dumps(holder, sort_keys=True) + "\n")
        with _HELD_LOCK:
            _HELD[key] = [fd, 1]
        try:
            yield
        finally:
            with _HELD_LOCK:
                _HELD.pop(key, None)
            (folder / HOLDER_FILE).unlink(missing_ok=True)
            for empty in made:  # only when empty: a refused start leaves nothing
                try:
                    empty.rmdir()
                except OSError:
                    break
    finally:
        os.close(fd)  # (releases the flock)


def _holder(path: Path) -> str:
    """Who the holder file says holds the folder, shown on one line."""
    try:
        data = json.loads(read_bounded(path, MAX_HOLDER_BYTES).decode("utf-8"))
        pid, host, command, since = data["pid"], data["host"], data["command"], data["since"]
        words = f"pid {int(pid)} on {host}, `{command}`, since {since}"
    except (DrarenaError, ValueError, KeyError, TypeError, RecursionError):
        return f"its {HOLDER_FILE} does not say who; it may be starting"
    return shown(words, 500)


def _unheaded(name: str) -> bool:
    return name in UNHEADED_FILES or is_temp_of("run.json", name)


def beside(run: Path, suffix: str) -> Path:
    """The default output folder <run><suffix> of a command that reads a run folder and
    writes its own (`run replay`: -replay, `run rejudge`: -rejudge, `drift run`: -drift), next
    to the run folder. Built from the absolute path: `.` or `runs/demo/..` name their folder
    only there (Path('.').name is empty)."""
    folder = Path(os.path.normpath(run.absolute()))
    return folder.with_name(folder.name + suffix)


def check_new_run_folder(folder: Path) -> None:
    """A run is begun only in a new or empty folder, or one holding nothing but what an
    interrupted start of a drarena run leaves (UNHEADED_FILES, an empty matches/): anything
    else is someone else's, and the run's files would overwrite it."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise DrarenaError(f"{folder}: exists and is not a folder; nothing was written")
    for path in sorted(folder.iterdir()):
        own = _unheaded(path.name) and path.is_file() and not path.is_symlink()
        if not own and not (path.name == "matches" and path.is_dir() and not any(path.iterdir())):
            raise DrarenaError(
                f"{folder}: not empty ({path.name}) and no run.json (not a drarena run "
                "folder); nothing was written: choose another `name` or `runs_root`"
            )


def prepare_replay_target(source: Path, target: Path) -> None:
    """Make `target` ready for a replay of the run in `source`, deleting nothing drarena did
    not write: the source run (or a folder inside or around it) is refused, a new or empty
    folder is used as is, a folder an earlier replay of the same run wrote (REPLAY_MARK in its
    run.json) loses only the files a replay writes, and any other non-empty folder is refused."""
    src, dst = source.resolve(), target.resolve()
    if dst == src or dst.is_relative_to(src) or src.is_relative_to(dst):
        how = "is" if dst == src else ("is inside" if dst.is_relative_to(src) else "contains")
        raise DrarenaError(
            f"--out {target}: {how} the run being replayed ({source}); choose a folder outside it"
        )
    if not target.exists():
        return
    if not target.is_dir():
        raise DrarenaError(f"--out {target}: exists and is not a folder")
    if all(p.name == HOLDER_FILE for p in target.iterdir()):  # empty but for our lock
        return
    old = RunDir(target)
    header = old.header()
    if header is None or not header.has(REPLAY_MARK):
        raise DrarenaError(
            f"--out {target}: not empty and not a folder `drarena run replay` "
            "made (no replay_of in its run.json); nothing was deleted: choose "
            "a new or empty folder"
        )
    # a replay of another run is that run's check, kept: only a replay of this run is redone
    if header.replay_of is None or Path(header.replay_of) != src:
        raise DrarenaError(
            f"--out {target}: a replay of {header.replay_of!s:.200}, not of {source} "
            f"({REPLAY_MARK} in its run.json); nothing was deleted: choose a new or empty folder"
        )
    remove_own_files(target, REPLAY_FILES)


def remove_own_files(folder: Path, names: Sequence[str]) -> None:
    """Delete the files of `names` (and their temporary files) from `folder`, and the match
    records (*.json and their temporary files) from its matches/. A link is deleted as a link
    (its target untouched); a matches/ that is a link is refused in one line: its files are
    not drarena's, as is a folder where one of drarena's files goes. Everything is checked
    before anything is deleted."""
    refuse_link(folder / "matches")
    doomed = [
        path
        for path in folder.iterdir()
        if path.name in names or any(is_temp_of(name, path.name) for name in names)
    ]
    matches = folder / "matches"
    if matches.is_dir():
        for path in matches.iterdir():
            own = path.name.endswith(".json") or (temp_target(path.name) or "").endswith(".json")
            if own and (path.is_file() or path.is_symlink()):
                doomed.append(path)
    for path in doomed:
        if path.is_dir() and not path.is_symlink():
            raise DrarenaError(
                f"{shown(str(path), 1000)}: a folder where drarena writes a file (not "
                "drarena's); nothing was deleted: move it aside"
            )
    for path in doomed:
        path.unlink(missing_ok=True)
