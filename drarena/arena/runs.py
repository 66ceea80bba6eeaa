"""A run folder: header, finished matches, the canonical log, leaderboard and timings.

Layout of runs/<name>/:
  run.json           header: config, fingerprints, prompt hashes, versions, git revision
  matches/<id>.json  one file per finished match, written atomically as it finishes
                     (a kill at any moment loses at most the matches in flight)
  matches.jsonl      the canonical log: every finished match in plan order, one per line
  timings.jsonl      wall-clock figures (differ on every run, so kept out of the log)
  leaderboard.md/.csv/.json, report.html
  llm-cache.sqlite   every model call, for replay

A folder `drarena replay` writes has `"replay_of": <source run>` in its run.json: only such a
folder is ever emptied, and then only of the files a replay writes (REPLAY_FILES).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from drarena.arena.match import AnswerTiming
from drarena.arena.records import MatchRecord
from drarena.errors import DrarenaError
from drarena.report.leaderboard import LeaderboardRow, to_csv, to_json, to_markdown

RUN_SCHEMA_VERSION = 1
REPLAY_MARK = "replay_of"
REPLAY_FILES = ("run.json", "matches.jsonl", "timings.jsonl", "leaderboard.md",
                "leaderboard.csv", "leaderboard.json", "report.html")


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.matches_dir = path / "matches"
        self.header_path = path / "run.json"
        self.log_path = path / "matches.jsonl"
        self.timings_path = path / "timings.jsonl"
        self.cache_path = path / "llm-cache.sqlite"

    def create(self) -> None:
        self.matches_dir.mkdir(parents=True, exist_ok=True)

    def header(self) -> dict[str, Any] | None:
        if not self.header_path.is_file():
            return None
        try:
            value: dict[str, Any] = json.loads(self.header_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise DrarenaError(f"{self.header_path}: not valid JSON ({exc})") from None
        return value

    def write_header(self, header: dict[str, Any]) -> None:
        self.create()
        write_atomic(self.header_path, json.dumps(header, indent=2, sort_keys=True) + "\n")

    def save_match(self, record: MatchRecord) -> None:
        write_atomic(self.matches_dir / f"{record.match_id}.json", record.to_json() + "\n")

    def finished(self) -> dict[str, MatchRecord]:
        """Every finished match on disk; a damaged file is an error naming it (matches are
        never silently replayed or dropped)."""
        done = {}
        for path in sorted(self.matches_dir.glob("*.json")):
            try:
                record = MatchRecord.from_json(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise DrarenaError(f"{path}: damaged match record ({str(exc)[:200]}); delete "
                                   "it to play the match again") from None
            done[record.match_id] = record
        return done

    def write_log(self, records: Sequence[MatchRecord]) -> None:
        write_atomic(self.log_path, "".join(r.to_json() + "\n" for r in records))

    def read_log(self) -> list[MatchRecord]:
        if not self.log_path.is_file():
            raise DrarenaError(f"{self.log_path}: no match log (has the tournament run?)")
        records = []
        for n, line in enumerate(self.log_path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                records.append(MatchRecord.from_json(line))
            except ValueError as exc:
                raise DrarenaError(f"{self.log_path}:{n}: bad match record "
                                   f"({str(exc)[:200]})") from None
        return records

    def append_timings(self, timings: Iterable[AnswerTiming]) -> None:
        with self.timings_path.open("a", encoding="utf-8") as out:
            for t in timings:
                out.write(t.to_json() + "\n")

    def answer_seconds(self) -> dict[str, list[float]]:
        seconds: dict[str, list[float]] = {}
        if self.timings_path.is_file():
            for line in self.timings_path.read_text(encoding="utf-8").splitlines():
                t = AnswerTiming.from_json(line)
                seconds.setdefault(t.agent, []).append(t.wall_s)
        return seconds

    def write_leaderboard(self, rows: Sequence[LeaderboardRow]) -> None:
        write_atomic(self.path / "leaderboard.md", to_markdown(rows))
        write_atomic(self.path / "leaderboard.csv", to_csv(rows))
        write_atomic(self.path / "leaderboard.json", to_json(rows))


def prepare_replay_target(source: Path, target: Path) -> None:
    """Make `target` ready for a replay of the run in `source`, deleting nothing drarena did
    not write: the source run (or a folder inside or around it) is refused, a new or empty
    folder is used as is, a folder an earlier replay wrote (REPLAY_MARK in its run.json) loses
    only the files a replay writes, and any other non-empty folder is refused."""
    src, dst = source.resolve(), target.resolve()
    if dst == src or dst.is_relative_to(src) or src.is_relative_to(dst):
        how = "is" if dst == src else ("is inside" if dst.is_relative_to(src) else "contains")
        raise DrarenaError(f"--out {target}: {how} the run being replayed ({source}); "
                           "choose a folder outside it")
    if not target.exists():
        return
    if not target.is_dir():
        raise DrarenaError(f"--out {target}: exists and is not a folder")
    if not any(target.iterdir()):
        return
    old = RunDir(target)
    header = old.header()
    if header is None or REPLAY_MARK not in header:
        raise DrarenaError(f"--out {target}: not empty and not a folder `drarena replay` "
                           "made (no replay_of in its run.json); nothing was deleted: choose "
                           "a new or empty folder")
    for name in REPLAY_FILES:
        for path in (target / name, target / (name + ".tmp")):
            path.unlink(missing_ok=True)
    if old.matches_dir.is_dir():
        for path in old.matches_dir.iterdir():
            if path.is_file() and path.name.endswith((".json", ".json.tmp")):
                path.unlink()
