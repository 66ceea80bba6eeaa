"""Reading a YAML file that a user wrote (crawl specs, tournament configs) into a mapping.

Why one helper: every way such a file can be wrong (missing, a folder, not UTF-8, too large,
not YAML, a YAML scalar or list instead of a mapping, a tag PyYAML cannot build, nesting deep
enough to exhaust the recursion limit) must end as one line naming the file, never a
traceback; the spec reader (web) and the tournament config reader (runs) share it, so it
lives at the package top level, below both.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError

# 1 MiB: the largest file the project ships is 2.5 KB. PyYAML's pure-Python loader holds
# about 350 bytes per byte of a flow list ("[1,1,1,...]") while it composes, so the byte
# cap alone would still let a file cost 350 MB; MAX_YAML_NODES stops composing far sooner.
MAX_YAML_BYTES = 1 << 20
# Nodes the composer may build (aliases counted once each time they are used), checked as
# they are built, so a file of many small values fails at about 35 MB instead of after the
# whole document is in memory. A crawl spec listing 10,000 seed URLs is 10,000 nodes.
MAX_YAML_NODES = 100_000
# Values once aliases are expanded, and their nesting: YAML aliases share one object, so a
# 400-byte "billion laughs" file loads small but expands to 387 million strings in the JSON
# dumps that follow (run header, manifest), and an alias inside its own anchor loads as a
# cycle that json.dumps refuses. Real files stay far below both bounds.
MAX_YAML_VALUES = 200_000
MAX_YAML_DEPTH = 100


def load_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """The top-level mapping of YAML file `path`; `what` names the kind of file in errors
    ("crawl spec", "tournament config"). Raises DrarenaError (one line) on any problem."""
    import yaml

    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise DrarenaError(f"{path}: no such {what} (file not found)") from None
    except IsADirectoryError:
        raise DrarenaError(f"{path}: is a folder, not a {what} file") from None
    except OSError as exc:
        raise DrarenaError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if len(raw) > MAX_YAML_BYTES:
        raise DrarenaError(f"{path}: {what} is larger than {MAX_YAML_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DrarenaError(
            f"{path}: {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})"
        ) from None
    try:
        data = yaml.load(text, Loader=_bounded_loader())
    except _TooManyNodes:
        raise DrarenaError(
            f"{path}: too large a YAML document (more than {MAX_YAML_NODES} values)"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 1} column {mark.column + 1}:" if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "parse error").split())
        raise DrarenaError(f"{path}:{where} not valid YAML ({problem})") from None
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())[:200]
        raise DrarenaError(f"{path}: not valid YAML ({detail})") from None
    except RecursionError:
        raise DrarenaError(f"{path}: not valid YAML (nested too deeply)") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a bad !!int, timestamp, ...
        detail = " ".join(str(exc).split())[:200]
        raise DrarenaError(f"{path}: not valid YAML (a value cannot be read: {detail})") from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {_kind(data)}"
        raise DrarenaError(f"{path}: a {what} must be a mapping of fields (got {got})")
    _check_expanded(data, path)
    return data


class _TooManyNodes(Exception):
    """Raised from inside the composer once it has built MAX_YAML_NODES nodes."""


@functools.cache
def _bounded_loader() -> type:
    """PyYAML's SafeLoader (the pure-Python one: the same everywhere, and the only one whose
    composer can be counted), stopping after MAX_YAML_NODES nodes. Made on first use so
    importing this module does not import yaml."""
    import yaml

    class BoundedSafeLoader(yaml.SafeLoader):
        nodes = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.nodes += 1
            if self.nodes > MAX_YAML_NODES:
                raise _TooManyNodes
            return super().compose_node(parent, index)

    return BoundedSafeLoader


def _check_expanded(data: object, path: Path) -> None:
    """DrarenaError if `data`, aliases expanded, holds more than MAX_YAML_VALUES values or
    nests deeper than MAX_YAML_DEPTH (a cyclic alias nests forever). Iterative, and stops at
    the first bound, so the check itself is bounded."""
    stack: list[tuple[object, int]] = [(data, 0)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_YAML_VALUES or depth > MAX_YAML_DEPTH:
            raise DrarenaError(
                f"{path}: too large a YAML document (more than {MAX_YAML_VALUES} values "
                f"or {MAX_YAML_DEPTH} levels, aliases expanded; an alias may refer to "
                "itself)"
            )
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
