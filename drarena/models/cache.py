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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError
from drarena.files import refuse_link
from drarena.models.jsonbytes import compact_json

SCHEMA_VERSION = "1"


def canonical_json(value: Any) -> str:
    """Sorted, compact JSON with text as it is: what keys are hashed over and caches store.
    A lone surrogate (which json writes but UTF-8, and so SQLite, cannot) is kept as its
    \\u escape ("\\ud800"): json.loads gives the same string back."""
    try:
        return compact_json(value, sort_keys=True).decode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


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


# The tables drarena creates: name -> (columns in order, the primary key column). A file whose
# tables of these names have other columns or keys is not a cache this drarena can read: a
# `calls` table without its primary key, say, holds several answers for one key.
_TABLES = {
    "calls": (("key", "model", "request", "content", "created"), "key"),
    "tools": (("key", "request", "content", "created"), "key"),
    "meta": (("name", "value"), "name"),
}
_CREATE = {
    "calls": "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
    "request TEXT NOT NULL, content TEXT NOT NULL, created REAL NOT NULL)",
    "tools": "CREATE TABLE IF NOT EXISTS tools (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
    "content TEXT NOT NULL, created REAL NOT NULL)",
    "meta": "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)",
}


# What a damaged file can make sqlite3 raise: its own errors, and a UnicodeDecodeError where
# an error message quotes the file's schema text and that text is not UTF-8.
_SQLITE_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


class _NotACache(Exception):
    """The file is SQLite but not (or not yet readable as) a drarena cache: why, one line."""


def _open(path: Path, what: str, read_only: bool = False) -> sqlite3.Connection:
    """One connection to a cache file in WAL mode, with its tables; errors as one line.

    A new or empty file becomes a cache. A file that is not one (another program's SQLite
    database, tables of other shapes, a schema from a newer drarena) is refused before
    anything is written to it: it is never changed, switched to WAL or replaced.
    `read_only` (a replay): checked the same way, then only read: a recorded run's cache
    keeps its bytes (its journal mode and change counter too), so its digest still holds."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DrarenaError(f"{what} {path}: cannot create its folder ({exc.strerror})") from None
    if path.is_dir():
        raise DrarenaError(f"{what} {path} is a folder, not a cache file")
    for name in ("", "-wal", "-shm", "-journal"):  # SQLite writes through a link; never here
        refuse_link(path.with_name(path.name + name), f"{what} file")
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout=30000")
        # the header, the schema and every page read before anything is written
        _check_tables(db)
        (check,) = db.execute("PRAGMA quick_check").fetchone()
        if check != "ok":
            raise _NotACache(f"failed its integrity check: {' '.join(str(check).split())}")
        if read_only:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            for name, create in _CREATE.items():  # a run without them: every get a miss
                if name not in tables:
                    db.execute(create.replace("CREATE TABLE", "CREATE TEMP TABLE"))
            db.execute("PRAGMA query_only=ON")
            return db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        for create in _CREATE.values():
            db.execute(create)
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        _check_tables(db)  # a concurrent opener may have made them: the same shapes
    except _SQLITE_ERRORS as exc:
        if db is not None:
            db.close()
        raise DrarenaError(
            f"{what} {path} is corrupt or not a drarena cache ({' '.join(str(exc).split())}); "
            "move it aside to start a new one"
        ) from None
    except _NotACache as exc:
        if db is not None:
            db.close()
        raise DrarenaError(f"{what} {path} {exc}") from None
    return db


def _check_tables(db: sqlite3.Connection) -> None:
    """Raise _NotACache unless the file's tables are drarena's (some may not exist yet) and
    its schema version is this drarena's."""
    names = set()
    for name, kind in db.execute("SELECT name, type FROM sqlite_master"):
        if kind == "table":
            names.add(name)
        elif name in _TABLES:  # a view or an index where drarena keeps a table
            raise _NotACache(f"is not a drarena cache (its {name} is a {kind}, not a table)")
    others = sorted(names - set(_TABLES))
    if others and "meta" not in names:
        shown = ", ".join(repr(n) for n in others[:5])
        raise _NotACache(f"is not a drarena cache (it holds other tables: {shown})")
    for name in sorted(names & set(_TABLES)):
        columns, key = _TABLES[name]
        info = db.execute(f"PRAGMA table_info({name})").fetchall()
        got = tuple(str(row[1]) for row in info)
        keys = [str(row[1]) for row in info if row[5]]
        if got != columns or keys != [key]:
            raise _NotACache(
                f"is not a drarena cache (table {name} has columns {', '.join(got)} and key "
                f"{', '.join(keys) or 'none'}; drarena's has {', '.join(columns)} and key {key})"
            )
    if "meta" in names:
        row = db.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
        if row is None and others:
            raise _NotACache("is not a drarena cache (its meta table names no schema)")
        if row is not None and row[0] != SCHEMA_VERSION:
            shown = repr(row[0]) if not isinstance(row[0], str) else repr(row[0][:40])
            raise _NotACache(f"has schema {shown}, this drarena writes {SCHEMA_VERSION!r}")


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages about damaged entries."""
    for types, name in (
        (bool, "boolean"),
        ((int, float), "number"),
        (str, "string"),
        (list, "array"),
        (dict, "object"),
    ):
        if isinstance(value, types):
            return name
    return "null" if value is None else type(value).__name__


def _loads(text: Any, what: str, path: Path, key: str) -> Any:
    """The JSON value of one stored row; a row that is not JSON text is one line naming it."""
    where = f"{what} {path}: entry {key[:16]} is corrupt"
    if not isinstance(text, str):
        kind = {bytes: "blob", int: "integer", float: "real"}.get(type(text), "NULL")
        raise DrarenaError(f"{where} (an SQL {kind}, not JSON text)")
    try:
        return json.loads(text)
    except RecursionError:
        raise DrarenaError(f"{where} (JSON nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError
        raise DrarenaError(f"{where} ({exc})") from None


# What Completion.content stores, and the types a stored call's fields must have: a field of
# another type is a damaged entry, reported here rather than as a TypeError in the client.
_COMPLETION_TYPES: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "tool_calls": (list,),
    "finish_reason": (str,),
    "prompt_tokens": (int,),
    "completion_tokens": (int,),
    "model": (str,),
    "cost_usd": (int, float, type(None)),
    "recorded_latency_s": (int, float),
}
_TOOL_CALL_FIELDS = {"id", "name", "arguments"}


def _completion_problem(content: Any) -> str | None:
    """Why `content` is not a stored model answer, or None."""
    if not isinstance(content, dict):
        return f"a JSON {json_type(content)}, not an object"
    for name, types in _COMPLETION_TYPES.items():
        if name in content:
            value = content[name]
            if isinstance(value, bool) or not isinstance(value, types):
                return f"its {name} is a JSON {json_type(value)}"
    for call in content.get("tool_calls", ()):
        if (
            not isinstance(call, dict)
            or set(call) != _TOOL_CALL_FIELDS
            or not all(isinstance(v, str) for v in call.values())
        ):
            return "a tool call in it is not {id, name, arguments} texts"
    return None


class CallCache:
    """One SQLite file; a connection per CallCache (open one per process or thread)."""

    def __init__(
        self, path: Path, *, clock: Callable[[], float] = time.time, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._db = _open(self.path, "model cache", read_only)

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            row = self._db.execute("SELECT content FROM calls WHERE key=?", (key,)).fetchone()
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"model cache {self.path}: cannot read ({exc})") from None
        if row is None:
            return None
        content = _loads(row[0], "model cache", self.path, key)
        problem = _completion_problem(content)
        if problem is not None:
            raise DrarenaError(f"model cache {self.path}: entry {key[:16]} is corrupt ({problem})")
        checked: dict[str, Any] = content  # a JSON object, its known fields typed
        return checked

    def put(
        self, key: str, model: str, request: Mapping[str, Any], content: Mapping[str, Any]
    ) -> bool:
        """Store a successful call; False if the key was already there (first writer wins)."""
        try:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?)",
                (key, model, canonical_json(request), canonical_json(content), self._clock()),
            )
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"model cache {self.path}: cannot write ({exc})") from None
        return cursor.rowcount == 1

    def __len__(self) -> int:
        try:
            (count,) = self._db.execute("SELECT COUNT(*) FROM calls").fetchone()
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"model cache {self.path}: cannot read ({exc})") from None
        return int(count)

    def close(self) -> None:
        self._db.close()


class ToolCache:
    """The tool record of a run: one JSON result per tool request key, first writer wins.

    Why in the model cache's file: a run folder then carries one file that replays it, and
    a copy of the folder replays on any machine. A stored result is either the value the
    tool returned or {"error": message} for a tool that raised (agents see both)."""

    def __init__(
        self, path: Path, *, clock: Callable[[], float] = time.time, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._db = _open(self.path, "tool record", read_only)

    def get(self, key: str) -> Any:
        """The stored result, or None when the key was never recorded."""
        try:
            row = self._db.execute("SELECT content FROM tools WHERE key=?", (key,)).fetchone()
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"tool record {self.path}: cannot read ({exc})") from None
        if row is None:
            return None
        content = _loads(row[0], "tool record", self.path, key)
        if content is None:  # what get says of a key never recorded: not a stored result
            raise DrarenaError(f"tool record {self.path}: entry {key[:16]} is corrupt (null)")
        return content

    def put(
        self, key: str, request: Mapping[str, Any], content: Any, *, replace: bool = False
    ) -> bool:
        """Store a result; False if the key was already there (first writer wins), unless
        `replace` (a command agent's failed try, superseded by a resumed run's next try)."""
        verb = "REPLACE" if replace else "IGNORE"
        try:
            cursor = self._db.execute(
                f"INSERT OR {verb} INTO tools VALUES (?, ?, ?, ?)",
                (key, canonical_json(request), canonical_json(content), self._clock()),
            )
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"tool record {self.path}: cannot write ({exc})") from None
        return cursor.rowcount == 1

    def contents(self, request_prefix: str) -> Iterator[Any]:
        """The stored results whose canonical request JSON starts with `request_prefix`, in
        key order (a run's command-agent replies: '{"command":'), each read as `get` reads it."""
        query = "SELECT key, content FROM tools WHERE substr(request, 1, ?) = ? ORDER BY key"
        try:  # row by row: a long run's replies together may be far larger than memory wants
            for key, text in self._db.execute(query, (len(request_prefix), request_prefix)):
                yield _loads(text, "tool record", self.path, key)
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"tool record {self.path}: cannot read ({exc})") from None

    def __len__(self) -> int:
        try:
            (count,) = self._db.execute("SELECT COUNT(*) FROM tools").fetchone()
        except _SQLITE_ERRORS as exc:
            raise DrarenaError(f"tool record {self.path}: cannot read ({exc})") from None
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
