"""Agreement and Cohen's kappa against hand-computed cases, and their edge cases."""

from __future__ import annotations

import pytest

from drarena.ledger.agreement import (
    Agreement,
    agreement,
    bootstrap,
    cohen_kappa,
    collapse,
    fmt,
    measure,
    percentile,
    to_markdown,
)


def test_kappa_of_the_textbook_two_by_two_table() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15. p_o = 35/50 = 0.7;
    # p_e = (25/50)(30/50) + (25/50)(20/50) = 0.3 + 0.2 = 0.5; kappa = 0.2 / 0.5 = 0.4
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert agreement(pairs) == pytest.approx(0.7)
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_of_a_small_three_label_case() -> None:
    # n = 4, agree 3; judge 1: A 3, B 1; judge 2: A 2, B 2; S = 3*2 + 1*2 = 8
    # kappa = (4*3 - 8) / (16 - 8) = 0.5
    pairs = [("A", "A"), ("A", "A"), ("A", "B"), ("B", "B")]
    assert cohen_kappa(pairs) == pytest.approx(0.5)
    # a label only one judge uses adds nothing to chance agreement: judge 1 A 2, B 1;
    # judge 2 A 1, TIE 1, B 1; S = 2*1 + 1*1 = 3; kappa = (3*2 - 3) / (9 - 3) = 0.5
    three = [("A", "A"), ("A", "TIE"), ("B", "B")]
    assert cohen_kappa(three) == pytest.approx(0.5)


def test_perfect_agreement_on_two_labels_is_one() -> None:
    pairs = [("A", "A"), ("B", "B"), ("TIE", "TIE"), ("A", "A")]
    assert cohen_kappa(pairs) == 1.0 and agreement(pairs) == 1.0


def test_complete_disagreement() -> None:
    assert cohen_kappa([("A", "B"), ("B", "A")]) == pytest.approx(-1.0)
    # each judge one label, never the same: no chance agreement, none observed: kappa 0
    assert cohen_kappa([("A", "B"), ("A", "B")]) == 0.0


def test_all_one_class_leaves_kappa_undefined_not_one() -> None:
    pairs = [("TIE", "TIE")] * 5
    assert agreement(pairs) == 1.0
    assert cohen_kappa(pairs) is None


def test_no_rounds() -> None:
    assert agreement([]) is None and cohen_kappa([]) is None
    m = measure("verdict", [], resamples=100, seed=0)
    assert (m.n, m.agreement, m.kappa, m.agreement_ci, m.kappa_ci, m.confusion) == (
        0,
        None,
        None,
        None,
        None,
        {},
    )
    assert "| verdict | 0 | n/a | n/a |" in to_markdown([m])


def test_collapse_keeps_the_direction_only() -> None:
    assert [collapse(v) for v in ("A_MUCH_BETTER", "A_BETTER", "TIE")] == ["A", "A", "TIE"]
    assert [collapse(v) for v in ("B_BETTER", "B_MUCH_BETTER")] == ["B", "B"]


def test_percentile_interpolates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert percentile([7.0], 0.3) == 7.0


def test_bootstrap_is_seeded_and_skips_undefined_resamples() -> None:
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    one = bootstrap(pairs, cohen_kappa, resamples=300, seed=4)
    assert one == bootstrap(pairs, cohen_kappa, resamples=300, seed=4)
    assert one is not None and -1.0 <= one[0] < 0.4 < one[1] <= 1.0
    # two rounds in perfect agreement: a resample of one label is undefined and left out,
    # every other resample has kappa 1
    assert bootstrap([("A", "A"), ("B", "B")], cohen_kappa, resamples=50, seed=0) == (1.0, 1.0)
    # one label only: no resample is defined, so there is no interval
    assert bootstrap([("T", "T")] * 3, cohen_kappa, resamples=50, seed=0) is None
    assert bootstrap(pairs, cohen_kappa, resamples=0, seed=0) is None


def test_measure_counts_the_confusion_and_round_trips() -> None:
    pairs = [("A", "A"), ("A", "B"), ("B", "B")]
    m = measure("collapsed", pairs, resamples=50, seed=1)
    assert m.confusion == {"A -> A": 1, "A -> B": 1, "B -> B": 1}
    assert m.n == 3 and m.agreement == pytest.approx(2 / 3)
    assert Agreement.from_json(m.to_json()) == m
    assert fmt(0.5, (0.25, 0.75)) == "0.50 [0.25, 0.75]" and fmt(None, None) == "n/a"
