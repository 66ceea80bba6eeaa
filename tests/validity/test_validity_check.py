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

from drarena.errors import DrarenaError
from drarena.ledger.header import RunHeader
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests
from drarena.registry import ComponentSpec
from drarena.runs.execute import NoModelBackend
from drarena.validity.check import CheckRun, CheckSettings, examiner_check, table
from drarena.validity.pairs import Kind

SETTINGS = CheckSettings(pairs=2, seed=5, judges=("pairwise", "pointwise"), resamples=200)


def client(cache: Path, mode: str, backend: Any) -> ModelClient:
    config = ModelsConfig(
        roles={"examiner": {"model": "openai/scripted"}},
        cache={"path": cache, "mode": mode},
    )
    return ModelClient(config, backend=backend)


def check_run(c: ModelClient, **kw: Any) -> CheckRun:
    tree, docs = make_tree()
    return CheckRun(c, "examiner", "examiner", {tree.id: tree}, docs, **kw)


def run(c: ModelClient, settings: CheckSettings = SETTINGS, **kw: Any) -> dict[str, Any]:
    return asyncio.run(examiner_check(check_run(c, **kw), settings))


def test_check_structure_then_replay_with_zero_calls(tmp_path: Path) -> None:
    cache = tmp_path / "llm-cache.sqlite"
    live = client(cache, "read-write", ScriptedBackendForTests([scripted_examiner] * 500))
    lines: list[str] = []
    report = asyncio.run(examiner_check(check_run(live), SETTINGS, lines.append))
    assert live.model_calls > 0
    assert report["schema_version"] == 2
    assert len(report["tasks"]) == 2
    assert {t["node"] for t in report["tasks"]} <= {"c1", "c2", "c3", "c4"}
    assert len(report["outcomes"]) == 2 * len(Kind) * 2  # tasks x kinds x judges
    assert set(report["results"]) == {"pairwise", "pointwise"}
    pairwise = report["results"]["pairwise"]
    assert pairwise["judged"] == 2 * len(Kind) and pairwise["failed"] == 0
    assert pairwise["judge"]["args"]["orders"] == 2  # both orders, whatever the run's
    # the scripted judge prefers the longer answer in either order: padded copies win
    assert pairwise["figures"]["length_bias"]["value"] == 1.0
    assert pairwise["figures"]["tie_rate_equal"]["value"] == 1.0
    # the paraphrase (sentences reordered by the scripted model) has the same length: a tie
    assert pairwise["figures"]["paraphrase_tie_rate"]["value"] == 1.0
    assert report["verdict"] == pairwise["verdict"]
    assert "decisive accuracy" in table(report) and "keyword stuffing wins" in table(report)
    assert "examiner-check: 2 of 2 task(s)" in lines and len(lines) >= 4  # progress

    replay = client(cache, "replay", NoModelBackend())
    again = run(replay)
    assert replay.model_calls == 0
    assert json.dumps(again, sort_keys=True) == json.dumps(report, sort_keys=True)


def test_unknown_judge_is_one_clear_error(tmp_path: Path) -> None:
    c = client(tmp_path / "c.sqlite", "read-write", ScriptedBackendForTests([]))
    with pytest.raises(DrarenaError, match="unknown judge kind 'majority'"):
        run(c, CheckSettings(pairs=1, judges=("majority",)))


def test_the_evidence_judge_is_measured_without_judge_calls(tmp_path: Path) -> None:
    """The evidence judge grades the pairs by code: the only model calls are the task and
    the paraphrase; it keeps its run args; a stuffed list and pasted pages do not win
    (control flow on a toy corpus: the figures on real pages are in docs/validity.md)."""
    live = client(
        tmp_path / "c.sqlite", "read-write", ScriptedBackendForTests([scripted_examiner] * 50)
    )
    judge = ComponentSpec(kind="evidence", args={"recall_min": 0.3})
    settings = CheckSettings(pairs=1, seed=5, judges=("evidence",), resamples=100)
    report = run(live, settings, judge=judge)
    assert live.model_calls == 2  # one task, one paraphrase
    result = report["results"]["evidence"]
    assert result["judge"]["args"]["recall_min"] == 0.3
    assert result["failed"] == 0 and result["judged"] == len(Kind)
    figures = result["figures"]
    assert figures["stuffed_wins"]["value"] == 0.0
    assert figures["copied_wins"]["value"] == 0.0
    assert figures["tie_rate_equal"]["value"] == 1.0


def test_report_html_shows_the_check_above_the_leaderboard(tmp_path: Path) -> None:
    """The run header's block (what a tournament records) renders as a table with one
    column per mode, every figure row and the verdict line; an injected verdict in a reason
    stays text; a run without a check says so."""
    from drarena.report.html import render_report
    from drarena.report.sections.examinercheck import examiner_check_section
    from drarena.validity.check import FIGURE_ROWS
    from drarena.validity.reuse import header_block

    live = client(
        tmp_path / "c.sqlite", "read-write", ScriptedBackendForTests([scripted_examiner] * 500)
    )
    block = header_block(run(live), "ab" * 32, reused=True)
    block["verdict"] = block["verdict"] + " <script>x</script>"
    html = examiner_check_section(block)
    assert "<th>pairwise</th><th>pointwise</th>" in html
    for _key, label in FIGURE_ROWS:
        assert f"<td>{label.strip()}</td>" in html
    assert "length bias (padded wins)</td><td class=num>1.00 [1.00, 1.00]" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert ("WARNING: the Examiner cannot rank" in html) != bool(block["can_rank"])
    assert "2 task(s)" in html and "reused" in html and "key abababababababab" in html
    page = render_report(
        "t", RunHeader.model_validate({"config": {}, "examiner_check": block}), [], []
    )
    assert page.index("Examiner check") < page.index("<h2>Leaderboard")
    assert "not run for this tournament" in render_report("t", None, [], [])


def test_a_figure_no_float_holds_is_no_figure() -> None:
    """A stored figure edited to an integer past float's range (10**400 written out) is
    shown as n/a, as any figure of another shape, rather than stopping with OverflowError."""
    from drarena.validity.check import figure_parts

    assert figure_parts({"value": 10**400, "low": 0, "high": 1, "n": 3}) is None
    assert figure_parts({"value": 0.5, "low": 0, "high": 1, "n": 3}) == (0.5, 0.0, 1.0, 3)
    huge = {"figures": {"accuracy": {"value": 10**400, "low": 0, "high": 1, "n": 3}}}
    report = {"results": {"pairwise": {**huge, "verdict": "x"}}, "leak_rate": None}
    assert "n/a" in table({**report, "tasks": [], "task_failures": []}).splitlines()[1]
