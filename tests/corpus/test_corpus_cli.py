"""The corpus commands through the real CLI entry point."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.corpus.extract import ExtractResult


def test_extract_trees_show_dot(
    pydocs: ExtractResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = str(pydocs.snapshot_dir)
    assert main(["extract", snap, "--no-progress"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert (
        main(
            [
                "trees",
                snap,
                "--count",
                "2",
                "--seed",
                "4",
                "--max-depth",
                "3",
                "--max-width",
                "4",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "2 trees written" in out and "tree-001:" in out
    tree = pydocs.snapshot_dir / "trees" / "tree-000.json"

    assert main(["trees", "show", str(tree)]) == 0
    view = capsys.readouterr().out.splitlines()
    assert view[0].startswith("tree-000:")
    assert not view[1].startswith(" ")  # the root, then indented children
    assert any(re.match(r"^  \[\w+\] ", line) for line in view)
    assert max(len(line) - len(line.lstrip()) for line in view[1:]) == 6  # depth 3

    assert main(["trees", "show", str(tree), "--dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith('digraph "tree-000" {') and dot.rstrip().endswith("}")
    assert dot.count(" -> ") == len(view) - 2  # one edge per non-root node


def test_cli_errors_are_one_line(
    pydocs: ExtractResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["snapshot", "trees", str(pydocs.snapshot_dir), "--count", "100000", "--no-progress"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(
        r"drarena: error: asked for 100000 trees but the snapshot can root only "
        r"\d+ .*",
        err,
    )
    assert main(["trees", "show"]) == 2
    assert "give a tree file" in capsys.readouterr().err
    assert main(["extract", str(tmp_path / "nowhere")]) == 2
    assert "no such snapshot folder" in capsys.readouterr().err
