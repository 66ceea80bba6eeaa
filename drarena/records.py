"""Frozen typed records passed between stages.

Why: each stage reads the previous stage's files; typed, immutable records make the contract
between stages explicit and let mypy check it. Records serialize with `to_json()` into plain
JSON with sorted keys so files are byte-stable, and load back with `from_json()`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, ClassVar, TypeVar

from pydantic import TypeAdapter

R = TypeVar("R", bound="Record")


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """Base: deterministic JSON in and out."""

    # kept for compatibility: tuples are rebuilt from JSON lists by type, whatever this says
    _tuple_fields: ClassVar[tuple[str, ...]] = ()
    # fields added later with a None default: left out of the JSON while None, so records
    # written before they existed serialize (and replay) to the same bytes
    _omit_if_none: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _as_dict(self)
        return out

    def to_json(self) -> str:
        return _ENCODE(self.to_dict())

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
        # pydantic rebuilds nested records, enums and tuples from plain JSON values
        adapter = _ADAPTERS.get(cls)
        if adapter is None:
            adapter = _ADAPTERS[cls] = TypeAdapter(cls)
        record: R = adapter.validate_python(data)
        return record

    @classmethod
    def from_json(cls: type[R], line: str) -> R:
        return cls.from_dict(json.loads(line))


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


# The leaves of a record: returned as they are (an enum member too: json writes its value).
_PLAIN = (str, int, float, bool, type(None))
# dataclass type -> (its field names, those left out while None); None: not a dataclass
_SHAPES: dict[type, tuple[tuple[str, ...], frozenset[str]] | None] = {}


def _shape(cls: type) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """A type's field names and `_omit_if_none`, looked up once per type: a match record has
    ~50,000 nested values, and asking dataclasses.fields for each made saving one ~1 ms of
    the event loop (128 agents: 192 saves and 3 log rewrites a run)."""
    try:
        return _SHAPES[cls]
    except KeyError:
        shape = (
            (
                tuple(f.name for f in dataclasses.fields(cls)),
                frozenset(getattr(cls, "_omit_if_none", ())),
            )
            if dataclasses.is_dataclass(cls)
            else None
        )
        _SHAPES[cls] = shape
        return shape


# json.dumps(sort_keys=True, ensure_ascii=False) builds a JSONEncoder on every call; one made
# once writes the same bytes (extraction writes ~11 records a page, a third of the time its
# single-threaded record writing took at 10,000 pages)
_ENCODE = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
# the exact types whose values _as_dict returns as they are, without a call (an enum member,
# a subclass of str or int, still goes through _as_dict)
_LEAF_TYPES = frozenset({str, int, float, bool, type(None)})


def _as_dict(obj: Any) -> Any:
    """dataclasses.asdict, except that a Record's `_omit_if_none` fields are dropped while
    None (asdict itself cannot skip fields of nested records)."""
    if isinstance(obj, _PLAIN):
        return obj
    shape = _shape(type(obj))
    if shape is not None:
        names, omit = shape
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(obj, name)
            if value is None and name in omit:
                continue
            out[name] = value if type(value) in _LEAF_TYPES else _as_dict(value)
        return out
    if isinstance(obj, tuple | list):
        return type(obj)(_as_dict(v) for v in obj)
    if isinstance(obj, dict):
        return {_as_dict(k): _as_dict(v) for k, v in obj.items()}
    return obj


@dataclasses.dataclass(frozen=True, slots=True)
class Hit(Record):
    """One search result. Ranked by score descending, ties broken by docid ascending."""

    docid: str
    url: str
    title: str
    snippet: str
    score: float
    rank: int = 0


# a JSON escape of a UTF-16 surrogate: the only way json.loads returns a lone one
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str, data: Any) -> bool:
    """Whether `data`, parsed from the JSON `text`, holds a lone surrogate ("\\ud800" is a
    JSON escape json.loads takes). Why: such a string loads but cannot be written as UTF-8, so
    readers refuse it, naming the file, rather than a writer failing later with a
    UnicodeEncodeError (`trees show`; the tree files `snapshot trees` writes from docs.jsonl).
    Only a text with such an escape is encoded again: docs.jsonl is read on every tournament
    start, and this keeps that read as fast as before."""
    if "\\u" not in text or not _SURROGATE_ESCAPE.search(text):
        return False
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
