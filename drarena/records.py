"""Frozen typed records passed between stages.

Why: each stage reads the previous stage's files; typed, immutable records make the contract
between stages explicit and let mypy check it. Records serialize with `to_json()` into plain
JSON with sorted keys so files are byte-stable, and load back with `from_json()`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """Base: deterministic JSON in and out."""

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
        kwargs = {k: (tuple(v) if k in cls._tuple_fields and v is not None else v)
                  for k, v in data.items()}
        return cls(**kwargs)

    @classmethod
    def from_json(cls: type[R], line: str) -> R:
        return cls.from_dict(json.loads(line))


@dataclasses.dataclass(frozen=True, slots=True)
class Hit(Record):
    """One search result. Ranked by score descending, ties broken by docid ascending."""

    docid: str
    url: str
    title: str
    snippet: str
    score: float
    rank: int = 0
