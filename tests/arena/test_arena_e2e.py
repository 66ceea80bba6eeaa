"""End to end on the real parts: the committed snapshot, its trees, the CPU vLLM server.

A tiny tournament (oracle against closed_book, one tree, one round) through the CLI, then
`drarena replay` (zero model calls, byte-identical log and leaderboard) and `drarena rank`.
The CPU model makes the pipeline run, not judge well: the assertions are about the plumbing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from drarena.cli import main
from drarena.ledger.records import MatchRecord
from drarena.models.serve import ServerHandle

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_tournament_replay_and_rank(
    pydocs_indexed: tuple[Path, Path],
    model_server: ServerHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    snapshot, index_root = pydocs_indexed
    monkeypatch.setenv("DRARENA_MODEL_API_BASE", model_server.api_base)
    role = {"model": "served", "timeout_s": 900, "sampling": {"max_tokens": 384}}
    config = {
        "name": "e2e",
        "snapshot": str(snapshot),
        "index_root": str(index_root),
        "runs_root": str(tmp_path),
        "seed": 1,
        "swiss_rounds": 1,
        "concurrency": 1,
        "trees": {"count": 1},
        "match": {"max_rounds": 1, "page_budget_chars": 3000},
        "rating": {"resamples": 200},
        "models": {"retry": {"max_attempts": 2}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "oracle", "kind": "oracle"},
            {"name": "closed_book", "kind": "closed_book"},
        ],
    }
    path = tmp_path / "e2e.yaml"
    path.write_text(yaml.safe_dump(config))
    # the Examiner pre-check (14 more judge calls on the CPU model) is left to tests/validity
    assert main(["tournament", str(path), "--no-examiner-check"]) == 0
    run = tmp_path / "e2e"
    header = json.loads((run / "run.json").read_text())
    from drarena.web.warc.snapshot import Snapshot

    assert header["model_calls"] > 0
    assert header["snapshot_fingerprint"] == Snapshot.open(snapshot).fingerprint
    assert set(header["prompt_hashes"]) == {"taskgen", "drarena"}  # default judge: drarena
    records = [
        MatchRecord.from_json(line) for line in (run / "matches.jsonl").read_text().splitlines()
    ]
    assert len(records) == 1
    match = records[0]
    assert {match.a, match.b} == {"oracle", "closed_book"} and len(match.rounds) == 1
    tree = json.loads((snapshot / "trees" / f"{match.tree}.json").read_text())
    tree_urls = {n["url"] for n in tree["nodes"]}
    for rnd in match.rounds:
        if rnd.void_reason:  # a void round says why and scores nothing
            assert match.score.rounds_void >= 1
            continue
        task = rnd.task.task
        assert task is not None and task.question
        assert all(
            i.source_url in tree_urls for i in (*task.checklist_depth, *task.checklist_width)
        )
        assert rnd.answer_a is not None and rnd.answer_b is not None
        assert rnd.judgment is not None
        assert [o.order for o in rnd.judgment.orders()] == ["AB", "BA"]
    report = (run / "report.html").read_text()
    assert "<script" not in report and "Leaderboard" in report
    capsys.readouterr()

    # replay: the model cache only, byte-identical results
    monkeypatch.delenv("DRARENA_MODEL_API_BASE")
    assert main(["replay", str(run)]) == 0
    out = capsys.readouterr().out
    assert "with 0 model calls" in out and "identical" in out
    replayed = json.loads((tmp_path / "e2e-replay" / "run.json").read_text())
    assert replayed["model_calls"] == 0

    # rank: the leaderboard again from matches.jsonl alone
    before = (run / "leaderboard.json").read_bytes()
    assert main(["rank", str(run)]) == 0
    assert (run / "leaderboard.json").read_bytes() == before
