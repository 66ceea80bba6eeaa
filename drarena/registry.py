"""Components named in config as {kind, args}, built through a registry.

Why: the resolved {kind, args} of every component goes into a run's header, and heavy
dependencies (Lucene, torch, litellm) load only when a component of that kind is built.
Entries are registered as "module:attribute" strings so importing the registry is cheap.

Plugins: a third-party package adds kinds without touching drarena, in either of two ways.
- An entry point in the registry's group (`drarena.agents`, `drarena.retrievers`,
  `drarena.search_providers`), e.g. in the plugin's pyproject.toml
  `[project.entry-points."drarena.agents"] echo = "my_pkg.agents:build_echo"`; the kind is
  then `echo` in any config. Entry points are read once, on first use, and never imported
  until a component of that kind is built.
- A kind written as `package.module:attr` in config: the factory is imported from there.
A plugin kind may not shadow a built-in one (a clear error says which package tried).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

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
        raise DrarenaError(
            f"{what}: args.{field}: {err['msg']}" if field else f"{what}: args: {err['msg']}"
        ) from None


class RegistryError(ValueError):
    """A kind that is unknown or registered twice."""


# `package.module:attr` written as a kind in config (dotted module, one attribute).
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
IMPORT_KIND = re.compile(rf"^{_NAME}(\.{_NAME})*:{_NAME}$")


@dataclass
class Registry(Generic[T]):
    """Maps kind names to factories, given lazily as 'package.module:attr'.

    `group` names the entry-point group plugins register in; `traits` carry what callers need
    to know about a kind without importing it (e.g. which indexes a retriever reads)."""

    what: str
    group: str | None = None
    _targets: dict[str, str | Callable[..., T]] = field(default_factory=dict)
    _traits: dict[str, frozenset[str]] = field(default_factory=dict)
    _origin: dict[str, str] = field(default_factory=dict)
    _plugins_loaded: bool = False

    def register(
        self,
        kind: str,
        target: str | Callable[..., T],
        traits: frozenset[str] | set[str] = frozenset(),
        origin: str = "drarena",
    ) -> None:
        if kind in self._targets:
            raise RegistryError(
                f"{self.what} kind {kind!r} is already registered (by "
                f"{self._origin.get(kind, 'drarena')}; {origin} tried again)"
            )
        self._targets[kind] = target
        self._traits[kind] = frozenset(traits)
        self._origin[kind] = origin

    def _load_plugins(self) -> None:
        """Entry points of `group`, registered once; a bad one is an error naming it."""
        if self._plugins_loaded or self.group is None:
            return
        self._plugins_loaded = True
        for ep in sorted(importlib.metadata.entry_points(group=self.group), key=lambda e: e.name):
            dist = getattr(ep.dist, "name", None) or "a plugin"
            if not IMPORT_KIND.match(ep.value):
                raise RegistryError(
                    f"{self.what} plugin {ep.name!r} from {dist}: entry point "
                    f"{ep.value!r} is not 'package.module:attr'"
                )
            self.register(ep.name, ep.value, origin=f"plugin {dist}")

    def kinds(self) -> list[str]:
        self._load_plugins()
        return sorted(self._targets)

    def traits(self, kind: str) -> frozenset[str]:
        """What is declared about `kind` (empty for unknown and import-path kinds)."""
        self._load_plugins()
        return self._traits.get(kind, frozenset())

    def with_trait(self, trait: str) -> list[str]:
        return [k for k in self.kinds() if trait in self._traits.get(k, frozenset())]

    def factory(self, kind: str) -> Callable[..., T]:
        self._load_plugins()
        target: str | Callable[..., T]
        if kind in self._targets:
            target = self._targets[kind]
        elif IMPORT_KIND.match(kind):
            target = kind  # `package.module:attr` named in config
        else:
            known = ", ".join(self.kinds()) or "none"
            raise RegistryError(
                f"unknown {self.what} kind {kind!r} (known: {known}; or 'package.module:attr')"
            )
        if callable(target):
            return target
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise RegistryError(
                f"{self.what} kind {kind!r}: cannot import {module_name} ({exc})"
            ) from None
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise RegistryError(
                f"{self.what} kind {kind!r}: {module_name} has no callable {attr!r}"
            )
        return cast("Callable[..., T]", factory)

    def build(self, spec: ComponentSpec | dict[str, Any], **extra: Any) -> T:
        """The component of `spec`, its factory called with `spec.args` and `extra` (what the
        caller supplies, e.g. a retriever's snapshot and index folders). An arg in config
        named like one of `extra` is a RegistryError naming it (check_args): Python's "got
        multiple values for keyword argument" TypeError would be a traceback."""
        if isinstance(spec, dict):
            spec = ComponentSpec.model_validate(spec)
        self.check_args(spec, extra)
        return self.factory(spec.kind)(**spec.args, **extra)

    def check_args(self, spec: ComponentSpec, supplied: Any) -> None:
        """RegistryError if config gives an arg that the caller supplies itself (`supplied`:
        its names)."""
        for name in sorted(spec.args.keys() & set(supplied)):
            raise RegistryError(
                f"{self.what} {spec.kind}: args.{name}: set by drarena, not in config"
            )
