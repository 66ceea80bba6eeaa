"""Frozen typed records passed between stages.

Why: each stage reads the previous stage's files; typed, immutable records make the contract
between stages explicit and let mypy check it. Records serialize with `to_json()` into plain
JSON with sorted keys so files are byte-stable, and load back with `from_json()`.
"""

from __future__ import annotations

import dataclasses
import json
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
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

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


def _as_dict(obj: Any) -> Any:
    """dataclasses.asdict, except that a Record's `_omit_if_none` fields are dropped while
    None (asdict itself cannot skip fields of nested records)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        omit = getattr(obj, "_omit_if_none", ())
        return {
            f.name: _as_dict(value)
            for f in dataclasses.fields(obj)
            if not ((value := getattr(obj, f.name)) is None and f.name in omit)
        }
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
