"""`drarena examiner-check` (runs.checkcommands): what a replay reads from its folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_checks import refused_leaving_folder

from drarena.runs.checkcommands import REPORT_FILE, ROLES_FILE, default_config, run_check
from drarena.validity.check import CheckSettings


def replay_folder(folder: Path, roles: bytes) -> None:
    """A check's --out folder as a replay finds it, with `roles` as its roles.json."""
    (folder / ROLES_FILE).write_bytes(roles)
    (folder / REPORT_FILE).write_text("{}", encoding="utf-8")
    (folder / "llm-cache.sqlite").write_bytes(b"")


def replay(folder: Path) -> object:
    config = default_config(Path("snapshots/pydocs"), Path("index"), seed=0)
    return run_check(config, folder, CheckSettings(pairs=1), replay=True, serve=False)


@pytest.mark.parametrize(
    "roles", [b"xx", b"[1]", b'{"examiner": 3}', b'{"examiner": {"model": "m"}}']
)
def test_a_replay_with_a_damaged_roles_file_is_one_line(tmp_path: Path, roles: bytes) -> None:
    """`examiner-check --replay` binds the models roles.json recorded: a damaged one is named
    (it was a JSONDecodeError or TypeError traceback), and nothing is written."""
    replay_folder(tmp_path, roles)
    refused_leaving_folder(
        tmp_path, lambda: replay(tmp_path), rf"{ROLES_FILE}: damaged .*without --replay"
    )


def test_a_replay_with_a_roles_file_over_the_limit_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """roles.json was decoded whole, however large: one over MAX_ROLES_BYTES is one line
    naming it, having read only that much, and nothing is written."""
    import drarena.runs.checkcommands as checkcommands

    replay_folder(tmp_path, b'{"padding": "' + b"x" * 100 + b'"}')
    monkeypatch.setattr(checkcommands, "MAX_ROLES_BYTES", 64)
    refused_leaving_folder(
        tmp_path, lambda: replay(tmp_path), rf"{ROLES_FILE}: larger than 64 bytes .*--replay"
    )


@pytest.mark.parametrize(
    ("modes", "error"),
    [
        ("majority", "--judges: unknown judge kind 'majority' (one of both, evidence, hybrid"),
        ("pairwise,pairwise", "--judges: 'pairwise' is named twice"),
        (" , ", "--judges: name at least one judge kind"),
    ],
)
def test_bad_modes_are_refused_before_anything_starts(
    modes: str, error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The modes were checked only once the model server was up and the trees loaded: now
    first, so the snapshot (here a folder that does not exist) is not even opened."""
    from drarena.cli import main

    out = tmp_path / "out"
    argv = ["examiner-check", str(tmp_path / "no-snapshot"), "--modes", modes, "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1
    assert not out.exists()
