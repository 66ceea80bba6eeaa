"""Record/replay cache of model calls in SQLite.

Why: a tournament must be re-runnable to the byte. Every call is keyed by a canonical hash of
what determines the answer (model, messages, tools, tool choice, response format, sampling);
timeouts and endpoints are left out so a run recorded against one server replays anywhere.
WAL mode and INSERT OR IGNORE make concurrent writers (several processes) safe: the first
answer stored for a key wins. Failed calls are never stored (the client only stores successes).
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

SCHEMA_VERSION = "1"


def canonical_json(value: Any) -> str:
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
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class CallCache:
    """One SQLite file; a connection per CallCache (open one per process or thread)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout=30000")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "request TEXT NOT NULL, content TEXT NOT NULL, created REAL NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            (check,) = self._db.execute("PRAGMA quick_check").fetchone()
            (schema,) = self._db.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise DrarenaError(
                f"model cache {self.path} is corrupt or not a drarena cache ({exc}); "
                "move it aside to start a new one") from None
        if check != "ok":
            raise DrarenaError(f"model cache {self.path} failed its integrity check: {check}")
        if schema != SCHEMA_VERSION:
            raise DrarenaError(
                f"model cache {self.path} has schema {schema!r}, this drarena writes "
                f"{SCHEMA_VERSION!r}")

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
                f"model cache {self.path}: entry {key[:16]} is corrupt ({exc})") from None
        return content

    def put(self, key: str, model: str, request: Mapping[str, Any],
            content: Mapping[str, Any]) -> bool:
        """Store a successful call; False if the key was already there (first writer wins)."""
        try:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?)",
                (key, model, canonical_json(request), canonical_json(content), self._clock()))
        except sqlite3.DatabaseError as exc:
            raise DrarenaError(f"model cache {self.path}: cannot write ({exc})") from None
        return cursor.rowcount == 1

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM calls").fetchone()
        return int(count)

    def close(self) -> None:
        self._db.close()
