"""examiner-check control flow with the scripted backend (control flow only: the verdicts
come from a scripted length-loving judge, not a model): structure, then a replay from the
cache with zero model calls and identical JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from validity_helpers import make_tree, scripted_examiner

from drarena.arena.execute import NoModelBackend
from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests
from drarena.validity.check import CheckSettings, examiner_check, table
from drarena.validity.pairs import Kind

SETTINGS = CheckSettings(pairs=2, seed=5, modes=("pairwise", "pointwise"), resamples=200)


def client(cache: Path, mode: str, backend: Any) -> ModelClient:
    config = ModelsConfig(
        roles={"examiner": {"model": "openai/scripted"}},
        cache={"path": cache, "mode": mode},
    )
    return ModelClient(config, backend=backend)


def run(c: ModelClient, settings: CheckSettings = SETTINGS) -> dict[str, Any]:
    tree, docs = make_tree()
    return asyncio.run(examiner_check(c, "examiner", {tree.id: tree}, docs, settings))


def test_check_structure_then_replay_with_zero_calls(tmp_path: Path) -> None:
    cache = tmp_path / "llm-cache.sqlite"
    live = client(cache, "read-write", ScriptedBackendForTests([scripted_examiner] * 500))
    report = run(live)
    assert live.model_calls > 0
    assert report["schema_version"] == 1
    assert len(report["tasks"]) == 2
    assert {t["node"] for t in report["tasks"]} <= {"c1", "c2", "c3", "c4"}
    assert len(report["outcomes"]) == 2 * len(Kind) * 2  # tasks x kinds x modes
    assert set(report["results"]) == {"pairwise", "pointwise"}
    pairwise = report["results"]["pairwise"]
    assert pairwise["judged"] == 2 * len(Kind) and pairwise["failed"] == 0
    # the scripted judge prefers the longer answer in either order: padded copies win
    assert pairwise["figures"]["length_bias"]["value"] == 1.0
    assert pairwise["figures"]["tie_rate_equal"]["value"] == 1.0
    assert report["verdict"] == pairwise["verdict"]
    assert "decisive accuracy" in table(report)

    replay = client(cache, "replay", NoModelBackend())
    again = run(replay)
    assert replay.model_calls == 0
    assert json.dumps(again, sort_keys=True) == json.dumps(report, sort_keys=True)


def test_unknown_mode_is_one_clear_error(tmp_path: Path) -> None:
    c = client(tmp_path / "c.sqlite", "read-write", ScriptedBackendForTests([]))
    with pytest.raises(DrarenaError, match="unknown judge mode 'majority'"):
        run(c, CheckSettings(pairs=1, modes=("majority",)))
