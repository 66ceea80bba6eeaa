"""drarena's own source as every supported Python reads it (issue 38, item 10).

Python 3.13 compiles docstrings through UTF-8 (it strips their indentation at compile time),
so a docstring holding a lone surrogate (`"\\ud800"` written with one backslash) made
`import drarena.models.backend` fail with UnicodeEncodeError there, and with it 185 tests;
3.11 and 3.12 never noticed. Read with `ast`, so this runs on any Python.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "drarena"


def test_no_docstring_holds_a_lone_surrogate() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                try:
                    (doc or "").encode("utf-8")
                except UnicodeEncodeError:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 1)}")
    assert not found, f"docstrings with a lone surrogate (write \\\\ud800): {found}"
