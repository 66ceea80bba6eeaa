"""drarena.read_run: a run folder read back typed (header, config, matches, rounds,
leaderboard, analyses), on the committed recorded run; nothing in the folder is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import drarena
from drarena.config.tournament import TournamentConfig
from drarena.errors import DrarenaError
from drarena.ledger.header import LiveBlock, RunHeader, ToolRecordRef
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.models.types import RoleUsage
from drarena.report.run import RunAnalyses, StoredRun

FIXTURE = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"


def test_read_run_gives_every_part_typed() -> None:
    before = {p.name: p.read_bytes() for p in FIXTURE.iterdir() if p.is_file()}
    got = drarena.read_run(FIXTURE)
    assert isinstance(got, StoredRun) and got.path == FIXTURE
    assert isinstance(got.header, RunHeader) and isinstance(got.config, TournamentConfig)
    assert got.config.name == got.header.config["name"]
    assert isinstance(got.header.tool_record, ToolRecordRef)
    assert got.header.tool_record.table == "tools"
    assert got.header.lock_sha256 is not None and set(got.header.lock_sha256) == {
        "drarena",
        "vllm",
    }
    assert got.header.agent_isolation == "none: no command agents"
    assert all(isinstance(u, RoleUsage) for u in got.header.usage.values())
    assert sum(u.model_calls for u in got.header.usage.values()) == got.header.model_calls
    assert got.header.live is None and got.header.examiner_check is None
    assert got.matches and all(isinstance(m, MatchRecord) for m in got.matches)
    assert got.rounds == tuple(r for m in got.matches for r in m.rounds)
    assert all(isinstance(r, RoundRecord) for r in got.rounds)
    assert isinstance(got.analyses, RunAnalyses)
    assert all(isinstance(r, LeaderboardRow) for r in got.leaderboard)
    assert sorted(r.agent for r in got.leaderboard) == got.config.agent_names()
    # the same figures `drarena run rank --json` prints; the leaderboard file's rows
    stored = json.loads((FIXTURE / "leaderboard.json").read_text(encoding="utf-8"))
    assert [r.to_dict() for r in got.leaderboard] == stored
    assert {p.name: p.read_bytes() for p in FIXTURE.iterdir() if p.is_file()} == before


def test_the_header_round_trips_run_json_byte_for_byte() -> None:
    text = (FIXTURE / "run.json").read_text(encoding="utf-8")
    assert RunHeader.model_validate_json(text).to_json() == text


def test_a_live_block_is_typed_and_kept_as_written() -> None:
    block = {
        "provider": {"kind": "searxng", "args": {"url": "http://127.0.0.1:8888"}},
        "web": {"timeout_s": 5},
        "captures": [{"path": "snapshots/a", "fingerprint": None, "status": "in progress"}],
        "replayed": False,
    }
    header = RunHeader.model_validate({"config": {}, "mode": "live", "live": block})
    assert isinstance(header.live, LiveBlock) and header.live.captures[0].path == "snapshots/a"
    assert json.loads(header.to_json())["live"] == block


def test_read_run_of_a_folder_with_no_header_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DrarenaError, match=r"no run\.json"):
        drarena.read_run(tmp_path)


def test_importing_drarena_stays_cheap() -> None:
    code = (
        "import sys, drarena; print('drarena.report.run' in sys.modules, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
