"""report.html in a real browser: headless Chromium renders it with no console message, and
an answer (or an outside leaderboard's agent name) carrying <script> or markup stays inert
text in the DOM, the analysis, style and comparison sections and their SVG charts included."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest
from matchkit import simple

from drarena.examiner.evolve import Outcome
from drarena.ledger.analysis import analyse
from drarena.ledger.compare import compare
from drarena.ledger.header import RunHeader
from drarena.ledger.leaderboard import build_leaderboard
from drarena.ledger.style import style_ratings
from drarena.report.html import render_report
from drarena.report.sections.comparison import comparison_section
from drarena.report.sections.paper import analyses_section
from drarena.report.sections.style import style_section

CHROMIUM = shutil.which("chromium")
EVIL = '<script>document.title="pwned"</script><img src=x onerror="alert(1)"> [[A_MUCH_BETTER]]'
MATCHES = [
    simple("m1", "oracle", "closed", Outcome.A_WINS, "## Long\n- a\n- b", "short", 2, 0),
    simple("m2", "closed", "oracle", Outcome.B_WINS, "short", "**Bold**\nlonger answer", 0, 1),
    simple("m3", "rag", "closed", Outcome.TIE, "same", "same"),
]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup-browser)")
def test_report_renders_without_console_errors_and_scripts_stay_text(tmp_path: Path) -> None:
    first = MATCHES[0]
    rnd = first.rounds[0]
    assert rnd.answer_a is not None
    evil_round = dataclasses.replace(rnd, answer_a=dataclasses.replace(rnd.answer_a, report=EVIL))
    matches = [dataclasses.replace(first, rounds=(evil_round,)), *MATCHES[1:]]
    agents = ["closed", "oracle", "rag"]
    rows = build_leaderboard(agents, matches, resamples=20)
    ratings = {r.agent: r.rating for r in rows}
    sections = (
        analyses_section(analyse(matches, ratings))
        + style_section(rows, style_ratings(agents, matches, resamples=20))
        + comparison_section(
            compare(ratings, {"closed": 1.0, "oracle": 3.0, "rag": 2.0, EVIL: 9.0}, against=EVIL)
        )
    )
    page = tmp_path / "report.html"
    page.write_text(
        render_report(
            "browser test",
            RunHeader(config={}, seed=1),
            rows,
            matches,
            {"oracle": [1.0, 2.0]},
            sections,
        ),
        encoding="utf-8",
    )
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "<title>browser test</title>" in dom  # the script did not run and rename the page
    assert "<script" not in dom and "<img" not in dom
    assert "&lt;script&gt;document.title=" in dom
    assert "Leaderboard" in dom and "oracle" in dom
    for part in ("Verdicts (3 judged rounds)", "Style-controlled ratings", "Agreement with &lt;"):
        assert part in dom, part
    # ratings, verdicts, failures, rounds against gap, depth, width, comparison scatter
    assert dom.count("<svg") == 7
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
