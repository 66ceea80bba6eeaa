"""`protocol: paper` on trees imported with `drarena snapshot import-trees` (tree files in the
reference's format, written by hand: tests/reference_trees.py), end to end: the tournament
prepares the snapshot without replacing the imported trees, plays every tree with the
reference's judge prompt, records every resolved switch in run.json, and `run replay`
reproduces it byte for byte with zero model calls. Scripted backend: control flow only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from arena_live_site import scripted_models
from reference_trees import write_reference_trees

from drarena.cli import main
from drarena.config.tournament import PAPER_MATCH, PAPER_TREES, parse_config
from drarena.corpus.papertrees import import_trees
from drarena.examiner import templates
from drarena.ledger.folder import RunDir
from drarena.models.config import CacheMode
from drarena.report.run import write_report
from drarena.runs.ablate import cut_log
from drarena.runs.execute import RunOptions, execute


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("papertrees")
    repo = write_reference_trees(tmp / "DR-Arena")
    return import_trees(repo, "paper", tmp / "paper").out


def test_a_paper_run_on_imported_trees_replays_identically(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    role = {"model": "openai/scripted-for-tests"}
    data: dict[str, Any] = {
        "name": "paper-trees",
        "protocol": "paper",
        "snapshot": str(snapshot),
        "runs_root": str(tmp_path / "runs"),
        "index_root": str(tmp_path / "index"),
        "seed": 1,
        "swiss_rounds": 1,
        "match": {"max_rounds": 3},  # an ablation on top of the preset: CPU seconds
        "rating": {"resamples": 50},
        "models": {"retry": {"max_attempts": 1}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "oracle", "kind": "oracle"},
            {"name": "closed_book", "kind": "closed_book"},
        ],
    }
    config = parse_config(data, "test")
    tree_bytes = {p.name: p.read_bytes() for p in (snapshot / "trees").iterdir()}
    run = RunDir(tmp_path / "runs" / "paper-trees")
    backend = scripted_models({"Page rivers": 3, "Page bridges": 1})
    result = execute(
        config,
        run,
        RunOptions(
            serve=False,
            cache_mode=CacheMode.READ_WRITE,
            prepare=True,  # extract, trees, indexes as `drarena tournament` does
            backend=backend,
        ),
    )
    write_report(run, config, result.log)
    # the tournament's preparation left the imported trees as they were
    assert {p.name: p.read_bytes() for p in (snapshot / "trees").iterdir()} == tree_bytes
    header = run.header()
    assert header is not None
    stored: dict[str, Any] = header.config
    assert stored["protocol"] == "paper"
    for key, value in PAPER_TREES.items():
        assert stored["trees"][key] == value, key
    for key, value in PAPER_MATCH.items():  # every resolved switch
        if key != "max_rounds":
            assert stored["match"][key] == value, key
    assert stored["match"]["max_rounds"] == 3
    # judged with the reference's prompt: its hash recorded, its system prompt sent
    assert header.prompt_hashes["paper"] == templates.template_hash("paper")
    judge_calls = [
        r
        for r in backend.requests
        if r.get("response_format") and r["response_format"]["json_schema"]["name"] != "task"
    ]
    assert judge_calls and all(
        r["messages"][0]["content"] == templates.REFERENCE_SYSTEM_PROMPT for r in judge_calls
    )
    assert all("(Citation Count: " in r["messages"][1]["content"] for r in judge_calls)
    # every imported tree played, each a real match with scored rounds
    assert sorted(m.tree for m in result.log) == ["tree_0001", "tree_0002", "tree_0003"]
    assert all(any(r.judgment is not None for r in m.rounds) for m in result.log)

    # the paper's round ablation from the same log: cutting at the longest match changes
    # nothing (the re-scoring is the match loop's), cutting at 1 keeps each first round
    longest = max(len(m.rounds) for m in result.log)
    assert cut_log(result.log, longest, None) == result.log
    first = cut_log(result.log, 1, None)
    for cut, full in zip(first, result.log, strict=True):
        assert (
            cut.rounds == full.rounds[:1] and cut.score.rounds_scored + cut.score.rounds_void == 1
        )
        assert (cut.match_id, cut.a, cut.b, cut.tree) == (full.match_id, full.a, full.b, full.tree)
    logged = (run.path / "matches.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["run", "ablate", str(run.path), "--first-rounds", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["first_rounds"] == 1 and {r["agent"] for r in shown["rows"]} == {
        "oracle",
        "closed_book",
    }
    assert (run.path / "matches.jsonl").read_bytes() == logged  # nothing written

    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run.path), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "with 0 model calls" in said and "identical" in said
    assert (out / "matches.jsonl").read_bytes() == (run.path / "matches.jsonl").read_bytes()
