"""`import drarena`: the names it exports, imported on first use, and nothing heavy before.

Why the import cost matters: the rooms read `drarena.__version__`, and every command and test
process imports the package first; a notebook's `import drarena` should not load pydantic,
numpy or scipy before a name is asked for."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import drarena

INIT = Path(drarena.__file__)
HEAVY = ("pydantic", "numpy", "scipy", "yaml", "litellm", "aiohttp")


def probe(code: str) -> object:
    """The JSON printed by `code` run in a fresh interpreter (this one has imported
    everything already)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout)


def test_importing_drarena_loads_no_room_and_no_heavy_library() -> None:
    code = (
        "import json, sys, drarena\n"
        "print(json.dumps({'drarena': sorted(m for m in sys.modules if m.startswith('drarena')),"
        f" 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))"
    )
    assert probe(code) == {"drarena": ["drarena"], "heavy": []}


def test_reading_a_run_does_not_load_the_runs_room() -> None:
    """`drarena.read_run` stays the light import it was: the report room, not the runs room
    that plays tournaments (the model client, the agents, the engine)."""
    code = (
        "import json, sys, drarena\n"
        "drarena.read_run\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('drarena.runs'))))"
    )
    assert probe(code) == []


def test_every_exported_name_resolves_to_its_module_and_is_kept() -> None:
    for name in drarena.__all__:
        value = getattr(drarena, name)
        assert value is not None, name
        if name != "__version__":
            assert value.__name__ == name, name
            assert name in vars(drarena), name  # the next lookup is an ordinary one
    assert set(drarena.__all__) <= set(dir(drarena))


def test_the_type_checkers_view_is_the_runtime_one() -> None:
    """The names imported under TYPE_CHECKING (what mypy sees) are exactly the lazy exports,
    from the same modules, and __all__ lists them all."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    seen = {
        alias.name: node.module
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    exports = drarena._EXPORTS  # the module's own table: the test reads it, no one else
    assert seen == exports
    assert set(drarena.__all__) == {*exports, "__version__"}
    for name, module in exports.items():
        assert getattr(importlib.import_module(module), name) is getattr(drarena, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'drarena' has no attribute 'nope'"):
        _ = drarena.nope
    assert not hasattr(drarena, "execute")  # the runs room's own names are not exported
    with pytest.raises(ImportError):
        from drarena import nope  # noqa: F401


def test_tournament_options_are_the_commands() -> None:
    """`drarena tournament CONFIG`'s options: served models, the cache read and written, the
    config's examiner-check before the first match."""
    config = drarena.load_config(
        {
            "name": "t",
            "snapshot": "snapshots/pydocs",
            "examiner_check": {"tasks": 2},
            "models": {"roles": {"examiner": {"model": "served"}, "agent": {"model": "served"}}},
            "agents": [{"name": "a", "kind": "closed_book"}, {"name": "b", "kind": "null"}],
        }
    )
    options = drarena.tournament_options(config)
    assert isinstance(options, drarena.RunOptions)
    assert options.serve and options.cache_mode.value == "read-write"
    assert options.examiner_check_pairs == 2 and options.model is None and options.prepare
    assert dataclasses.replace(options, model="qwen1.5b-cpu").model == "qwen1.5b-cpu"


def test_a_config_file_loads_as_the_command_reads_it(repo_root: Path) -> None:
    config = drarena.load_config(repo_root / "configs" / "demo.yaml")
    assert config == drarena.load_config(str(repo_root / "configs" / "demo.yaml"))
    assert config.name == "demo" and len(config.agents) == 5
