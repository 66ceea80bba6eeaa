"""Command line over the library, grouped by the object a command acts on.

Each module in COMMAND_MODULES exposes `register(subparsers)` and keeps its imports light;
heavy dependencies load inside the command functions. The rooms register flat names (their
names before the grouping); ROUTES below places each under its group, and the old flat names
stay as hidden aliases for one release that print one deprecation line and run the same
function.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from drarena import __version__
from drarena.errors import DrarenaError
from drarena.files import disk_full
from drarena.quoting import guarded_terminal, shown

COMMAND_MODULES = (
    "drarena.web.commands",
    "drarena.corpus.commands",
    "drarena.search.commands",
    "drarena.webproxy.commands",
    "drarena.models.commands",
    "drarena.runs.commands",
    "drarena.agents.commands",
    "drarena.drift.commands",
    "drarena.runs.checkcommands",
    "drarena.report.commands",
)

# the old combined `drarena snapshot SPEC|import|export` parser: a name no one can type
OLD_SNAPSHOT = "snapshot (old form)"

# group -> its one-line help, in the order `drarena --help` lists them
GROUPS = {
    "snapshot": "crawl, import, import-trees, export, verify, serve, serve-web, extract, trees",
    "search": "index, query, serve, diagnose (retrievers of a snapshot)",
    "run": "rank, ablate, replay, add-agent, rejudge, compare, audit (a run folder); match (one "
    "match)",
    "drift": "snapshot (vs the live web or a later one); run (asked again live)",
    "agent": "ask (one agent, one question)",
    "model": "serve (a local OpenAI-compatible model server)",
}

# name a room registers -> (group or None for top level, name in the group, deprecated alias?)
ROUTES: dict[str, tuple[str | None, str, bool]] = {
    "tournament": (None, "tournament", False),
    "snapshot": ("", OLD_SNAPSHOT, False),  # "": hidden at the top level
    "snapshot-crawl": ("snapshot", "crawl", False),
    "snapshot-import": ("snapshot", "import", False),
    "snapshot-export": ("snapshot", "export", False),
    "snapshot-import-trees": ("snapshot", "import-trees", False),
    "verify": ("snapshot", "verify", True),
    "replay-snapshot": ("snapshot", "serve", True),
    "serve-web": ("snapshot", "serve-web", False),
    "extract": ("snapshot", "extract", True),
    "trees": ("snapshot", "trees", True),
    "index": ("search", "index", True),
    "search": ("search", "query", True),
    "serve-search": ("search", "serve", True),
    "diagnose-retrievers": ("search", "diagnose", True),
    "rank": ("run", "rank", True),
    "ablate": ("run", "ablate", False),
    "replay": ("run", "replay", True),
    "add-agent": ("run", "add-agent", True),
    "rejudge": ("run", "rejudge", False),
    "compare": ("run", "compare", False),
    "audit": ("run", "audit", False),
    "match": ("run", "match", True),
    "drift": ("drift", "snapshot", True),
    "drift-run": ("drift", "run", True),
    "ask": ("agent", "ask", True),
    "serve": ("model", "serve", True),
}

# An old command whose name is now a group's: `drarena search SNAP QUERY` (its first word not
# one of the group's commands) still runs, as the group's command named here.
LEGACY_DEFAULT = {"snapshot": "crawl", "search": "query", "drift": "snapshot"}
LEGACY_ARGV = {
    "snapshot": [OLD_SNAPSHOT],
    "search": ["search", "query"],
    "drift": ["drift", "snapshot"],
}


def deprecated_names() -> list[tuple[str, str]]:
    """(old, new) command names, for the CLI reference page."""
    pairs = [
        (old, f"{group} {new}")
        for old, (group, new, alias) in ROUTES.items()
        if alias and old != group
    ]
    shown = {"snapshot": "SPEC", "search": "SNAPSHOT QUERY", "drift": "SNAPSHOT"}
    pairs += [
        (f"{group} {shown[group]}", f"{group} {new} {shown[group]}")
        for group, new in LEGACY_DEFAULT.items()
    ]
    pairs.append(("replay SNAPSHOT", "snapshot serve SNAPSHOT"))
    return pairs


def _deprecated(old: str, new: str) -> str:
    return f"drarena: '{old}' is deprecated; use 'drarena {new}'"


class _Router:
    """Stands in for argparse's subparsers in each room's register(): files a flat name under
    its group (ROUTES) and remembers the old name, whose alias parser is made once the room has
    added its arguments (argparse copies a parent's arguments when the child is made)."""

    def __init__(
        self, top: Any, groups: dict[str, Any], made: dict[str, argparse.ArgumentParser]
    ) -> None:
        self.top = top
        self.groups = groups
        self.made = made
        self.aliases: list[tuple[str, argparse.ArgumentParser, str]] = []

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        group, new, alias = ROUTES.get(name, (None, name, False))
        if group == "":  # hidden: no help= keeps it out of `drarena --help`
            kwargs.pop("help", None)
            kwargs.setdefault("prog", f"drarena {name}")
            hidden: argparse.ArgumentParser = self.top.add_parser(new, **kwargs)
            return hidden
        if name in self.made:  # made beforehand to head the list
            early = self.made.pop(name)
            early.description = kwargs.get("description", early.description)
            return early
        where = self.top if group is None else self.groups[group]
        full = new if group is None else f"{group} {new}"
        kwargs.setdefault("prog", f"drarena {full}")
        if "usage" in kwargs:  # rooms wrote their usage lines with the old name
            kwargs["usage"] = kwargs["usage"].replace(f"drarena {name}", f"drarena {full}")
        parser: argparse.ArgumentParser = where.add_parser(new, **kwargs)
        if alias and name != group:
            self.aliases.append((name, parser, full))
        return parser

    def make_aliases(self) -> None:
        for old, parser, full in self.aliases:
            # no help= : argparse then leaves the alias out of `drarena --help`
            hidden = self.top.add_parser(
                old,
                parents=[parser],
                add_help=False,
                prog=f"drarena {old}",
                description=parser.description,
            )
            hidden.set_defaults(deprecated=_deprecated(old, full))
        self.aliases.clear()


def _wide(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, max_help_position=22)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error line shows the arguments it echoes through
    quoting.shown (a file name holding a newline and `error: ...` forged a line)."""

    def error(self, message: str) -> NoReturn:
        super().error(shown(message, None))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="drarena",
        formatter_class=_wide,
        description="Deep-research agent arena on a frozen web. "
        "`drarena COMMAND --help` shows a command's options.",
        epilog="Main job: `drarena tournament CONFIG` (e.g. configs/demo.yaml). Old flat "
        "names (replay-snapshot, drift-run, ...) still work for one release.",
    )
    parser.add_argument("--version", action="version", version=f"drarena {__version__}")
    parser.add_argument(
        "--verbose", action="store_true", help="show library logging (litellm's included) on stderr"
    )
    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # the main job heads the list; the runs room adds its arguments
    made: dict[str, argparse.ArgumentParser] = {
        "tournament": top.add_parser(
            "tournament",
            prog="drarena tournament",
            help="run (or resume) a Swiss tournament: the main job",
        )
    }
    groups: dict[str, Any] = {}
    for group, help_text in GROUPS.items():
        g = top.add_parser(
            group,
            help=help_text,
            prog=f"drarena {group}",
            formatter_class=_wide,
            description=f"drarena {group} COMMAND: {help_text}.",
        )
        groups[group] = g.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    router = _Router(top, groups, made)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # area not built yet
                continue
            raise
        module.register(router)
    router.make_aliases()
    return parser


def _legacy_argv(argv: list[str]) -> list[str]:
    """`drarena snapshot SPEC` (and search, drift): the old command that a group now names."""
    if len(argv) < 2 or argv[0] not in LEGACY_DEFAULT or argv[1] in ("-h", "--help"):
        return argv
    if argv[1] in {new for group, new, _ in ROUTES.values() if group == argv[0]}:
        return argv
    new = LEGACY_DEFAULT[argv[0]]
    print(_deprecated(f"{argv[0]} {argv[1]}", f"{argv[0]} {new} {argv[1]}"), file=sys.stderr)
    return [*LEGACY_ARGV[argv[0]], *argv[1:]]


def _quiet_libraries(verbose: bool) -> None:
    """Long commands print progress and results, not library chatter: litellm's loggers (which
    would echo model replies) are off unless --verbose, which shows every logger on stderr."""
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
        logging.getLogger(name).disabled = not verbose


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Everything it prints goes through quoting's TerminalGuard, and an
    error line through quoting.shown: text from a page, a model, an agent, a manifest, a
    config or a user's path cannot send the terminal commands or forge a line."""
    with guarded_terminal():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    raw = list(sys.argv[1:] if argv is None else argv)
    i = next((n for n, a in enumerate(raw) if not a.startswith("-")), len(raw))
    raw = raw[:i] + _legacy_argv(raw[i:])
    args, extra = parser.parse_known_args(raw)
    # A command that sets `intermixed` to the name of its list of positionals takes them on
    # either side of its options (`snapshot import NAME --host h a.warc b.warc`).
    field = getattr(args, "intermixed", None)
    if extra and field and not any(e.startswith("-") for e in extra):
        setattr(args, field, [*getattr(args, field), *extra])
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    notice = getattr(args, "deprecated", None)
    if notice:
        print(notice, file=sys.stderr)
    _quiet_libraries(args.verbose)
    func: Callable[[argparse.Namespace], int | None] = args.func
    try:
        result = func(args)
    except DrarenaError as exc:
        print(f"drarena: error: {shown(str(exc), None)}", file=sys.stderr)
        if exc.detail:
            print(shown(exc.detail, None, lines=True), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("drarena: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # after BrokenPipeError, one of them
        if not disk_full(exc):
            raise
        # a writer without its own line for it (every file drarena writes has one, through
        # drarena.files): still one line, not a traceback
        where = shown(str(exc.filename), 1000) + ": " if exc.filename else ""
        print(f"drarena: error: {where}no room left to write ({exc.strerror})", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
