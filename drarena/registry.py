"""Components named in config as {kind, args}, built through a registry.

Why: the resolved {kind, args} of every component goes into a run's header, and heavy
dependencies (Lucene, torch, litellm) load only when a component of that kind is built.
Entries are registered as "module:attribute" strings so importing the registry is cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class ComponentSpec(BaseModel):
    """A component as written in config: which kind, and the arguments to build it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="registered name of the component kind")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments")


def parse_args(model: type[M], args: dict[str, Any], what: str) -> M:
    """A component's args validated by its pydantic model; the first problem as one line,
    e.g. "agent react: args.max_steps: Input should be greater than or equal to 1"."""
    from drarena.errors import DrarenaError

    try:
        return model.model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise DrarenaError(f"{what}: args.{field}: {err['msg']}" if field
                           else f"{what}: args: {err['msg']}") from None


class RegistryError(ValueError):
    """A kind that is unknown or registered twice."""


@dataclass
class Registry(Generic[T]):
    """Maps kind names to factories, given lazily as 'package.module:attr'."""

    what: str
    _targets: dict[str, str | Callable[..., T]] = field(default_factory=dict)

    def register(self, kind: str, target: str | Callable[..., T]) -> None:
        if kind in self._targets:
            raise RegistryError(f"{self.what} kind {kind!r} is already registered")
        self._targets[kind] = target

    def kinds(self) -> list[str]:
        return sorted(self._targets)

    def factory(self, kind: str) -> Callable[..., T]:
        try:
            target = self._targets[kind]
        except KeyError:
            known = ", ".join(self.kinds()) or "none"
            raise RegistryError(f"unknown {self.what} kind {kind!r} (known: {known})") from None
        if callable(target):
            return target
        module_name, _, attr = target.partition(":")
        factory: Callable[..., T] = getattr(importlib.import_module(module_name), attr)
        return factory

    def build(self, spec: ComponentSpec | dict[str, Any], **extra: Any) -> T:
        if isinstance(spec, dict):
            spec = ComponentSpec.model_validate(spec)
        return self.factory(spec.kind)(**spec.args, **extra)
