"""Rank agreement with an outside leaderboard: coefficients on known vectors, the bootstrap,
and the CSV reader's one-line errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from drarena.errors import DrarenaError
from drarena.ledger import compare as cmp
from drarena.ledger.compare import compare, kendall_tau, pearson_r, read_scores, spearman_rho

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "demo-expected-order.csv"
X = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def test_coefficients_on_known_vectors() -> None:
    y = np.array([2.0, 1.0, 4.0, 3.0, 5.0])
    # rank differences (-1, 1, -1, 1, 0): rho = 1 - 6 * 4 / (5 * 24) = 0.8
    assert spearman_rho(X, y) == pytest.approx(0.8)
    # 10 pairs, 2 discordant ((1,2) and (3,4)): tau = (8 - 2) / 10
    assert kendall_tau(X, y) == pytest.approx(0.6)
    assert pearson_r(X, y) == pytest.approx(0.8)  # the values are their own ranks
    squares = X**2  # monotone, not linear
    assert spearman_rho(X, squares) == pytest.approx(1.0)
    assert kendall_tau(X, squares) == pytest.approx(1.0)
    # Pearson by hand: deviations (-2..2) and (-10, -7, -2, 5, 14): 60 / sqrt(10 * 374)
    assert pearson_r(X, squares) == pytest.approx(60 / math.sqrt(3740))


def test_kendall_tau_b_with_a_tie() -> None:
    # pairs: 5 concordant, 1 tied in x only: tau-b = 5 / sqrt((5 + 1) * 5)
    value = kendall_tau(np.array([1.0, 2.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0]))
    assert value == pytest.approx(5 / math.sqrt(30))


def test_constant_side_is_undefined() -> None:
    flat = np.ones(5)
    assert pearson_r(X, flat) is None and spearman_rho(X, flat) is None
    assert kendall_tau(X, flat) is None


def test_compare_is_seeded_and_intervals_bracket() -> None:
    ours = {"a": 1200.0, "b": 1100.0, "c": 1000.0, "d": 950.0, "e": 900.0, "solo": 1.0}
    theirs = {"a": 30.0, "b": 31.0, "c": 20.0, "d": 12.0, "e": 10.0, "other": 5.0}
    one = compare(ours, theirs, against="t.csv", resamples=300, seed=7)
    assert one == compare(ours, theirs, against="t.csv", resamples=300, seed=7)
    assert one.agents == ("a", "b", "c", "d", "e")
    assert (one.only_in_run, one.only_in_file) == (("solo",), ("other",))
    rows = {r.method: r for r in one.correlations}
    assert rows["spearman"].value == pytest.approx(0.9)  # one adjacent swap of five
    assert rows["kendall"].value == pytest.approx(0.8)
    for r in one.correlations:
        assert r.lower is not None and r.upper is not None and r.value is not None
        assert -1.0 <= r.lower <= r.upper <= 1.0
        assert 0 < r.resamples_used <= 300
    assert one != compare(ours, theirs, against="t.csv", resamples=300, seed=8)


def test_compare_needs_three_shared_agents() -> None:
    with pytest.raises(DrarenaError, match="2 agent"):
        compare({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.0, "b": 2.0})


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "board.csv"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_reads_header_comments_and_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "# Search Arena, 2025\nmodel,score\n\na, 1200.5\nb,1100\n")
    assert read_scores(path) == {"a": 1200.5, "b": 1100.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,1\nb,x\n", ":2: score 'x' is not a number"),
        ("a,1\nb,2,3\n", ":2: expected 2 columns"),
        ("a,1\n\nb\n", ":3: expected 2 columns"),
        ("a,1\na,2\n", ":2: agent 'a' listed twice"),
        ("a,1\n,2\n", ":2: empty agent name"),
        ("a,nan\n", ":1: score 'nan' is not finite"),
        ("# only a comment\n", ": no agent,score rows"),
        # what csv itself refuses: a field over its limit (128 KiB)
        ("a,1\nb," + "9" * 140_000 + "\n", ":2: field larger than field limit"),
    ],
)
def test_bad_csv_is_one_line_naming_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DrarenaError) as err:
        read_scores(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_reading_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmp, "MAX_BYTES", 20)
    with pytest.raises(DrarenaError, match="larger than 20 bytes"):
        read_scores(write(tmp_path, "a,1\n" * 10))
    monkeypatch.setattr(cmp, "MAX_BYTES", 1_000_000)
    monkeypatch.setattr(cmp, "MAX_ROWS", 3)
    with pytest.raises(DrarenaError, match=":4: more than 3 rows"):
        read_scores(write(tmp_path, "a,1\nb,2\nc,3\nd,4\n"))
    with pytest.raises(DrarenaError, match=r"board.csv:2: not UTF-8"):
        read_scores(write(tmp_path, b"a,1\nb\xff,2\n"))
    with pytest.raises(DrarenaError, match="cannot read"):
        read_scores(tmp_path / "missing.csv")


def test_the_shipped_example_reads() -> None:
    assert read_scores(EXAMPLE) == {
        "oracle": 3.0,
        "react-bm25": 2.0,
        "react-dense": 2.0,
        "rag": 2.0,
        "closed_book": 1.0,
    }
