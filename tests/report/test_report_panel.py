"""The judge panel's agreement: hand-computed figures over hand-built rounds, the report
section (escaped), and `drarena run rank --json` / report.html on a run whose rounds carry a
panel. No model is run: everything comes from records."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from matchkit import answer, judgment, match, round_

from drarena.cli import main
from drarena.examiner.evolve import Outcome
from drarena.examiner.judge import PairJudgment, PanelMember
from drarena.examiner.panel import majority
from drarena.examiner.verdicts import Verdict
from drarena.ledger.panel import panel_agreement
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.report.sections.panel import panel_section

FIXTURE = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"
V = Verdict


def panel(members: dict[str, PairJudgment]) -> PairJudgment:
    """A panel's judgment as the match loop records it."""
    judged = tuple(PanelMember(role, pj) for role, pj in members.items())
    return PairJudgment(None, None, majority([m.judgment.reconciled for m in judged]), None, judged)


def panel_round(index: int, j1: Verdict, j2: Verdict, j3: Verdict) -> RoundRecord:
    pj = panel({"j1": judgment(j1), "j2": judgment(j2), "j3": judgment(j3)})
    return round_(index, answer("x"), answer("y"), pj)


def log() -> list[MatchRecord]:
    rounds = (
        panel_round(0, V.A_BETTER, V.A_BETTER, V.B_BETTER),
        panel_round(1, V.TIE, V.TIE, V.TIE),
        panel_round(2, V.B_BETTER, V.A_BETTER, V.B_BETTER),
        panel_round(3, V.A_MUCH_BETTER, V.A_BETTER, V.A_MUCH_BETTER),
        round_(4, answer("x"), None, None, void="agent y failed"),  # void: not compared
    )
    single = round_(0, answer("x"), answer("z"), judgment(V.A_BETTER))  # no panel
    return [
        match("m1", "x", "y", Outcome.A_WINS, rounds),
        match("m2", "x", "z", Outcome.A_WINS, (single,)),
    ]


def test_pairwise_agreement_and_kappa_by_hand() -> None:
    got = panel_agreement(log(), resamples=0, seed=0)
    assert got is not None
    assert (got.judges, got.rounds) == (("j1", "j2", "j3"), 4)
    figures = {
        (p.first, p.second): (p.verdict.n, p.verdict.agreement, p.verdict.kappa) for p in got.pairs
    }
    # kappa = (n * agree - S) / (n^2 - S), S = sum over labels of count1 * count2
    # j1/j2 agree on rounds 0, 1; S = A_BETTER 1*3 + TIE 1*1 = 4: (8 - 4) / 12
    assert figures[("j1", "j2")] == (4, 0.5, pytest.approx(1 / 3))
    # j1/j3 agree on rounds 1, 2, 3; S = TIE 1 + B_BETTER 1*2 + A_MUCH_BETTER 1 = 4: 8 / 12
    assert figures[("j1", "j3")] == (4, 0.75, pytest.approx(2 / 3))
    # j2/j3 agree on round 1 only; S = TIE 1: (4 - 1) / (16 - 1)
    assert figures[("j2", "j3")] == (4, 0.25, pytest.approx(0.2))
    # the panel decided A_BETTER, TIE, B_BETTER, A_MUCH_BETTER
    assert [(m.judge, m.rounds, m.with_majority) for m in got.majority] == [
        ("j1", 4, 4),
        ("j2", 4, 2),
        ("j3", 4, 3),
    ]
    assert got.pairs[0].verdict.agreement_ci is None  # no resamples asked
    with_ci = panel_agreement(log(), resamples=50, seed=1)
    assert with_ci is not None and with_ci.pairs[0].verdict.agreement_ci is not None


def test_a_run_without_a_panel_has_no_panel_figures() -> None:
    assert panel_agreement([log()[1]], resamples=10, seed=0) is None


def test_the_section_escapes_judge_names() -> None:
    odd = panel({"<script>x</script>": judgment(V.A_BETTER), "j'2": judgment(V.A_BETTER)})
    rec = [match("m", "x", "y", Outcome.A_WINS, (round_(0, answer("x"), answer("y"), odd),))]
    got = panel_agreement(rec, resamples=0, seed=0)
    assert got is not None
    html = panel_section(got)
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "j&#x27;2" in html
    assert "Judge panel agreement (2 judges, 1 played rounds)" in html
    # both said A_BETTER in the only round: agreement 100%, kappa undefined (said so)
    assert "<td>100%</td><td>n/a</td>" in html


def test_rank_json_and_report_show_the_panel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "recorded-run"
    shutil.copytree(FIXTURE, run)
    lines = []
    for line in (run / "matches.jsonl").read_text(encoding="utf-8").splitlines():
        m = MatchRecord.from_json(line)
        rounds = []
        for r in m.rounds:
            if r.judgment is not None:  # j1 and j2 as judged, j3 dissenting: the same majority
                j = panel({"j1": r.judgment, "j2": r.judgment, "j3": judgment(V.A_MUCH_BETTER)})
                assert j.reconciled == r.judgment.reconciled
                r = dataclasses.replace(r, judgment=j)
            rounds.append(r)
        lines.append(dataclasses.replace(m, rounds=tuple(rounds)).to_json())
    (run / "matches.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["run", "rank", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    figures = out["judge_panel"]
    assert figures["judges"] == ["j1", "j2", "j3"] and figures["rounds"] >= 1
    pair = figures["pairs"][0]
    assert (pair["first"], pair["second"], pair["verdict"]["agreement"]) == ("j1", "j2", 1.0)
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "Judge panel agreement (3 judges," in page
    assert "<li>judge j3: A_MUCH_BETTER" in page and "<b>panel majority:</b>" in page
