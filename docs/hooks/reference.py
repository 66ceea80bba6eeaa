"""MkDocs hook: the config and CLI reference pages, generated from the code at build time.

Why generated: a reference written by hand drifts from the pydantic models and the argparse
parser it describes; these pages are rebuilt from them on every `mkdocs build`, so a field or
option that changes changes here too (and `mkdocs build --strict` runs in `make test`).
"""

from __future__ import annotations

import argparse
import types
import typing
from typing import Any

from mkdocs.structure.files import File, Files
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

CONFIG_PAGE = "reference/config.md"
CLI_PAGE = "reference/cli.md"


def _type_name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation) if a is not Ellipsis)
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models_in(a)]


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "(computed)"
    else:
        return "**required**"
    if isinstance(value, BaseModel):
        return "(see below)"
    text = repr(value).replace("|", "\\|")
    return f"`{text}`" if len(text) < 60 else "(long)"


def model_section(model: type[BaseModel], path: str, seen: set[type[BaseModel]]) -> list[str]:
    """One table per model, then its nested models, depth first."""
    doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    lines = [
        f"### `{path}`",
        "",
        doc,
        "",
        "| field | type | default | description |",
        "|---|---|---|---|",
    ]
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        desc = (field.description or "").replace("|", "\\|").replace("\n", " ")
        type_text = _type_name(field.annotation).replace("|", "\\|")
        lines.append(f"| `{name}` | {type_text} | {_default(field)} | {desc} |")
        for sub in _models_in(field.annotation):
            if sub not in seen and sub.__module__.startswith("drarena"):
                seen.add(sub)
                nested.append((f"{path}.{name}", sub))
    lines.append("")
    for sub_path, sub in nested:
        lines += model_section(sub, sub_path, seen)
    return lines


def config_page() -> str:
    from drarena.config.tournament import TournamentConfig
    from drarena.web.crawling.spec import CrawlSpec

    out = [
        "# Config reference",
        "",
        "Generated from the pydantic models at docs build time (docs/hooks/reference.py); "
        "every config is strict: an unknown key is an error naming it.",
        "",
        "## Tournament config (`configs/*.yaml`)",
        "",
    ]
    out += model_section(TournamentConfig, "tournament", {TournamentConfig})
    out += ["## Crawl spec (`corpus/*.yaml`)", ""]
    out += model_section(CrawlSpec, "spec", {CrawlSpec})
    return "\n".join(out) + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_page() -> str:
    from drarena.cli import build_parser, deprecated_names

    parser = build_parser()
    parser.prog = "drarena"
    out = [
        "# Command-line reference",
        "",
        "Generated from drarena's argparse parser at docs build time (docs/hooks/reference.py).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]

    def walk(sub: argparse.ArgumentParser, name: str, level: int) -> None:
        out.extend(
            [
                f"{'#' * level} `drarena {name}`",
                "",
                "```text",
                sub.format_help().rstrip(),
                "```",
                "",
            ]
        )
        for child_name, child in _subparsers(sub).items():
            walk(child, f"{name} {child_name}", min(level + 1, 4))

    seen: set[int] = set()
    for name, sub in _subparsers(parser).items():
        if id(sub) in seen:  # an alias shares its parser
            continue
        seen.add(id(sub))
        if sub.get_default("deprecated") or " " in name:  # old flat names: listed below
            continue
        walk(sub, name, 2)
    out += [
        "## Old command names",
        "",
        "The flat names of earlier releases still work for one release: each prints one "
        "deprecation line on stderr and runs the same command.",
        "",
        "| old | new |",
        "|---|---|",
    ]
    out += [f"| `drarena {old}` | `drarena {new}` |" for old, new in deprecated_names()]
    return "\n".join(out) + "\n"


def on_files(files: Files, config: Any) -> Files:
    for uri, text in ((CONFIG_PAGE, config_page()), (CLI_PAGE, cli_page())):
        files.append(File.generated(config, uri, content=text))
    return files
