"""The shape of drarena's functions (issue 34): none over 80 lines, no parameter list over 8.

Why: a function that long does several things its name does not say, and a list that wide
is an options object that was never named (a caller passes sixteen keywords, some of which
only a test ever sets). The test reads the source with `ast`, so it needs nothing installed.

The rules, precisely:

- A function's length is its `def` line (decorators not counted) through its last line,
  docstring and comments included: `end_lineno - lineno + 1`. Over MAX_LINES fails.
- A parameter list counts every parameter, positional-only, ordinary, keyword-only, `*args`
  and `**kwargs`, except a method's leading `self` or `cls`. Over MAX_PARAMS fails.
- Exempt from the length rule only: argparse registration, that is a module-level function
  named `register` whose first parameter is `subparsers` (each room's command shell,
  drarena/*/commands.py, files its subcommands there: a list of `add_argument` calls is
  long because the command line is, and splitting it would only scatter it).
- Nested functions and methods are checked too, each by its qualified name.

KNOWN holds the offenders not yet fixed. It may only shrink: a function that newly breaks a
rule fails the test, and so does an entry that no longer breaks its rule (remove it), so the
list stays the true one. Run this file as a script to print the current offenders.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "drarena"

MAX_LINES = 80
MAX_PARAMS = 8

# (rule, "path relative to drarena/:qualified.name") -> not fixed yet; only ever shrinks
KNOWN: set[tuple[str, str]] = set()

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """Every function under `node` with its qualified name (Class.method, outer.inner)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + child.name, child
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def parameters(fn: Function) -> list[str]:
    """The names a call can bind, `self`/`cls` left out (see the module docstring)."""
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return [n for n in names if n not in ("self", "cls")]


def is_registration(qualname: str, fn: Function) -> bool:
    """argparse registration: module-level `register(subparsers, ...)`."""
    params = [p.arg for p in fn.args.args]
    return qualname == "register" and params[:1] == ["subparsers"]


def offenders() -> dict[tuple[str, str], int]:
    """(rule, where) -> the measure that breaks it, for all of drarena/."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for qualname, fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{rel}:{qualname}"
            lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if lines > MAX_LINES and not is_registration(qualname, fn):
                found["lines", where] = lines
            if len(parameters(fn)) > MAX_PARAMS:
                found["params", where] = len(parameters(fn))
    return found


def test_no_new_long_function_or_wide_parameter_list() -> None:
    new = {k: v for k, v in offenders().items() if k not in KNOWN}
    assert not new, (
        f"over {MAX_LINES} lines or {MAX_PARAMS} parameters (split it into named steps, or "
        f"gather the parameters into an options object): {sorted(new.items())}"
    )


def test_the_allow_list_only_shrinks() -> None:
    fixed = KNOWN - offenders().keys()
    assert not fixed, f"no longer offenders: remove them from KNOWN: {sorted(fixed)}"


def test_the_checker_sees_what_it_should() -> None:
    source = (
        "def register(subparsers):\n" + "    x = 1\n" * 90 + "def wide(a, b, c, d, e, "
        "f, *g, h, **i):\n    pass\n"
        "class C:\n    def m(self, a, b, c, d, e, f, g, h):\n        pass\n"
    )
    found = {q: (fn.end_lineno, len(parameters(fn))) for q, fn in _functions(ast.parse(source))}
    assert found["wide"][1] == 9 and found["C.m"][1] == 8  # self is not counted
    fn = next(f for q, f in _functions(ast.parse(source)) if q == "register")
    assert is_registration("register", fn)


if __name__ == "__main__":
    for (rule, where), measure in sorted(offenders().items()):
        print(f"{rule:6} {measure:4}  {where}")
