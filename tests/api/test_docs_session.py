"""docs/api.md's session runs as written: its Python blocks, in order, in one namespace, each
printed line the page shows checked against what the block printed.

Only what needs a model is swapped: `run_tournament` plays the small scripted tournament
(tests/api/api_helpers.py) instead of the CPU demo, and `examiner_check` runs on a test
snapshot with the scripted backend; each first checks it was called as the page calls it
(the demo config, the command's options). Everything else (the config file, the options,
reading the rounds, replay, rejudge, rank) is the real API on the real objects, so a name the
page uses that the API lacks fails here."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from api_helpers import config_data, scripted
from arena_live_site import scripted_models

import drarena

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def session() -> list[tuple[str, list[str]]]:
    """(code, the output lines it shows) for each Python block of the page: a comment line
    right after a `print(...)` line is that print's output, as a notebook shows it."""
    out = []
    for code in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        lines = code.splitlines()
        shown = [
            line.strip()[2:]
            for before, line in itertools.pairwise(lines)
            if line.startswith("# ") and before.lstrip().startswith("print(")
        ]
        out.append((code, shown))
    return out


def test_the_page_has_a_session_with_shown_output() -> None:
    blocks = session()
    assert len(blocks) >= 6 and sum(len(shown) for _, shown in blocks) >= 4


def test_the_docs_session_runs_as_written(
    snapshot: Path,
    imported: Path,
    tmp_path: Path,
    repo_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = drarena.load_config(config_data(tmp_path, snapshot))
    real_run, real_check = drarena.run_tournament, drarena.examiner_check
    demo = drarena.load_config(repo_root / "configs" / "demo.yaml")

    def run_tournament(
        config: drarena.TournamentConfig,
        options: drarena.RunOptions | None = None,
        *,
        live: bool = False,
    ) -> drarena.StoredRun:
        assert config == demo and not live
        assert options is None or options == drarena.tournament_options(config)
        return real_run(small, scripted(small, check=1))

    def examiner_check(
        where: Path | str,
        config: drarena.TournamentConfig | None = None,
        options: drarena.CheckOptions | None = None,
    ) -> drarena.CheckResult:
        assert Path(where) == Path("snapshots/pydocs") and config == demo
        changed = dataclasses.replace(
            options or drarena.CheckOptions(),
            out=tmp_path / "check",
            serve=False,
            backend=scripted_models(),
        )
        return real_check(imported, small, changed)

    monkeypatch.setattr(drarena, "run_tournament", run_tournament)
    monkeypatch.setattr(drarena, "examiner_check", examiner_check)
    monkeypatch.chdir(repo_root)  # the page runs at the repository's root
    namespace: dict[str, Any] = {}
    for code, shown in session():
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(DOC), "exec"), namespace)
        lines = printed.getvalue().splitlines()
        for line in shown:
            assert line in lines, f"{line!r} not printed by:\n{code}\n(printed: {lines})"
    assert namespace["replayed"].identical and namespace["run"].path.is_relative_to(tmp_path)
