"""The package map as a test: imports follow the data flow, and nothing private crosses modules.

Rooms, lowest first (a room may import only rooms below it; siblings, written a | b, never
import each other):

  base (drarena/*.py: errors, records, registry, quoting, ...)
  -> web.warc -> web.crawling | web.serving -> corpus -> live -> search -> webproxy -> models
  -> agents | examiner -> ledger -> validity -> drift -> arena -> config -> runs -> report
  -> api (the Python API that `import drarena` exports: above every room, imported by none)

A room is a package of drarena/, except in `web`, whose subpackages are its rooms (WARC I/O,
crawling, serving): drarena/web/ itself holds only them, its `__init__.py` and its shell.

Each room's `commands.py`, and drarena/cli.py, are the command-line shell: thin argument
handling over the library, above every room; they may import any room, and no room module
imports a shell module. Imports inside functions count too (a lazy import is still a
dependency). The test reads the source with `ast`, so it needs nothing installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "drarena"

ORDER = [
    "base",
    "web.warc",
    "web.crawling",
    "corpus",
    "live",
    "search",
    "webproxy",
    "models",
    "agents",
    "ledger",
    "validity",
    "drift",
    "arena",
    "config",
    "runs",
    "report",
    "api",
]
SIBLINGS = {"examiner": "agents", "web.serving": "web.crawling"}  # same rank, never each other
RANK = {room: i for i, room in enumerate(ORDER)} | {a: ORDER.index(b) for a, b in SIBLINGS.items()}
NESTED = {"web": "web.warc"}  # a package split into rooms, and the room of its own __init__
RANK |= {package: RANK[lowest] for package, lowest in NESTED.items()}
SHELL = "shell"


def room_of(module: str) -> str:
    """The room of a dotted module name inside drarena."""
    parts = module.split(".")
    if parts[-1] in ("commands", "cli", "__main__"):
        return SHELL
    if len(parts) == 1:
        return "base"
    if len(parts) == 2:
        return "base" if not (PACKAGE / parts[1]).is_dir() else parts[1]
    if parts[1] in NESTED:
        return f"{parts[1]}.{parts[2]}"
    return parts[1]


def unit_of(parts: list[str] | tuple[str, ...]) -> str:
    """The room a path inside drarena/ (its parts, package first) lies in, for the cycle check:
    `web.warc` for drarena/web/warc/..., `web` for drarena/web/commands.py."""
    if parts[0] in NESTED and len(parts) > 1 and (PACKAGE / parts[0] / parts[1]).is_dir():
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) for every absolute drarena import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "drarena":
                found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "drarena":
                    found.append((node.lineno, alias.name, []))
    return found


def target_module(module: str, name: str) -> str:
    """`from drarena.agents import citations` imports the module drarena.agents.citations."""
    candidate = f"{module}.{name}"
    base = PACKAGE.parent / Path(*candidate.split("."))
    return candidate if base.with_suffix(".py").is_file() or base.is_dir() else module


def violations() -> tuple[list[str], list[str]]:
    upward, private = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        # drarena/__init__.py is the package's public face: its lazy exports (drarena.api,
        # read_run) reach the top rooms the way a shell does; the rooms read only
        # __version__ from it
        src = SHELL if here == "drarena" else room_of(here)
        for line, module, names in imports(path):
            targets = {target_module(module, n) for n in names} or {module}
            for target in targets:
                dst = room_of(target)
                where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
                if dst == SHELL and src == SHELL:
                    continue
                if dst == SHELL:
                    upward.append(f"{where} (a shell module)")
                elif src != SHELL and dst != src and RANK[dst] >= RANK[src]:
                    upward.append(f"{where} ({src} may not import {dst})")
            private += [
                f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}.{n}"
                for n in names
                if n.startswith("_")
                and not n.startswith("__")
                and target_module(module, n) == module
                and module != here
            ]
    return upward, private


def test_rooms_cover_every_package() -> None:
    """A new package must be placed in the map (and this docstring) before it is used."""
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    for nested in NESTED:
        packages.remove(nested)
        rooms = {p.name for p in (PACKAGE / nested).iterdir() if (p / "__init__.py").is_file()}
        packages |= {f"{nested}.{room}" for room in rooms}
        loose = {
            p.name
            for p in (PACKAGE / nested).glob("*.py")
            if p.name not in ("__init__.py", "commands.py")
        }
        assert not loose, f"drarena/{nested}/ holds only its rooms and commands.py: {loose}"
        assert imports(PACKAGE / nested / "__init__.py") == [], f"drarena/{nested}/__init__.py"
    assert packages <= set(RANK), f"place these in ORDER: {sorted(packages - set(RANK))}"


def test_imports_follow_the_data_flow() -> None:
    upward, _ = violations()
    assert not upward, "upward or shell imports:\n" + "\n".join(upward)


def test_no_private_name_crosses_modules() -> None:
    _, private = violations()
    assert not private, "private names imported across modules:\n" + "\n".join(private)


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The rule itself: a report module import is upward from agents, not from arena."""
    assert RANK["agents"] < RANK["report"]
    assert room_of("drarena.agents.react") == "agents"
    assert room_of("drarena.runs.commands") == SHELL
    assert room_of("drarena.errors") == "base"
    assert RANK["examiner"] == RANK["agents"]
    # the engine (arena) sits below the application that assembles runs with it
    assert room_of("drarena.arena.tournament") == "arena" and RANK["arena"] < RANK["runs"]
    # web's rooms: WARC I/O below crawling and serving, which are siblings, all below corpus
    assert room_of("drarena.web.warc.snapshot") == "web.warc"
    assert room_of("drarena.web.crawling.crawl") == "web.crawling"
    assert room_of("drarena.web.serving.serve") == "web.serving"
    assert room_of("drarena.web.commands") == SHELL
    assert RANK["web.warc"] < RANK["web.crawling"] == RANK["web.serving"] < RANK["corpus"]
    assert unit_of(("web", "crawling", "crawl.py")) == "web.crawling"
    assert unit_of(("web", "commands.py")) == "web"


def test_no_two_packages_import_each_other_even_through_commands() -> None:
    """The before-stop check's rule: package A importing B and B importing A is a cycle even
    when one side is a commands.py shell (a shell imports downward like everything else).
    web's rooms count as packages here (web.warc, web.crawling, web.serving; web: its shell)."""
    deps: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2:
            continue
        here = unit_of(parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                bits = name.split(".")
                if bits[0] != "drarena" or len(bits) <= 2 or not (PACKAGE / bits[1]).is_dir():
                    continue
                there = unit_of(bits[1:])
                if there != here:
                    deps.setdefault(here, set()).add(there)
    mutual = sorted(
        f"{a}<->{b}" for a in deps for b in deps[a] if a < b and a in deps.get(b, set())
    )
    assert mutual == []
