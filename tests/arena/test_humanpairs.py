"""Labelled rounds as known-answer pairs (drarena.runs.humanpairs): only rounds whose people
agree on the direction, the preferred answer as the reference."""

from __future__ import annotations

from pathlib import Path

import pytest
from auditkit import audit_log, label

from drarena.errors import DrarenaError
from drarena.examiner.verdicts import Verdict
from drarena.runs.humanpairs import human_pairs, pairs_from_labels

V = Verdict
LOG = audit_log([[V.A_BETTER, V.A_BETTER, V.TIE, V.B_BETTER]], [("x", "y")])
MID = LOG[0].match_id


def test_pairs_where_people_agree() -> None:
    labels = [
        label("ann", MID, 0, V.B_MUCH_BETTER),  # B preferred by both
        label("bob", MID, 0, V.B_BETTER),
        label("ann", MID, 1, V.A_BETTER),  # people disagree: no pair
        label("bob", MID, 1, V.B_BETTER),
        label("ann", MID, 2, V.TIE),  # a tie
        label("ann", MID, 3, V.TIE, time="2025-01-01T00:00:00+00:00"),
        label("ann", MID, 3, V.A_BETTER, time="2025-01-02T00:00:00+00:00"),  # corrected
    ]
    pairs = pairs_from_labels(LOG, labels)
    assert [(p.round, p.tie, p.labels) for p in pairs] == [
        (0, False, 2),
        (2, True, 1),
        (3, False, 1),
    ]
    first, tie, last = pairs
    assert first.reference.report == "answer B" and first.other.report == "answer A"
    assert tie.reference.report == "answer A"
    assert last.reference.report == "answer A"
    assert first.reference.cited == 1 and first.task.question.startswith("Which module")


def test_a_run_without_labels_says_so(tmp_path: Path) -> None:
    from drarena.ledger.folder import RunDir

    run = RunDir(tmp_path / "run")
    run.create()
    run.write_log(LOG)
    with pytest.raises(DrarenaError, match="no labels"):
        human_pairs(run.path)
