"""The human audit's figures (drarena.ledger.humanaudit, report/sections/humanaudit), worked out by
hand on built rounds; kappa against scikit-learn, Krippendorff's alpha against the worked
example of Krippendorff (2011, "Computing Krippendorff's alpha-reliability"), the only
reference the lock holds for it (neither `krippendorff` nor statsmodels is locked)."""

from __future__ import annotations

import dataclasses

import pytest
from auditkit import ITEMS, audit_log, label
from sklearn.metrics import cohen_kappa_score

from drarena.examiner.evidence import AnswerEvidence, EvidenceItem, EvidenceJudgment
from drarena.examiner.verdicts import FailureType, Judgment, Verdict
from drarena.ledger.agreement import cohen_kappa, krippendorff_alpha
from drarena.ledger.humanaudit import human_audit
from drarena.report.sections.humanaudit import human_audit_section

V = Verdict
LOG = audit_log([[V.A_MUCH_BETTER, V.A_BETTER, V.TIE], [V.B_BETTER]], [("x", "y"), ("y", "z")])
M0, M1 = LOG[0].match_id, LOG[1].match_id


def test_kappa_matches_scikit_learn_on_fixed_label_sets() -> None:
    sets = [
        (["A", "A", "B", "TIE", "B", "A", "TIE", "A"], ["A", "B", "B", "TIE", "A", "A", "A", "A"]),
        (list("AABBBCCCAB"), list("ABBBCCCAAB")),
        (["x"] * 5 + ["y"] * 5, ["x"] * 4 + ["y"] * 6),
    ]
    for first, second in sets:
        ours = cohen_kappa(list(zip(first, second, strict=True)))
        assert ours == pytest.approx(cohen_kappa_score(first, second))


def test_alpha_matches_krippendorffs_worked_example() -> None:
    """4 observers, 12 units, nominal data, missing values '.': alpha 0.743 (to 3 places)."""
    rows = [
        "1 2 3 3 2 1 4 1 2 . . .",
        "1 2 3 3 2 2 4 1 2 5 . 3",
        ". 3 3 3 2 3 4 2 2 5 1 .",
        "1 2 3 3 2 4 4 1 2 5 1 .",
    ]
    cells = [r.split() for r in rows]
    units = [[c[i] for c in cells if c[i] != "."] for i in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    # two coders, no missing values: alpha = 1 - (n-1) * D_o / D_e worked out by hand:
    # units (a,a) (a,b) (b,b) (b,b): n=8, n_a=3, n_b=5, o_ab=o_ba=1 -> 1 - 7*2/30
    assert krippendorff_alpha([["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]) == pytest.approx(
        1 - 7 * 2 / 30
    )
    assert krippendorff_alpha([["a", "a"], ["a"]]) is None  # one label only: undefined
    assert krippendorff_alpha([]) is None


def test_figures_by_hand() -> None:
    """ann labels all four rounds, bob two of them (and corrects one); the Examiner said
    A_MUCH_BETTER, A_BETTER, TIE (m0) and B_BETTER (m1)."""
    labels = [
        label("ann", M0, 0, V.A_MUCH_BETTER, items_a=(True, True, False), items_b=(False,) * 3),
        label("ann", M0, 1, V.A_MUCH_BETTER, valid=False),
        label("ann", M0, 2, V.B_MUCH_BETTER),
        label("ann", M1, 0, V.B_BETTER, valid=None),
        label("bob", M0, 0, V.TIE, time="2025-01-01T00:00:00+00:00"),
        label("bob", M0, 0, V.A_BETTER, time="2025-01-03T00:00:00+00:00"),  # corrects it
        label("bob", M0, 2, V.B_MUCH_BETTER),
    ]
    h = human_audit(LOG, labels, resamples=200, seed=0)
    assert h is not None
    assert (h.labels, h.rounds, h.annotators) == (6, 4, ("ann", "bob"))
    (ex,) = h.judges
    assert ex.judge == "examiner" and ex.verdict.n == 6
    # people / examiner: (AMB,AMB) (AB,AMB) (AMB,AB) (BMB,TIE) (BMB,TIE) (BB,BB): 2 of 6
    assert ex.verdict.agreement == pytest.approx(2 / 6)
    people = ["A_MUCH_BETTER", "A_BETTER", "A_MUCH_BETTER", "B_MUCH_BETTER", "B_MUCH_BETTER"]
    people.append("B_BETTER")
    examiner = ["A_MUCH_BETTER", "A_MUCH_BETTER", "A_BETTER", "TIE", "TIE", "B_BETTER"]
    assert ex.verdict.kappa == pytest.approx(cohen_kappa_score(people, examiner))
    # directions: A A A B B B against A A A TIE TIE B: 4 of 6
    assert ex.direction.agreement == pytest.approx(4 / 6)
    assert ex.verdict.agreement_ci is not None and ex.verdict.kappa_ci is not None
    # between people: m0 r0 (AMB, AB) and m0 r2 (BMB, BMB)
    verdict_alpha, direction_alpha = h.between_people
    assert verdict_alpha.rounds == 2
    assert verdict_alpha.alpha == pytest.approx(
        krippendorff_alpha([["A_MUCH_BETTER", "A_BETTER"], ["B_MUCH_BETTER"] * 2])
    )
    assert direction_alpha.alpha == 1.0
    # items: ann marked m0 r0 (y y n / n n n); the LLM marked (y y n / n y y): 4 of 6 alike
    (items,) = h.items
    assert items.what == "checklist items (llm)" and items.n == 2 * ITEMS
    assert items.agreement == pytest.approx(4 / 6)
    # questions: ann's m1 label said nothing; of the other five, one said invalid
    assert (h.questions_rated, h.questions_invalid) == (5, 1)
    assert h.invalid_share == pytest.approx(0.2)
    # strongest: m0 r2 (TIE against BMB twice: distance 2), then m0 r0 and r1 (distance 1)
    first = h.disagreements[0]
    assert (first.match_id, first.round, first.distance) == (M0, 2, 2.0)
    assert first.match_index == 0 and first.people == ("B_MUCH_BETTER", "B_MUCH_BETTER")
    assert {(d.round, d.distance) for d in h.disagreements[1:]} == {(0, 0.5), (1, 1.0)}
    assert all(d.match_id != M1 for d in h.disagreements)  # they agreed there


def test_no_labels_of_the_run_no_figures() -> None:
    assert human_audit(LOG, [], resamples=10, seed=0) is None
    assert human_audit(LOG, [label("ann", "other", 0, V.TIE)], resamples=10, seed=0) is None


def test_per_judge_when_the_evidence_judge_graded_beside_the_llm() -> None:
    """A hybrid round: the LLM said A_MUCH_BETTER, the evidence judge TIE."""
    r = LOG[0].rounds[0]
    assert r.judgment is not None
    item = EvidenceItem("i", "depth", 1.0, 1, 1, "s", True)
    side = AnswerEvidence((item,) * ITEMS, 50, 0.3, 0.0, 0, "")
    graded = EvidenceJudgment(side, side, Judgment(V.TIE, None, FailureType.NONE))
    hybrid = dataclasses.replace(r, judgment=dataclasses.replace(r.judgment, evidence=graded))
    log = [dataclasses.replace(LOG[0], rounds=(hybrid,))]
    h = human_audit(log, [label("ann", M0, 0, V.TIE)], resamples=10, seed=0)
    assert h is not None
    assert [j.judge for j in h.judges] == ["examiner", "evidence"]
    assert h.judges[0].verdict.agreement == 0.0 and h.judges[1].verdict.agreement == 1.0


HOSTILE = '<script>alert(1)</script>\u202eevil\x1b[31m" onclick="x'


def test_the_section_links_to_the_viewer_and_keeps_names_inert() -> None:
    log = [dataclasses.replace(m, a=HOSTILE) for m in LOG]
    labels = [label("ann", M0, 2, V.B_MUCH_BETTER), label("ann", M1, 0, V.B_BETTER)]
    h = human_audit(log, labels, resamples=10, seed=0)
    assert h is not None
    html = human_audit_section(h)
    assert 'href="#m0r2"' in html and "Human audit (2 labels of 2 rounds by 1 person)" in html
    assert "<script>" not in html and "\u202e" not in html and "\x1b" not in html
    assert "&lt;script&gt;" in html
