"""Record/replay cache of model calls in SQLite.

Why: a tournament must be re-runnable to the byte. Every call is keyed by a canonical hash of
what determines the answer (model, messages, tools, tool choice, response format, sampling);
timeouts and endpoints are left out so a run recorded against one server replays anywhere.
WAL mode and INSERT OR IGNORE make concurrent writers (several processes) safe: the first
answer stored for a key wins. Failed calls are never stored (the client only stores successes).

The same file holds the run's tool record (`ToolCache`, table `tools`): every search and open
result an agent received, keyed by what was asked, so a replay answers tool calls from the
record instead of re-running retrieval (whose dense scores differ between CPU kernels).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError
from drarena.models.jsonbytes import compact_json

SCHEMA_VERSION = "1"


def canonical_json(value: Any) -> str:
    """Sorted, compact JSON with text as it is: what keys are hashed over and caches store."""
    try:
        return compact_json(value, sort_keys=True).decode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: json writes it, UTF-8 cannot
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    sampling: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: Any = None,
    response_format: Mapping[str, Any] | None = None,
) -> str:
    """sha256 over the canonical JSON of everything that determines the model's answer."""
    payload = {
        "v": SCHEMA_VERSION,
        "model": model,
        "messages": list(messages),
        "tools": list(tools) if tools else None,
        "tool_choice": tool_choice,
        "response_format": response_format,
        "sampling": dict(sampling),
    }
    return hashlib.sha256(compact_json(payload, sort_keys=True)).hexdigest()


def tool_key(payload: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of one tool request (retriever spec, operation, args)."""
    return hashlib.sha256(
        compact_json({"v": TOOL_SCHEMA_VERSION, **payload}, sort_keys=True)
    ).hexdigest()


TOOL_SCHEMA_VERSION = "1"


def _open(path: Path, what: str) -> sqlite3.Connection:
    """One connection to a cache file in WAL mode, with its tables; errors as one line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
            "request TEXT NOT NULL, content TEXT NOT NULL, created REAL NOT NULL)"
        )
        db.execute(
            "CREATE TABLE IF NOT EXISTS tools (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
            "content TEXT NOT NULL, created REAL NOT NULL)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        (check,) = db.execute("PRAGMA quick_check").fetchone()
        (schema,) = db.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise DrarenaError(
            f"{what} {path} is corrupt or not a drarena cache ({exc}); "
            "move it aside to start a new one"
        ) from None
    if check != "ok":
        raise DrarenaError(f"{what} {path} failed its integrity check: {check}")
    if schema != SCHEMA_VERSION:
        raise DrarenaError(
            f"{what} {path} has schema {schema!r}, this drarena writes {SCHEMA_VERSION!r}"
        )
    return db


class CallCache:
    """One SQLite file; a connection per CallCache (open one per process or thread)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._db = _open(self.path, "model cache")

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            row = self._db.execute("SELECT content FROM calls WHERE key=?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise DrarenaError(f"model cache {self.path}: cannot read ({exc})") from None
        if row is None:
            return None
        try:
            content: dict[str, Any] = json.loads(row[0])
        except json.JSONDecodeError as exc:
            raise DrarenaError(
                f"model cache {self.path}: entry {key[:16]} is corrupt ({exc})"
            ) from None
        return content

    def put(
        self, key: str, model: str, request: Mapping[str, Any], content: Mapping[str, Any]
    ) -> bool:
        """Store a successful call; False if the key was already there (first writer wins)."""
        try:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?)",
                (key, model, canonical_json(request), canonical_json(content), self._clock()),
            )
        except sqlite3.DatabaseError as exc:
            raise DrarenaError(f"model cache {self.path}: cannot write ({exc})") from None
        return cursor.rowcount == 1

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM calls").fetchone()
        return int(count)

    def close(self) -> None:
        self._db.close()


class ToolCache:
    """The tool record of a run: one JSON result per tool request key, first writer wins.

    Why in the model cache's file: a run folder then carries one file that replays it, and
    a copy of the folder replays on any machine. A stored result is either the value the
    tool returned or {"error": message} for a tool that raised (agents see both)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._db = _open(self.path, "tool record")

    def get(self, key: str) -> Any:
        """The stored result, or None when the key was never recorded."""
        try:
            row = self._db.execute("SELECT content FROM tools WHERE key=?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise DrarenaError(f"tool record {self.path}: cannot read ({exc})") from None
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError as exc:
            raise DrarenaError(
                f"tool record {self.path}: entry {key[:16]} is corrupt ({exc})"
            ) from None

    def put(self, key: str, request: Mapping[str, Any], content: Any) -> bool:
        """Store a result; False if the key was already there (first writer wins)."""
        try:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO tools VALUES (?, ?, ?, ?)",
                (key, canonical_json(request), canonical_json(content), self._clock()),
            )
        except sqlite3.DatabaseError as exc:
            raise DrarenaError(f"tool record {self.path}: cannot write ({exc})") from None
        return cursor.rowcount == 1

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM tools").fetchone()
        return int(count)

    def close(self) -> None:
        self._db.close()


def compact(path: Path) -> None:
    """Fold the WAL into the file, drop free pages and leave it in rollback-journal mode, so
    the file alone (no -wal/-shm) is the whole cache: for committing or copying a run."""
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("VACUUM")
    finally:
        db.close()
