"""`drarena run match` (runs.single): what a replay reads from its folder."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from replay_checks import refused_leaving_folder

import drarena.runs.single as single


def replay_args(out: Path) -> argparse.Namespace:
    """A replay of `out`; the snapshot does not exist: roles.json is read before it is."""
    return argparse.Namespace(
        snapshot=out.parent / "no-snapshot",
        index_root=Path("index"),
        a="closed_book",
        b="null",
        tree="t00",
        retriever="bm25",
        max_rounds=1,
        seed=0,
        out=out,
        replay=True,
    )


def replay_folder(tmp_path: Path, roles: bytes) -> None:
    (tmp_path / "roles.json").write_bytes(roles)
    (tmp_path / "match.json").write_text("{}", encoding="utf-8")


@pytest.mark.parametrize("roles", [b"xx", b"[1]", b"\xff{}", b'{"model": "m"}'])
def test_a_replay_with_a_damaged_roles_file_is_one_line(tmp_path: Path, roles: bytes) -> None:
    """A damaged roles.json was a JSONDecodeError, KeyError or TypeError traceback."""
    replay_folder(tmp_path, roles)
    refused_leaving_folder(
        tmp_path,
        lambda: single.run_single_match(replay_args(tmp_path)),
        r"roles\.json: damaged .*without --replay",
    )


def test_a_replay_with_a_roles_file_over_the_limit_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """roles.json was decoded whole, however large: one over MAX_ROLES_BYTES is one line
    naming it, having read only that much, and nothing is written."""
    roles = b'{"model": "m", "api_base": "http://127.0.0.1:9", "padding": "' + b"x" * 100 + b'"}'
    replay_folder(tmp_path, roles)
    monkeypatch.setattr(single, "MAX_ROLES_BYTES", 64)
    refused_leaving_folder(
        tmp_path,
        lambda: single.run_single_match(replay_args(tmp_path)),
        r"roles\.json: larger than 64 bytes .*--replay",
    )
