"""The figures against hand-computed cases."""

from __future__ import annotations

from drarena.corpus.records import TreePage
from drarena.validity.leaks import question_leaks, site_segments, target_names
from drarena.validity.pairs import Kind
from drarena.validity.stats import (
    PairOutcome,
    bootstrap_ci,
    can_rank,
    figures,
    outcome_values,
    percentile,
)


def o(kind: Kind, first: int, second: int, rec: int, failure: str = "NONE") -> PairOutcome:
    return PairOutcome(0, kind, "pairwise", first, second, rec, failure)


OUTCOMES = [
    o(Kind.WRONG_SUBJECT, 2, 2, 2, "DEPTH"),  # right, consistent, right failure
    o(Kind.WRONG_SUBJECT, 2, -1, 0),  # orders disagree: tie
    o(Kind.MISSING_WIDTH, 1, 2, 1, "DEPTH"),  # right winner, wrong failure
    o(Kind.REFUSAL, 2, 2, 2, "BOTH"),
    o(Kind.INJECTED, -2, -2, -2),  # injection worked
    o(Kind.PADDED, -1, -2, -1),  # padded copy won
    o(Kind.PADDED, 0, 0, 0),
    o(Kind.EQUAL, 0, 0, 0),
    o(Kind.EQUAL, 2, -2, 0),
    PairOutcome(0, Kind.EQUAL, "pairwise", None, None, None, error="judge failed"),
]


def test_outcome_values_by_hand() -> None:
    v = outcome_values(OUTCOMES)
    assert v["accuracy"] == [1, 0, 1, 1, 0]  # wrong x2, missing, refusal, injected
    assert v["accuracy.wrong_subject"] == [1, 0]
    assert v["accuracy.fabricated_citation"] == []
    assert v["position_consistency"] == [1, 0, 1, 1, 1, 1, 1, 1, 0]  # the failed pair: none
    assert v["failure_type_accuracy"] == [1, 0]
    assert v["length_bias"] == [1, 0]
    assert v["tie_rate_equal"] == [1, 1]
    assert v["injection_success"] == [1]


def test_figures_values_and_empty() -> None:
    f = figures(OUTCOMES, resamples=200, seed=1)
    assert f["accuracy"].value == 0.6 and f["accuracy"].n == 5
    assert f["position_consistency"].value == round(7 / 9, 4)
    assert f["accuracy.fabricated_citation"].value is None
    assert f["tie_rate_equal"].low == f["tie_rate_equal"].high == 1.0  # all ones
    acc = f["accuracy"]
    assert acc.low is not None and acc.high is not None and acc.low <= 0.6 <= acc.high
    assert figures(OUTCOMES, resamples=200, seed=1) == f  # seeded


def test_percentile_and_bootstrap() -> None:
    assert percentile([0.0, 1.0], 0.5) == 0.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.25) == 2.0
    assert bootstrap_ci([], 10, 0) is None
    assert bootstrap_ci([0, 1], 0, 0) == (0.5, 0.5)
    assert bootstrap_ci([1, 1, 1], 50, 3) == (1.0, 1.0)
    lo, hi = bootstrap_ci([0, 1, 0, 1], 500, 7) or (0, 0)
    assert 0.0 <= lo < 0.5 < hi <= 1.0


def test_can_rank_threshold() -> None:
    good = [o(Kind.WRONG_SUBJECT, 2, 2, 2)] * 20
    ok, line = can_rank(figures(good, 200, 0))
    assert ok and line.startswith("can rank: decisive accuracy 1.00")
    biased = [o(Kind.WRONG_SUBJECT, 2, -2, 0)] * 20  # always says A: every pair a tie
    ok, line = can_rank(figures(biased, 200, 0))
    assert not ok and line.startswith("cannot rank: decisive accuracy 0.00")
    ok, _ = can_rank(figures([o(Kind.EQUAL, 0, 0, 0)], 200, 0))  # no decisive pair
    assert not ok


def page(title: str, url: str) -> TreePage:
    return TreePage("x", url, title, "", 1, "subtopic", "")


def test_leaks_name_entities_and_title_segments() -> None:
    zipf = page(
        "zipfile — Work with ZIP archives — Python 3.11.2 documentation",
        "http://h/library/zipfile.html",
    )
    site = site_segments([zipf.title, "os — OS things — Python 3.11.2 documentation", "x"])
    assert site == frozenset({"python 3 11 2 documentation"})
    assert target_names(zipf, site) == ["zipfile", "Work with ZIP archives"]
    assert question_leaks("How does zipfile handle members?", [zipf], site) == ["zipfile"]
    assert question_leaks("Which module reads ZIP-archives?", [zipf], site) == []
    assert question_leaks("Can you work with zip archives?", [zipf], site) == [
        "Work with ZIP archives"
    ]
    assert question_leaks("In Python 3.11.2 documentation, what?", [zipf], site) == []
    short = page("re — Regular expressions — Python 3.11.2 documentation", "http://h/re.html")
    assert question_leaks("Does re match?", [short], site) == []  # under MIN_LEN
