"""The examiner-check on pairs people labelled (drarena.validity.check with `human`): the
length-loving scripted judge gives people's choice the win when it is the longer answer,
not when it is the shorter, and ties answers of equal length."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from auditkit import audit_log, label
from validity_helpers import make_tree, scripted_examiner

from drarena.examiner.verdicts import Verdict
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests
from drarena.runs.humanpairs import pairs_from_labels
from drarena.validity.check import CheckRun, CheckSettings, examiner_check, summary, table

V = Verdict


def test_labelled_rounds_are_judged_as_known_pairs(tmp_path: Path) -> None:
    log = audit_log([[V.A_BETTER, V.A_BETTER, V.TIE]], [("x", "y")])
    rounds = list(log[0].rounds)
    long_a = "a long and careful answer " * 8
    for i, (ra, rb) in enumerate([(long_a, "short"), (long_a, "short"), ("same", "same")]):
        r = rounds[i]
        assert r.answer_a is not None and r.answer_b is not None
        rounds[i] = dataclasses.replace(
            r,
            answer_a=dataclasses.replace(r.answer_a, report=ra),
            answer_b=dataclasses.replace(r.answer_b, report=rb),
        )
    log = [dataclasses.replace(log[0], rounds=tuple(rounds))]
    mid = log[0].match_id
    labels = [
        label("ann", mid, 0, V.A_BETTER),  # the longer: the judge agrees
        label("ann", mid, 1, V.B_BETTER),  # the shorter: it does not
        label("ann", mid, 2, V.TIE),  # equal: a tie
    ]
    human = pairs_from_labels(log, labels)
    config = ModelsConfig(
        roles={"examiner": {"model": "openai/scripted"}},
        cache={"path": tmp_path / "c.sqlite", "mode": "read-write"},
    )
    client = ModelClient(config, backend=ScriptedBackendForTests([scripted_examiner] * 500))
    tree, docs = make_tree()
    run = CheckRun(client, "examiner", "examiner", {tree.id: tree}, docs)
    settings = CheckSettings(pairs=1, seed=5, judges=("pairwise",), resamples=100)
    report = asyncio.run(examiner_check(run, settings, None, human))
    figures = report["results"]["pairwise"]["figures"]
    assert figures["human_agreement"]["value"] == 0.5 and figures["human_agreement"]["n"] == 2
    assert figures["human_tie_rate"]["value"] == 1.0 and figures["human_tie_rate"]["n"] == 1
    assert [p["round"] for p in report["human_pairs"]] == [0, 1, 2]
    assert len(report["human_outcomes"]) == 3
    assert "people's choice wins" in table(report)
    assert "human_outcomes" not in summary(report)  # run.json keeps the figures only
    plain = asyncio.run(examiner_check(run, settings))  # no labels: the report as before
    assert "human_pairs" not in plain
    assert "people's choice wins" not in table(plain)
