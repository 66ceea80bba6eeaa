"""Thin command line over the library: each area registers its own subcommands.

Each module in COMMAND_MODULES exposes `register(subparsers)` and keeps its imports light;
heavy dependencies load inside the command functions.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from drarena import __version__
from drarena.errors import DrarenaError

COMMAND_MODULES = (
    "drarena.web.commands",
    "drarena.corpus.commands",
    "drarena.search.commands",
    "drarena.models.commands",
    "drarena.arena.commands",
    "drarena.agents.commands",
    "drarena.drift.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="drarena", description=__doc__)
    parser.add_argument("--version", action="version", version=f"drarena {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # area not built yet
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # A command that sets `intermixed` to the name of its list of positionals takes them on
    # either side of its options (`snapshot import NAME --host h a.warc b.warc`).
    field = getattr(args, "intermixed", None)
    if extra and field and not any(e.startswith("-") for e in extra):
        setattr(args, field, [*getattr(args, field), *extra])
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        result = args.func(args)
    except DrarenaError as exc:
        print(f"drarena: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("drarena: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
