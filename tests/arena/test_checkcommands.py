"""`drarena examiner-check` (arena.checkcommands): what a replay reads from its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.arena.checkcommands import REPORT_FILE, ROLES_FILE, default_config, run_check
from drarena.errors import DrarenaError
from drarena.validity.check import CheckSettings


@pytest.mark.parametrize(
    "roles", [b"xx", b"[1]", b'{"examiner": 3}', b'{"examiner": {"model": "m"}}']
)
def test_a_replay_with_a_damaged_roles_file_is_one_line(tmp_path: Path, roles: bytes) -> None:
    """`examiner-check --replay` binds the models roles.json recorded: a damaged one is named
    (it was a JSONDecodeError or TypeError traceback), and nothing is written."""
    (tmp_path / ROLES_FILE).write_bytes(roles)
    (tmp_path / REPORT_FILE).write_text("{}", encoding="utf-8")
    (tmp_path / "llm-cache.sqlite").write_bytes(b"")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    config = default_config(Path("snapshots/pydocs"), Path("index"), seed=0)
    with pytest.raises(DrarenaError, match=rf"{ROLES_FILE}: damaged .*without --replay") as err:
        run_check(config, tmp_path, CheckSettings(pairs=1), replay=True, serve=False)
    assert "\n" not in str(err.value)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
