"""Reading a YAML file that a user wrote (crawl specs, tournament configs) into a mapping.

Why one helper: every way such a file can be wrong (missing, a folder, not UTF-8, too large,
not YAML, a YAML scalar or list instead of a mapping, a tag PyYAML cannot build, nesting deep
enough to exhaust the recursion limit) must end as one line naming the file, never a
traceback; the spec reader (web) and the tournament config reader (arena) share it, so it
lives at the package top level, below both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError

MAX_YAML_BYTES = 4 << 20  # 4 MiB: far above any real spec or config, bounds memory


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
        raise DrarenaError(f"{path}: {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x} "
                           f"on line {line})") from None
    try:
        data = yaml.safe_load(text)
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
        raise DrarenaError(f"{path}: not valid YAML (a value cannot be read: {detail})"
                           ) from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {_kind(data)}"
        raise DrarenaError(f"{path}: a {what} must be a mapping of fields (got {got})")
    return data


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
