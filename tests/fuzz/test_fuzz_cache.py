"""Fuzzing the SQLite file a run reads back: `llm-cache.sqlite`, the model call cache
(drarena.models.cache.CallCache) and the tool record in the same file (ToolCache, read by
drarena.agents.toolrecord.ToolRecord).

Driven through the entry points a run, a resumed run and a replay use: ModelClient.complete
with the cache opened in each CacheMode that has one (read-write, replay), and the tool
record's retriever answering search and open, recording and replaying (execute.py shares the
record's misses with the client's replay_misses, which `drarena run replay` refuses on; the
tests share them the same way).

Inputs: (1) the bytes of a small cache drarena wrote (compacted: one file) with flips,
cuts, splices, truncation to nothing, a header that is not SQLite's, and a -wal or -journal
file of junk left beside it; a folder or a file where the cache or its folder should be.
(2) valid SQLite with damaged contents: tables missing, with other columns, without their
primary key (so keys collide), as views, another program's tables; a schema version from
the future; rows whose JSON is cut, nested too deep, of the wrong shape or SQL type, with
lone surrogates, or large.

Properties: each operation either works or fails with a DrarenaError (ReplayMissError and
ToolReplayMissError for a request the record lacks; RecordedToolError is a tool failure
replayed as recorded) whose message is one line, naming the file unless it is such a miss;
never sqlite3/KeyError/TypeError/JSONDecodeError. A damaged row is never answered from: the
call fails naming the file, and a damaged tool result is counted with the replay misses. A
refused file is left as it was (no bytes changed, no table added, not switched to WAL) and
nothing beside it is created but SQLite's own -wal/-shm/-journal.

Not promised, so not checked: the cache bounds no row's size (a stored call is read whole),
and damage that leaves a row valid JSON of the right shape (a flipped letter in an answer)
cannot be told from a recorded answer: schema 1 keeps no checksum. Files that cannot be read
are not fuzzed: the tests run as root, which reads them anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_inputs import apply_ops, mutated
from hypothesis import event, example, given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from drarena.agents.toolrecord import (
    RecordedToolError,
    ToolRecord,
    ToolRecordDamagedError,
    ToolReplayMissError,
)
from drarena.errors import DrarenaError
from drarena.models.cache import CallCache, ToolCache, canonical_json, compact, tool_key
from drarena.models.client import ModelClient, ReplayMissError
from drarena.models.config import CacheMode, ModelsConfig, RetryPolicy
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.records import Hit
from drarena.registry import ComponentSpec
from drarena.search.docstore import PageText

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
SPEC = ComponentSpec(kind="bm25", args={})
HIT = Hit("d1", "http://example.org/", "Index", "the capital is Paris", score=1.5, rank=1)
PAGE = PageText("d1", "http://example.org/", "Index", "the capital is Paris", 0, None, 20)
MODES = (CacheMode.READ_WRITE, CacheMode.REPLAY)
SIDE = ("-wal", "-shm", "-journal")


class FakeRetrieverForTests:
    """One hit and one page; any other page is unknown (a tool failure the record keeps)."""

    name = "fake"

    def search(self, query: str, k: int = 10) -> list[Hit]:
        return [HIT]

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        if url_or_docid != "d1":
            raise DrarenaError(f"FAKE: unknown docid or URL {url_or_docid!r}")
        return PAGE


def models(path: Path, mode: CacheMode) -> ModelsConfig:
    return ModelsConfig.model_validate(
        {
            "roles": {"examiner": {"model": "openai/m", "api_base": "http://127.0.0.1:1/v1"}},
            "retry": RetryPolicy(max_attempts=1, base_delay_s=0),
            "cache": {"path": path, "mode": mode},
        }
    )


def _record(path: Path) -> str:
    """A run's cache: one model call and three tool requests (a search, a page, a failing
    open); returns the call's key."""
    cache = CallCache(path)
    try:
        client = ModelClient(
            models(path, CacheMode.READ_WRITE),
            backend=ScriptedBackendForTests([reply("Paris")]),
            cache=cache,
        )
        key = asyncio.run(client.complete("examiner", MESSAGES)).key
    finally:
        cache.close()
    record = ToolRecord(ToolCache(path), replaying=False)
    try:
        retriever = record.retriever(SPEC, FakeRetrieverForTests)
        retriever.search("capital", 3)
        retriever.open("d1", 0, 100)
        with pytest.raises(DrarenaError, match="FAKE"):
            retriever.open("nowhere", 0, 100)
    finally:
        record.close()
    return key


def _seeds() -> tuple[bytes, bytes, str, dict[str, str]]:
    """(the compacted cache file, a WAL file of a cache, the call's key, tool keys by op)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llm-cache.sqlite"
        key = _record(path)
        compact(path)
        seed = path.read_bytes()
        db = sqlite3.connect(path)
        tools = {
            json.loads(request)["op"] + (":" + json.loads(request)["args"].get("ref", "")): k
            for k, request in db.execute("SELECT key, request FROM tools")
        }
        db.close()
        wal_path = Path(tmp) / "wal.sqlite"
        held = CallCache(wal_path)  # an open connection keeps its WAL
        held.put("k" * 64, "m", {}, {"text": "x"})
        wal = Path(f"{wal_path}-wal").read_bytes()
        held.close()
    return seed, wal, key, tools


SEED, WAL, KEY, TOOL_KEYS = _seeds()


@contextlib.contextmanager
def _folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _check(exc: BaseException, path: Path) -> None:
    """A failure the properties allow: a DrarenaError of one line naming the file (a miss
    names the request instead; a replayed tool failure is the recorded text)."""
    if isinstance(exc, RecordedToolError):
        return
    assert isinstance(exc, DrarenaError), f"{type(exc).__name__}: {exc}"
    with contextlib.suppress(InvalidArgument):  # outside a hypothesis test: no events
        event(f"failed: {type(exc).__name__}")
    message = str(exc)
    assert message and "\n" not in message and "\r" not in message, repr(message)
    if not isinstance(exc, ReplayMissError | ToolReplayMissError) and "FAKE" not in message:
        assert str(path) in message, message


def _opens(path: Path) -> bool:
    """Whether CallCache opens `path`; a refusal must be one line naming it (_check)."""
    try:
        CallCache(path).close()
    except Exception as exc:
        _check(exc, path)
        return False
    return True


def ask_model(path: Path, mode: CacheMode) -> tuple[str | None, list[str]]:
    """The recorded call asked again through ModelClient: (its text, or None if it failed;
    the client's replay misses)."""
    try:  # opened as ModelClient opens it for `mode` (a replay only reads)
        cache = CallCache(path, read_only=mode is CacheMode.REPLAY)
    except Exception as exc:
        _check(exc, path)
        return None, []
    try:
        client = ModelClient(
            models(path, mode), backend=ScriptedBackendForTests([reply("fresh")]), cache=cache
        )
        try:
            return asyncio.run(client.complete("examiner", MESSAGES)).text, client.replay_misses
        except Exception as exc:
            _check(exc, path)
            return None, client.replay_misses
    finally:
        cache.close()


def ask_tools(path: Path, replaying: bool) -> tuple[list[Any], list[str]] | None:
    """The recorded search and opens asked again through the record's retriever: each
    answer or the exception it raised, and the record's misses; None if it did not open."""
    try:
        # opened as runs.context opens it (a replay only reads)
        record = ToolRecord(ToolCache(path, read_only=replaying), replaying=replaying)
    except Exception as exc:
        _check(exc, path)
        return None
    try:
        retriever = record.retriever(SPEC, FakeRetrieverForTests)
        answers: list[Any] = []
        for ask in (
            lambda: retriever.search("capital", 3),
            lambda: retriever.open("d1", 0, 100),
            lambda: retriever.open("nowhere", 0, 100),
        ):
            try:
                answers.append(ask())
            except Exception as exc:
                _check(exc, path)
                answers.append(exc)
        for answer in answers:  # a damaged result is counted where a replay looks
            if isinstance(answer, ToolRecordDamagedError):
                assert str(answer) in record.misses
        return answers, record.misses
    finally:
        record.close()


def _listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def _drive_all(path: Path) -> None:
    for mode in MODES:
        ask_model(path, mode)
        ask_tools(path, replaying=mode is CacheMode.REPLAY)


# --- (1) the file's bytes --------------------------------------------------------------------

_SIDECAR = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(["-wal", "-journal"]),
        st.one_of(st.binary(max_size=1024), mutated(WAL, max_ops=3)),
    ),
)


@given(data=mutated(SEED), sidecar=_SIDECAR)
@example(data=b"", sidecar=None)  # truncated to nothing: a new, empty cache
@example(data=b"this is not an SQLite database" * 40, sidecar=None)
@example(data=b"SQLite format 3\x00" + b"\xff" * 200, sidecar=None)  # SQLite's magic, then junk
@example(data=SEED[:4096], sidecar=None)  # cut after the first page
# a flipped byte in the schema's text: sqlite3's error quoting it was a UnicodeDecodeError
@example(data=apply_ops(SEED, [("flip", 0.13671875, b"\x80")]), sidecar=None)
@example(data=SEED, sidecar=("-wal", b"\x00" * 100))
@example(data=SEED, sidecar=("-journal", b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\x00" * 600))
def test_mutated_bytes(data: bytes, sidecar: tuple[str, bytes] | None) -> None:
    with _folder() as folder:
        path = folder / "llm-cache.sqlite"
        path.write_bytes(data)
        (folder / "notes.txt").write_text("someone else's\n", encoding="utf-8")
        if sidecar is not None:
            Path(f"{path}{sidecar[0]}").write_bytes(sidecar[1])
        opened = _opens(path)
        event("opened" if opened else "refused")
        if not opened:  # refused: left as it was, nothing made beside it
            if sidecar is None:
                assert path.read_bytes() == data, "a refused cache file was changed"
            assert _listing(folder) <= {"llm-cache.sqlite", "notes.txt"} | {
                f"llm-cache.sqlite{s}" for s in SIDE
            }
        _drive_all(path)
        assert (folder / "notes.txt").read_text(encoding="utf-8") == "someone else's\n"


def test_the_seed_replays_what_was_recorded() -> None:
    with _folder() as folder:
        path = folder / "llm-cache.sqlite"
        path.write_bytes(SEED)
        assert ask_model(path, CacheMode.REPLAY) == ("Paris", [])
        replayed = ask_tools(path, replaying=True)
        assert replayed is not None
        answers, misses = replayed
        assert answers[:2] == [[HIT], PAGE] and misses == []
        assert isinstance(answers[2], RecordedToolError) and "FAKE" in str(answers[2])


def test_a_cache_that_is_a_folder_or_under_a_file_is_one_line() -> None:
    with _folder() as folder:
        (folder / "llm-cache.sqlite").mkdir()
        (folder / "run").write_text("a file where the run folder should be\n", encoding="utf-8")
        for path in (folder / "llm-cache.sqlite", folder / "run" / "llm-cache.sqlite"):
            for opener in (CallCache, ToolCache):
                with pytest.raises(DrarenaError) as caught:
                    opener(path)
                _check(caught.value, path)
            _drive_all(path)
        assert _listing(folder) == {"llm-cache.sqlite", "run"}
        assert not any((folder / "llm-cache.sqlite").iterdir())


# --- (2) valid SQLite, damaged contents ------------------------------------------------------

DRARENA_TABLES = {
    "calls": "key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL, "
    "content TEXT NOT NULL, created REAL NOT NULL",
    "tools": "key TEXT PRIMARY KEY, request TEXT NOT NULL, content TEXT NOT NULL, "
    "created REAL NOT NULL",
    "meta": "name TEXT PRIMARY KEY, value TEXT",
}
# how a table is made: drarena's, absent, or another shape
OTHER_SHAPES = {
    "calls": [
        "key TEXT, model TEXT, request TEXT, content TEXT, created REAL",  # no primary key
        "key TEXT PRIMARY KEY, model TEXT, request TEXT, content BLOB, created REAL, extra",
        "key TEXT PRIMARY KEY, request TEXT, content TEXT, created REAL",
        "key, model, request, content, created",  # no types, no key
    ],
    "tools": [
        "key TEXT, request TEXT, content TEXT, created REAL",
        "key TEXT PRIMARY KEY, request TEXT, content TEXT",
        "key TEXT PRIMARY KEY, request, content, created, more TEXT",
    ],
    "meta": ["name TEXT, value TEXT", "name TEXT PRIMARY KEY", "name, value, note"],
}
_TABLE = st.sampled_from(["drarena", "drarena", "drarena", "absent", "other", "view"])

# a JSON value of any shape
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def _completion(text: str = "Paris") -> dict[str, Any]:
    return {
        "text": text,
        "tool_calls": [],
        "finish_reason": "stop",
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "model": "openai/m",
        "cost_usd": None,
    }


_LISTS = st.lists(_JSON, max_size=3)
_OBJECTS = st.dictionaries(st.text(max_size=8), _JSON, max_size=3)
_NOT_STR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _LISTS, _OBJECTS)
_NOT_INT = st.one_of(st.none(), st.booleans(), st.floats(), st.text(max_size=5), _LISTS)
_NOT_OBJECT = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10), _LISTS
)
_WRONG = {  # for each field of a stored call, values of another type
    "text": _NOT_STR,
    "finish_reason": _NOT_STR,
    "model": _NOT_STR,
    "prompt_tokens": _NOT_INT,
    "completion_tokens": _NOT_INT,
    "cost_usd": st.one_of(st.booleans(), st.text(max_size=5), _LISTS, _OBJECTS),
    "tool_calls": st.one_of(
        _NOT_OBJECT.filter(lambda v: not isinstance(v, list)),
        _OBJECTS,
        st.sampled_from(
            [
                [{"id": "c", "name": "search", "arguments": 5}],
                [{"id": "c", "name": "search"}],
                [{"id": "c", "name": "search", "arguments": "{}", "extra": ""}],
                ["call"],
                [None],
            ]
        ),
    ),
}


@st.composite
def damaged_completion(draw: st.DrawFn) -> Any:
    """A call's content with some fields of another type (all fields kept: a missing one
    is test_a_stored_call_missing_a_field_is_one_line)."""
    content = _completion()
    for name in draw(st.lists(st.sampled_from(sorted(_WRONG)), min_size=1, max_size=3)):
        content[name] = draw(_WRONG[name])
    return content


def _rows(good: Any, damaged: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, bool]]:
    """(content as stored, whether it is what drarena wrote): the good content, or damaged
    content that no reader may take for a result."""
    text = canonical_json(good)
    return st.one_of(
        st.just((text, True)),
        damaged.map(lambda v: (canonical_json(v), False)),
        _NOT_OBJECT.map(lambda v: (canonical_json(v), False)),
        st.integers(1, len(text) - 1).map(lambda n: (text[:n], False)),  # cut
        st.sampled_from([b"\x80\xff", text.encode(), 7, 2.5]).map(lambda v: (v, False)),
        st.just(("[" * 50_000 + "]" * 50_000, False)),  # nested too deeply for json
    )


_CALL_ROW = _rows(_completion(), damaged_completion())
_SEARCH_ROW = _rows(
    {"value": [HIT.to_dict()]},
    st.one_of(
        _JSON.filter(lambda v: v != []).map(lambda v: {"value": v}),
        _NOT_STR.map(lambda v: {"error": v}),
        st.just({"value": [{**HIT.to_dict(), "score": "high"}]}),
        st.just({"value": [HIT.to_dict()], "error": "both"}),
        st.just({}),
    ),
)
_OPEN_ROW = _rows(
    {"value": PAGE.to_dict()},
    st.one_of(
        _JSON.map(lambda v: {"value": v}),
        st.just({"value": {**PAGE.to_dict(), "offset": "zero"}}),
        st.just({"value": {**PAGE.to_dict(), "more": 1}}),
    ),
)


def _table(db: sqlite3.Connection, name: str, how: str, shape: int) -> str | None:
    """Make table `name` as `how` says; the columns it has, or None if absent."""
    if how == "absent":
        return None
    if how == "view":
        db.execute(f"CREATE VIEW {name} AS SELECT 1 AS key")
        return None
    columns = DRARENA_TABLES[name] if how == "drarena" else OTHER_SHAPES[name][shape % 3]
    db.execute(f"CREATE TABLE {name} ({columns})")
    return columns


def _insert(db: sqlite3.Connection, name: str, values: dict[str, Any]) -> None:
    """Insert what of `values` the table has columns for (none if it has no such columns)."""
    columns = [row[1] for row in db.execute(f"PRAGMA table_info({name})")]
    kept = {c: values.get(c, 0) for c in columns}
    if not kept:
        return
    marks = ", ".join("?" for _ in kept)
    with contextlib.suppress(sqlite3.DatabaseError):  # NOT NULL and the like: not inserted
        db.execute(f"INSERT INTO {name} ({', '.join(kept)}) VALUES ({marks})", list(kept.values()))


@st.composite
def damaged_database(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly drarena's tables (some not made yet) with damaged rows; else one table of
    another shape or a view; a schema version, maybe another program's table beside."""
    tables = {n: (draw(st.sampled_from(["drarena"] * 4 + ["absent"])), 0) for n in DRARENA_TABLES}
    if draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(sorted(DRARENA_TABLES)))
        tables[name] = (draw(st.sampled_from(["other", "view"])), draw(st.integers(0, 2)))
    return {
        "tables": tables,
        "schema": draw(st.sampled_from(["1"] * 6 + ["2", "", None, 1, "absent", "0.9", "1 "])),
        "foreign": draw(st.integers(0, 3)) == 0,
        "call": draw(_CALL_ROW),
        "search": draw(_SEARCH_ROW),
        "open": draw(_OPEN_ROW),
        "twice": draw(st.booleans()),  # each row stored twice: collides without a key
        "large": draw(st.integers(0, 7)) == 0,
    }


def _build(path: Path, spec: dict[str, Any]) -> dict[str, bool]:
    """The database `spec` describes; which of its tables hold drarena's shape."""
    db = sqlite3.connect(path, isolation_level=None)
    shapes = {n: _table(db, n, how, shape) for n, (how, shape) in spec["tables"].items()}
    if spec["foreign"]:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes (body) VALUES ('not drarena''s')")
    if shapes["meta"] is not None and spec["schema"] != "absent":
        _insert(db, "meta", {"name": "schema", "value": spec["schema"]})
    rows = [
        ("calls", KEY, spec["call"]),
        ("tools", TOOL_KEYS["search:"], spec["search"]),
        ("tools", TOOL_KEYS["open:d1"], spec["open"]),
    ]
    for _ in range(1 + spec["twice"]):
        for table, key, (content, _good) in rows:
            if shapes[table] is not None:
                _insert(
                    db,
                    table,
                    {"key": key, "model": "openai/m", "request": "{}", "content": content},
                )
    if spec["large"] and shapes["calls"] is not None:  # another call, 4 MB of answer
        big = canonical_json(_completion("x" * 4_000_000))
        _insert(
            db, "calls", {"key": "b" * 64, "model": "openai/m", "request": "{}", "content": big}
        )
    db.close()
    return {n: how == "drarena" for n, (how, _) in spec["tables"].items()}


def _dump(path: Path) -> list[Any]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        db.close()


def _accepted(spec: dict[str, Any]) -> bool:
    """Whether drarena may take the file `spec` describes for its cache: its tables are
    drarena's or absent, and it names schema 1 (or, holding nothing else, no schema)."""
    hows = {how for how, _ in spec["tables"].values()}
    if not hows <= {"drarena", "absent"}:
        return False
    if spec["tables"]["meta"][0] == "absent":
        return not spec["foreign"]
    if spec["schema"] == "absent":
        return not spec["foreign"]
    return spec["schema"] in ("1", 1)


def _stored(path: Path, table: str, key: str) -> bool:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(f"SELECT 1 FROM {table} WHERE key=?", (key,)).fetchone() is not None
    finally:
        db.close()


def _spec(**changes: Any) -> dict[str, Any]:
    """An explicit example of damaged_database(): a well-made cache holding the recorded
    call, search and open, with `changes`."""
    drarena = {"calls": ("drarena", 0), "tools": ("drarena", 0), "meta": ("drarena", 0)}
    return {
        "tables": drarena,
        "schema": "1",
        "foreign": False,
        "call": (canonical_json(_completion()), True),
        "search": (canonical_json({"value": [HIT.to_dict()]}), True),
        "open": (canonical_json({"value": PAGE.to_dict()}), True),
        "twice": False,
        "large": False,
        **changes,
    }


_NO_TABLES = {"calls": ("absent", 0), "tools": ("absent", 0), "meta": ("absent", 0)}


@given(spec=damaged_database())
@example(  # no primary key: two rows for one key (a collision), the second different
    spec=_spec(
        tables={"calls": ("other", 0), "tools": ("other", 0), "meta": ("drarena", 0)},
        twice=True,
    )
)
@example(  # a schema from the future: refused before anything is added to the file
    spec=_spec(tables={**_NO_TABLES, "meta": ("drarena", 0)}, schema="2")
)
@example(  # another program's database: not adopted as a cache
    spec=_spec(tables=_NO_TABLES, schema="absent", foreign=True)
)
@example(  # damaged rows in a well-made file: each reported, none answered from
    spec=_spec(
        call=(canonical_json({**_completion(), "prompt_tokens": None}), False),
        search=(canonical_json({"value": "ab"}), False),
        open=(canonical_json({}), False),
        large=True,
    )
)
@example(
    spec=_spec(
        call=("[" * 50_000 + "]" * 50_000, False),
        search=(b"\x80\xff", False),
        open=(canonical_json(None), False),
    )
)
def test_damaged_contents(spec: dict[str, Any]) -> None:
    with _folder() as folder:
        path = folder / "llm-cache.sqlite"
        _build(path, spec)
        before, schema_before = path.read_bytes(), _dump(path)
        opened = _opens(path)
        assert opened == _accepted(spec), (spec["tables"], spec["schema"], spec["foreign"])
        event("opened" if opened else "refused")
        if not opened:  # refused: left as it was, nothing added to it
            _drive_all(path)
            assert path.read_bytes() == before, "a refused file was changed"
            assert _dump(path) == schema_before
            assert _listing(folder) <= {"llm-cache.sqlite", "llm-cache.sqlite-journal"}
            return
        rows = {
            name: (_stored(path, table, key), spec[name][1])
            for name, table, key in (
                ("call", "calls", KEY),
                ("search", "tools", TOOL_KEYS["search:"]),
                ("open", "tools", TOOL_KEYS["open:d1"]),
            )
        }
        for mode in MODES:
            text, _ = ask_model(path, mode)
            present, good = rows["call"]
            if present:  # a damaged row is never answered from, a good one always
                assert text == ("Paris" if good else None), (text, spec["call"])
            asked = ask_tools(path, replaying=mode is CacheMode.REPLAY)
            assert asked is not None
            answers, misses = asked
            for answer, name, recorded in (
                (answers[0], "search", [HIT]),
                (answers[1], "open", PAGE),
            ):
                present, good = rows[name]
                if present and good:
                    assert answer == recorded
                elif present:  # reported where a replay looks, never used
                    assert isinstance(answer, ToolRecordDamagedError), (answer, spec[name])
                    assert str(answer) in misses


# --- plain regression tests ------------------------------------------------------------------


def _cache_with(path: Path, table: str, key: str, content: Any) -> None:
    CallCache(path).close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(
        f"INSERT INTO {table} (key, {'model, ' if table == 'calls' else ''}request, "
        f"content, created) VALUES (?, {'?, ' if table == 'calls' else ''}'{{}}', ?, 0)",
        (key, "openai/m", content) if table == "calls" else (key, content),
    )
    db.close()


@pytest.mark.parametrize(
    "content",
    [
        "[1, 2]",
        "null",  # was read as a miss: read-write called the model again, replay missed
        "7",
        canonical_json({**_completion(), "text": 5}),  # was answered as "5"
        canonical_json({**_completion(), "prompt_tokens": None}),  # was a TypeError
        canonical_json({**_completion(), "tool_calls": [{"id": 1, "name": "s", "arguments": ""}]}),
        b"\x80",  # a blob: was a UnicodeDecodeError
        3,  # an SQL integer: was a TypeError
        "[" * 9999,  # was a RecursionError
    ],
    ids=["array", "null", "number", "text", "tokens", "tool-call", "blob", "integer", "deep"],
)
def test_a_damaged_call_is_one_line_naming_the_file(tmp_path: Path, content: Any) -> None:
    path = tmp_path / "llm-cache.sqlite"
    _cache_with(path, "calls", KEY, content)
    for mode in MODES:
        with pytest.raises(DrarenaError, match=f"model cache {path}: entry .* is corrupt"):
            cache = CallCache(path)
            try:
                asyncio.run(
                    ModelClient(
                        models(path, mode), backend=ScriptedBackendForTests([]), cache=cache
                    ).complete("examiner", MESSAGES)
                )
            finally:
                cache.close()


def test_a_stored_call_missing_a_field_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "llm-cache.sqlite"
    _cache_with(path, "calls", KEY, '{"text": "Paris"}')
    with pytest.raises(DrarenaError, match=str(path)):
        asyncio.run(
            ModelClient(
                models(path, CacheMode.REPLAY), backend=ScriptedBackendForTests([])
            ).complete("examiner", MESSAGES)
        )


def test_a_damaged_call_is_counted_with_the_replay_misses(tmp_path: Path) -> None:
    path = tmp_path / "llm-cache.sqlite"
    _cache_with(path, "calls", KEY, "[1, 2]")
    client = ModelClient(models(path, CacheMode.REPLAY), backend=ScriptedBackendForTests([]))
    with pytest.raises(DrarenaError, match=f"model cache {path}: entry"):
        asyncio.run(client.complete("examiner", MESSAGES))
    assert client.replay_misses and str(path) in client.replay_misses[0]


def test_a_damaged_tool_result_fails_the_replay_not_the_agent(tmp_path: Path) -> None:
    """The agent turns a tool's exception into an error step and goes on; the replay must
    still fail, naming the file: the damage is counted with the client's replay misses."""
    path = tmp_path / "llm-cache.sqlite"
    _cache_with(path, "tools", TOOL_KEYS["search:"], '{"value": "not hits"}')
    client = ModelClient(models(path, CacheMode.REPLAY), backend=ScriptedBackendForTests([]))
    record = ToolRecord(ToolCache(path), replaying=True)
    record.misses = client.replay_misses  # as execute._start_header does
    with pytest.raises(ToolRecordDamagedError, match=f"tool record {path}: the search result"):
        record.retriever(SPEC, FakeRetrieverForTests).search("capital", 3)
    assert len(client.replay_misses) == 1 and str(path) in client.replay_misses[0]
    record.close()


def test_a_stored_null_is_damage_not_a_miss(tmp_path: Path) -> None:
    """get() says None for a key never recorded: a stored JSON null was read as a miss (a
    replay reported a request the record holds; recording, a TypeError)."""
    path = tmp_path / "llm-cache.sqlite"
    _cache_with(path, "tools", TOOL_KEYS["search:"], "null")
    for replaying in (True, False):
        record = ToolRecord(ToolCache(path), replaying=replaying)
        with pytest.raises(ToolRecordDamagedError, match=f"tool record {path}: entry .* corrupt"):
            record.retriever(SPEC, FakeRetrieverForTests).search("capital", 3)
        record.close()


def _sqlite(path: Path, *statements: str) -> bytes:
    """A SQLite file made by `statements` (another program's, or a cache of another shape);
    its bytes, to check that drarena left it as it was."""
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path.read_bytes()


def test_another_programs_database_is_not_adopted(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    before = _sqlite(path, "CREATE TABLE notes (body TEXT)")
    for opener in (CallCache, ToolCache):
        with pytest.raises(DrarenaError, match=f"{path} is not a drarena cache .*'notes'"):
            opener(path)
    assert path.read_bytes() == before and _listing(tmp_path) == {"app.sqlite"}


def test_a_schema_from_the_future_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "llm-cache.sqlite"
    before = _sqlite(
        path,
        "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)",
        "INSERT INTO meta VALUES ('schema', '2')",
    )
    with pytest.raises(DrarenaError, match=f"{path} has schema '2', this drarena writes '1'"):
        CallCache(path)
    assert path.read_bytes() == before and _listing(tmp_path) == {"llm-cache.sqlite"}


def test_calls_without_a_primary_key_are_refused(tmp_path: Path) -> None:
    """Without the key, INSERT OR IGNORE ignores nothing: every writer's answer is kept
    and a replay answers with whichever row SQLite returns first."""
    path = tmp_path / "llm-cache.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE calls (key TEXT, model TEXT, request TEXT, content TEXT, created)")
    db.commit()
    db.close()
    with pytest.raises(DrarenaError, match=r"table calls has columns .* and key none"):
        CallCache(path)


def test_lone_surrogates_are_stored_and_replayed(tmp_path: Path) -> None:
    """canonical_json kept a lone surrogate as it was, which SQLite cannot store: put raised
    UnicodeEncodeError; a tool request with one could not even be keyed."""
    path = tmp_path / "llm-cache.sqlite"
    cache = CallCache(path)
    assert cache.put("k" * 64, "m", {"q": "\ud800"}, _completion("a\udfffb"))
    assert (cache.get("k" * 64) or {})["text"] == "a\udfffb"
    cache.close()

    class Echo(FakeRetrieverForTests):
        def search(self, query: str, k: int = 10) -> list[Hit]:
            return [Hit("d", "http://x/", query, query, 1.0, 1)]

    record = ToolRecord(ToolCache(path), replaying=False)
    (hit,) = record.retriever(SPEC, Echo).search("a\ud800", 3)
    record.close()
    replay = ToolRecord(ToolCache(path), replaying=True)
    assert replay.retriever(SPEC, Echo).search("a\ud800", 3) == [hit]
    assert hit.title == "a\ud800"
    replay.close()
    key = tool_key(
        {
            "retriever": SPEC.model_dump(mode="json"),
            "op": "search",
            "args": {"query": "a\ufffd", "k": 3},
        }
    )
    assert ToolCache(path).get(key) is not None  # keyed with U+FFFD, as the client keys calls


def test_a_damaged_cache_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """The integrity check ran after the file was switched to WAL and given its tables: a
    cut cache was refused, but changed (its header said WAL) and left with -wal and -shm."""
    path = tmp_path / "llm-cache.sqlite"
    cut = SEED[: len(SEED) * 7 // 8]
    path.write_bytes(cut)
    with pytest.raises(DrarenaError, match=f"model cache {path} (is corrupt|failed its)"):
        CallCache(path)
    assert path.read_bytes() == cut and _listing(tmp_path) == {"llm-cache.sqlite"}


def test_a_view_where_a_table_should_be_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "llm-cache.sqlite"
    before = _sqlite(path, "CREATE VIEW tools AS SELECT 1 AS key, '{}' AS content")
    with pytest.raises(DrarenaError, match=f"{path} is not a drarena cache .*tools is a view"):
        ToolCache(path)
    assert path.read_bytes() == before


def test_a_replay_leaves_the_recorded_cache_as_it_was(tmp_path: Path) -> None:
    """A replay opened the cache as a recording does: switched to WAL, so replaying a
    committed run changed bytes 18, 19, 27 and 95 of its llm-cache.sqlite. Now it only
    reads, through ModelClient's own opening (a config in replay mode) and arena's."""
    path = tmp_path / "llm-cache.sqlite"
    path.write_bytes(SEED)  # compacted, as a run is committed
    assert ask_model(path, CacheMode.REPLAY) == ("Paris", [])
    assert ask_tools(path, replaying=True) is not None
    client = ModelClient(models(path, CacheMode.REPLAY), backend=ScriptedBackendForTests([]))
    assert asyncio.run(client.complete("examiner", MESSAGES)).text == "Paris"
    assert path.read_bytes() == SEED


def test_a_schema_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """sqlite3 decodes its error messages as UTF-8; one quoting a damaged schema (a byte
    flipped in `CREATE TABLE`) raised UnicodeDecodeError instead of an sqlite3 error."""
    path = tmp_path / "llm-cache.sqlite"
    damaged = apply_ops(SEED, [("flip", 0.13671875, b"\x80")])
    path.write_bytes(damaged)
    for opener in (CallCache, ToolCache):
        with pytest.raises(DrarenaError, match=f"{path} is corrupt or not a drarena cache"):
            opener(path)
    assert path.read_bytes() == damaged


def test_a_replay_of_a_run_without_a_cache_reports_misses(tmp_path: Path) -> None:
    """Opened read-only, a cache file with no tables yet (a run that made no call) answers
    every lookup with a miss, as before, not with "no such table"."""
    path = tmp_path / "llm-cache.sqlite"
    client = ModelClient(models(path, CacheMode.REPLAY), backend=ScriptedBackendForTests([]))
    with pytest.raises(ReplayMissError):
        asyncio.run(client.complete("examiner", MESSAGES))
    assert len(client.replay_misses) == 1 and "no cached answer" in client.replay_misses[0]
    assert ToolCache(path, read_only=True).get("k" * 64) is None
    assert path.read_bytes() == b""
