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

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

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


@dataclasses.dataclass(frozen=True, slots=True)
class Hit(Record):
    """One search result. Ranked by score descending, ties broken by docid ascending."""

    docid: str
    url: str
    title: str
    snippet: str
    score: float
    rank: int = 0
