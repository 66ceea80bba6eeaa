"""The committed recorded run's report and `drarena run rank --json` carry the paper's
analyses and the style-controlled ratings; `drarena run compare` adds the agreement section.
No model is run: everything comes from the run folder's files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from matchkit import answer, judgment, match, round_

from drarena.cli import main
from drarena.examiner.evolve import Outcome
from drarena.examiner.verdicts import Verdict
from drarena.ledger.analysis import analyse
from drarena.ledger.compare import compare
from drarena.report.sections.comparison import comparison_section
from drarena.report.sections.paper import analyses_section

FIXTURE = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "recorded-run"
    shutil.copytree(FIXTURE, path)
    return path


def test_rank_json_and_report_show_the_analyses(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "rank", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"leaderboard", "style_ratings", "analyses", "comparison"}
    assert out["comparison"] is None
    # the leaderboard part is the leaderboard.json rank writes, unchanged by the analyses
    assert out["leaderboard"] == json.loads((run / "leaderboard.json").read_text())
    assert (run / "leaderboard.json").read_bytes() == (FIXTURE / "leaderboard.json").read_bytes()
    a = out["analyses"]
    # the fixture: two matches of one round each, both judged AB and BA in opposite
    # directions, so both reconciled to a high tie
    assert a["judged_rounds"] == 2
    assert a["verdict_counts"] == {"much_better": 0, "better": 0, "tie_high": 2, "tie_low": 0}
    assert a["failure_counts"]["TIE"] == 2
    assert (a["both_orders_rounds"], a["position_agree_exact"]) == (2, 0.0)
    assert sum(a["depth_histogram"].values()) == 2
    assert a["rounds_gap_pearson_r"] is None  # two pairs: undefined, and said so
    lines = [json.loads(x) for x in (run / "matches.jsonl").read_text().splitlines()]
    tokens = sum(
        r[side]["prompt_tokens"]
        for m in lines
        for r in m["rounds"]
        for side in ("answer_a", "answer_b")
    )
    assert sum(c["prompt_tokens"] for c in a["agent_costs"]) == tokens
    assert all(c["cost_usd"] is None and "served at" in c["model"] for c in a["agent_costs"])
    style = out["style_ratings"]
    assert {r["agent"] for r in style["ratings"]} == {r["agent"] for r in out["leaderboard"]}
    assert [c["feature"] for c in style["coefficients"]] == [
        "words",
        "citations",
        "headers",
        "list_items",
        "tables",
    ]
    page = (run / "report.html").read_text(encoding="utf-8")
    for heading in (
        "The paper&#x27;s analyses",
        "Verdicts (2 judged rounds)",
        "Rounds per match against the rating gap",
        "Depth and width when the verdict came",
        "Tokens and cost of the answers",
        "Judge position consistency",
        "Style-controlled ratings",
    ):
        assert heading in page or heading.replace("&#x27;", "'") in page, heading
    assert 'aria-label="verdict shares"' in page and "Pearson r undefined here" in page
    assert ">depth 1 (D=2)</text>" in page  # the paper's D counts the root
    assert "<script" not in page and "http://" not in page.split("<h2>Matches</h2>")[0].replace(
        "served at http://127.0.0.1", ""
    )


def test_compare_adds_the_agreement_section(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.csv"
    board.write_text(
        "agent,score\noracle,1200\nreact-bm25,1100\nreact-dense,1050\nclosed_book,900\n"
        "<script>x</script>,5\n",
        encoding="utf-8",
    )
    assert main(["run", "compare", str(run), "--against", str(board), "--resamples", "50"]) == 0
    printed = capsys.readouterr().out
    assert "agreement with board.csv (raw ratings) over 4 agents" in printed
    saved = json.loads((run / "comparison.json").read_text(encoding="utf-8"))
    assert saved["agents"] == ["closed_book", "oracle", "react-bm25", "react-dense"]
    assert saved["only_in_file"] == ["<script>x</script>"]
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "Agreement with board.csv" in page and 'aria-label="comparison scatter"' in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>" not in page
    # a re-render (rank) keeps the section, as it keeps the drift section
    assert main(["run", "rank", str(run)]) == 0
    assert "Agreement with board.csv" in (run / "report.html").read_text(encoding="utf-8")


def test_compare_refuses_a_bad_csv_and_writes_nothing(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.csv"
    board.write_text("oracle,1\nreact-bm25,high\n", encoding="utf-8")
    assert main(["run", "compare", str(run), "--against", str(board)]) != 0
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{board}:2: score 'high' is not a number") and "\n" not in err
    assert not (run / "comparison.json").exists() and not (run / "report.html").exists()


def test_sections_render_hand_built_figures() -> None:
    matches = [
        match(
            "m1",
            "x",
            "y",
            Outcome.A_WINS,
            (round_(0, answer("x"), answer("y"), judgment(Verdict.A_MUCH_BETTER)),),
        ),
        match(
            "m2",
            "y",
            "z",
            Outcome.A_WINS,
            (
                round_(0, answer("y"), answer("z"), judgment(Verdict.A_BETTER)),
                round_(1, answer("y"), answer("z"), judgment(Verdict.A_BETTER), 2, 3),
            ),
        ),
        match(
            "m3",
            "x",
            "z",
            Outcome.A_WINS,
            (round_(0, answer("x"), answer("z"), judgment(Verdict.A_MUCH_BETTER)),),
        ),
    ]
    html = analyses_section(analyse(matches, {"x": 1200.0, "y": 1000.0, "z": 950.0}))
    # pairs (x,y), (x,z), (y,z): gaps (200, 250, 50) against rounds (1, 1, 2); deviations
    # (100/3, 250/3, -350/3) and (-1/3, -1/3, 2/3): r = (-350/3) / sqrt(65000/3 * 2/3) = -0.971
    assert re.search(r"Pearson r = -0\.971 \(p = 0\.\d+\) over 3 pairs", html)
    assert "much better</text>" in html and ">2 (50%)</text>" in html
    c = compare({"a": 3.0, "b": 2.0, "c": 1.0}, {"a": 30.0, "b": 20.0, "c": 10.0}, against="t")
    section = comparison_section(c)
    assert "<td>spearman</td><td class=num>1.000</td>" in section


def test_a_served_run_renders_without_importing_litellm(run: Path) -> None:
    """The report of a run on a served model needs no price map: a replay (which renders the
    report) keeps litellm unimported, as tests/arena/test_arena_recorded_run.py requires."""
    probe = (
        "import sys\n"
        "from drarena.cli import main\n"
        "rc = main(['run', 'rank', sys.argv[1], '--json'])\n"
        "print('litellm' in sys.modules, rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(run)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "False 0"


def test_seconds_come_from_timings_and_a_bad_timing_is_one_line(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = [json.loads(x) for x in (run / "matches.jsonl").read_text().splitlines()]
    first = log[0]
    timing = {"match_id": first["match_id"], "round": 0, "agent": first["a"]}
    (run / "timings.jsonl").write_text(
        json.dumps(timing | {"wall_s": 3.5, "model_s": 2.25}) + "\n", encoding="utf-8"
    )
    assert main(["run", "rank", str(run), "--json"]) == 0
    costs = {c["agent"]: c for c in json.loads(capsys.readouterr().out)["analyses"]["agent_costs"]}
    assert (costs[first["a"]]["model_seconds"], costs[first["a"]]["wall_seconds"]) == (2.25, 3.5)
    assert costs[first["b"]]["model_seconds"] is None  # no timing recorded for it
    before = (run / "report.html").read_bytes()
    with (run / "timings.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"match_id": "m"}\n')
    assert main(["run", "rank", str(run), "--json"]) != 0
    err = capsys.readouterr().err.strip()
    assert f"{run / 'timings.jsonl'}:2: bad timing" in err and "\n" not in err
    assert (run / "report.html").read_bytes() == before  # nothing overwritten


def test_a_damaged_comparison_is_one_line(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "comparison.json").write_text('{"against": "x"}', encoding="utf-8")
    assert main(["run", "rank", str(run)]) != 0
    err = capsys.readouterr().err.strip()
    assert f"{run / 'comparison.json'}: damaged comparison (" in err and "\n" not in err
    assert not (run / "report.html").exists()


def test_the_stored_config_is_the_tournament_config_and_a_bad_field_is_named(
    run: Path,
) -> None:
    from drarena.config.tournament import TournamentConfig, config_of
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir
    from drarena.ledger.header import RunHeader

    header = RunDir(run).header()
    assert header is not None
    got = config_of(header, "run.json")
    assert isinstance(got, TournamentConfig) and got.agent_names() == sorted(got.agent_names())
    bad = RunHeader.model_validate({"config": {**header.config, "rating": {"seed": "x"}}})
    with pytest.raises(DrarenaError, match=r"^run.json: rating.seed: "):
        config_of(bad, "run.json")


def _edit_header(run: Path, edit: Any) -> None:
    header = json.loads((run / "run.json").read_text(encoding="utf-8"))
    edit(header)
    (run / "run.json").write_text(json.dumps(header), encoding="utf-8")


def test_a_damaged_comparison_is_one_line_and_compare_writes_it_anew(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rank` names a damaged comparison.json (its lists of unequal length failed the render);
    `compare` does not read the file it is about to replace, so it repairs it."""
    board = tmp_path / "board.csv"
    board.write_text("oracle,1200\nreact-bm25,1100\nclosed_book,900\n", encoding="utf-8")
    for damaged in (
        '{"x": 1}',
        json.dumps(
            {
                "against": "b",
                "agents": ["a", "b"],
                "ours": [1.0],
                "theirs": [1.0, 2.0],
                "only_in_run": [],
                "only_in_file": [],
                "correlations": [],
                "resamples": 0,
                "seed": 0,
            }
        ),
    ):
        (run / "comparison.json").write_text(damaged, encoding="utf-8")
        assert main(["run", "rank", str(run)]) == 2
        err = capsys.readouterr().err.strip()
        assert "comparison.json: damaged comparison" in err and "\n" not in err
    assert main(["run", "compare", str(run), "--against", str(board), "--resamples", "20"]) == 0
    assert json.loads((run / "comparison.json").read_text())["agents"][0] == "closed_book"


@pytest.mark.parametrize(
    ("argv", "edit", "message"),
    [
        (["--seed", "-1"], None, "--seed: must be 0 or more, got -1"),
        (
            [],
            lambda h: h["config"].update(rating=[1]),
            "config: rating: Input should be a valid dictionary",
        ),
        (
            [],
            lambda h: h["config"].update(rating={"seed": -2}),
            "config: rating.seed: Input should be greater",
        ),
        (
            [],
            lambda h: h["config"]["agents"].append(dict(h["config"]["agents"][0])),
            "agent names must be unique, repeated: oracle",
        ),
    ],
)
def test_compare_refuses_bad_settings_in_one_line(
    run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    edit: Any,
    message: str,
) -> None:
    board = tmp_path / "board.csv"
    board.write_text("oracle,1200\nclosed_book,900\n", encoding="utf-8")
    if edit is not None:
        _edit_header(run, edit)
    assert main(["run", "compare", str(run), "--against", str(board), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (run / "comparison.json").exists()


def test_examiner_check_figures_edited_into_another_shape_show_as_na(run: Path) -> None:
    """run.json's examiner_check block is printed above the leaderboard and in the report: a
    block edited by hand (a figure without its interval, results as a list) shows n/a."""
    for block in (
        {"results": {"pairwise": {"figures": {"accuracy": {"value": 0.5}}}}, "can_rank": False},
        {"results": [1], "can_rank": False},
        {"results": {"pairwise": {"figures": [1], "verdict": 3}}, "can_rank": True},
    ):
        _edit_header(run, lambda h, b=block: h.update(examiner_check=b))
        assert main(["run", "rank", str(run)]) == 0
        page = (run / "report.html").read_text(encoding="utf-8")
        assert "Examiner check" in page


def test_an_examiner_figure_no_float_holds_shows_na(run: Path) -> None:
    """A figure edited to 1e400 written out as an integer stopped `rank` with an
    OverflowError (float() of it): it shows n/a like any figure of another shape."""
    block = {"results": {"pairwise": {"figures": {"accuracy": {"value": 10**400, "low": 0,
             "high": 1, "n": 3}}}}, "can_rank": False}  # fmt: skip
    _edit_header(run, lambda h: h.update(examiner_check=block))
    assert main(["run", "rank", str(run)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<td>decisive accuracy</td><td class=num>n/a</td>" in page


def _edit_first_answer(run: Path, report: str) -> None:
    lines = [json.loads(x) for x in (run / "matches.jsonl").read_text().splitlines()]
    lines[0]["rounds"][0]["answer_a"]["report"] = report
    (run / "matches.jsonl").write_text(
        "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines), encoding="utf-8"
    )


def test_a_lone_surrogate_in_an_answer_is_written_as_a_replacement_character(
    run: Path,
) -> None:
    """A "\\ud800" escape in matches.jsonl (an edited or foreign log) reads as a lone
    surrogate, which has no UTF-8: writing report.html failed with UnicodeEncodeError and
    left report.html.tmp behind. It is shown as U+FFFD, as are controls and bidi overrides."""
    _edit_first_answer(run, "before\ud800\x00\u202eafter")
    assert main(["run", "rank", str(run)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "before\ufffd\ufffd\ufffdafter" in page
    assert not (run / "report.html.tmp").exists()


def test_untrusted_text_is_cut_on_the_page(run: Path) -> None:
    """An answer of 4 MB (an external agent's stdout limit) went into report.html whole, once
    for each place it shows; the page shows its first LONG_CAP characters and says how many
    more there are (matches.jsonl keeps it all)."""
    from drarena.htmlpage import LONG_CAP

    _edit_first_answer(run, "<p>" * 2**20)
    assert main(["run", "rank", str(run)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert f"... [{3 * 2**20 - LONG_CAP} more characters]</pre>" in page
    assert len(page) < 1_000_000
