"""Style-controlled Bradley-Terry: features by hand, the raw fit when style does not vary, and
a tournament where answer length explains the wins."""

from __future__ import annotations

from matchkit import answer, simple

from drarena.examiner.evolve import Outcome
from drarena.ledger.leaderboard import games_of
from drarena.ledger.rating import rate
from drarena.ledger.style import FEATURES, answer_features, covariates, style_ratings

REPORT = """## Findings
**Bottom line**
The answer is 42 [1].

- first point
* second point
1. third point
2) fourth point

| a | b |
|---|:-:|
| 1 | 2 |

Plain closing line with - a dash inside.
"""


def test_answer_features_by_hand() -> None:
    f = answer_features(answer("x", REPORT, citations=3))
    assert f.words == len(REPORT.split())
    assert (f.citations, f.headers, f.list_items, f.tables) == (3, 2, 4, 1)


def test_covariates_are_normalised_differences() -> None:
    m = simple("m", "x", "y", Outcome.A_WINS, "one two three", "one", citations_a=1)
    x, missing = covariates([m])
    assert missing == 0
    # words (3 - 1) / (3 + 1); citations (1 - 0) / 1; no headers, lists or tables: 0
    assert x.tolist() == [[0.5, 1.0, 0.0, 0.0, 0.0]]


def test_no_style_variation_gives_exactly_the_raw_ratings() -> None:
    matches = [
        simple("1", "p", "q", Outcome.A_WINS),
        simple("2", "q", "r", Outcome.A_WINS),
        simple("3", "p", "r", Outcome.TIE),
        simple("4", "r", "p", Outcome.B_WINS),
    ]
    agents = ["p", "q", "r"]
    style = style_ratings(agents, matches, resamples=30, seed=3)
    raw = rate(agents, games_of(matches), resamples=30, seed=3)
    assert list(style.ratings) == raw
    assert all(c.beta is None for c in style.coefficients)
    assert [c.feature for c in style.coefficients] == list(FEATURES)


def test_length_explains_the_wins() -> None:
    long, short = "word " * 60, "word " * 10
    matches = []
    # p against q: whoever writes longer wins, three times each way
    for i in range(3):
        matches.append(simple(f"pq{i}", "p", "q", Outcome.A_WINS, long, short))
        matches.append(simple(f"qp{i}", "p", "q", Outcome.B_WINS, short, long))
    # r always writes short and loses to both
    for i in range(4):
        matches.append(simple(f"pr{i}", "p", "r", Outcome.A_WINS, long, short))
        matches.append(simple(f"qr{i}", "q", "r", Outcome.A_WINS, long, short))
    agents = ["p", "q", "r"]
    raw = {r.agent: r.rating for r in rate(agents, games_of(matches), resamples=0)}
    style = style_ratings(agents, matches, resamples=100, seed=0)
    controlled = {r.agent: r.rating for r in style.ratings}
    words = style.coefficients[FEATURES.index("words")]
    assert words.beta is not None and words.lower is not None and words.beta > 0.5
    assert words.lower > 0  # every resample keeps length as a reason to win
    assert all(c.beta is None for c in style.coefficients if c.feature != "words")
    # r's deficit shrinks once length is accounted for
    assert raw["p"] - raw["r"] > 150
    assert controlled["p"] - controlled["r"] < (raw["p"] - raw["r"]) / 2
    assert style.agent_features["p"]["words"] > style.agent_features["r"]["words"]


def test_a_match_with_no_round_both_answered_is_counted() -> None:
    m = simple("m", "x", "y", Outcome.A_WINS)
    bare = m.__class__(**{**{f: getattr(m, f) for f in m.__slots__}, "rounds": ()})
    style = style_ratings(["x", "y"], [bare, simple("n", "x", "y", Outcome.B_WINS)], resamples=0)
    assert (style.matches, style.matches_without_style) == (2, 1)
