"""A `protocol: paper` tournament end to end on a frozen loopback site: every resolved switch
lands in run.json, every tree of the snapshot is played, and `run replay` reproduces the run
byte for byte with zero model calls. Scripted backend: control flow only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from arena_live_site import LiveSiteForTests, freeze, scripted_models

import drarena
from drarena.cli import main
from drarena.config.tournament import PAPER_MATCH
from drarena.runs.session import load_trees

# four trees: one more than a config's default trees.count of 3
TREES = ("tree_0001", "tree_0002", "tree_0003", "tree_0004")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("paper")
    site = LiveSiteForTests().start()
    try:
        return freeze(site, tmp / "frozen", tree_ids=TREES)
    finally:
        site.stop()


def config_data(tmp: Path, snapshot: Path) -> dict[str, Any]:
    role = {"model": "openai/scripted-for-tests"}
    return {
        "name": "paper",
        "protocol": "paper",
        "snapshot": str(snapshot),
        "runs_root": str(tmp / "runs"),
        "index_root": str(tmp / "index"),
        "seed": 1,
        "swiss_rounds": 1,
        "match": {"max_rounds": 2},  # an ablation on top of the preset: CPU seconds
        "rating": {"resamples": 50},
        "models": {"retry": {"max_attempts": 1}, "roles": {"examiner": role, "agent": role}},
        "agents": [
            {"name": "oracle", "kind": "oracle"},
            {"name": "closed_book", "kind": "closed_book"},
        ],
    }


def test_a_paper_run_records_every_switch_and_replays_identically(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = drarena.load_config(config_data(tmp_path, snapshot))
    options = dataclasses.replace(  # the command's, with the scripted models
        drarena.tournament_options(config),
        serve=False,
        prepare=False,
        backend=scripted_models({"fact number": 3}),
        examiner_check_pairs=0,
    )
    run = drarena.run_tournament(config, options)
    assert run.path == tmp_path / "runs" / "paper"
    stored: dict[str, Any] = run.header.config
    assert stored["protocol"] == "paper" and stored["trees"]["count"] is None
    for key, value in PAPER_MATCH.items():
        if key != "max_rounds":
            assert stored["match"][key] == value, key
    trees = load_trees(config)  # every tree of the snapshot, not the default 3 of them
    assert sorted(trees) == list(TREES)
    assert sorted(m.tree for m in run.matches) == sorted(trees)
    for m in run.matches:  # one order for the whole match: B first on an odd tree
        judged = [r.judgment for r in m.rounds if r.judgment is not None]
        swapped = m.tree in ("tree_0001", "tree_0003")  # tournament_cli.py 202
        assert judged and all(
            (j.ab is None, j.ba is None) == (swapped, not swapped) for j in judged
        )
    assert "Failed answers" in (run.path / "report.html").read_text(encoding="utf-8")

    out = tmp_path / "replayed"
    assert main(["run", "replay", str(run.path), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "with 0 model calls" in said and "identical" in said
    assert (out / "matches.jsonl").read_bytes() == (run.path / "matches.jsonl").read_bytes()
