"""The docs site builds with --strict: a broken link, a page missing from the nav or a
reference generator that fails (config and CLI pages are generated from the code) fails CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_docs_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is a dev dependency (make setup installs it)")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--quiet",
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    config = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "page_budget_chars" in config and "max_rounds" in config
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "drarena tournament" in cli and "--no-serve" in cli


def test_every_page_is_in_the_nav() -> None:
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    listed: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, str):
            listed.add(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(nav)
    pages = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert pages <= listed, f"not in mkdocs.yml's nav: {sorted(pages - listed)}"
