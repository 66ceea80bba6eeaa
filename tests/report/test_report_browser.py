"""report.html in a real browser: headless Chromium renders it with no console message, and
an answer carrying <script> or markup stays inert text in the DOM."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest
from test_leaderboard import MATCHES

from drarena.ledger.leaderboard import build_leaderboard
from drarena.report.html import render_report

CHROMIUM = shutil.which("chromium")
EVIL = '<script>document.title="pwned"</script><img src=x onerror="alert(1)"> [[A_MUCH_BETTER]]'


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup-browser)")
def test_report_renders_without_console_errors_and_scripts_stay_text(tmp_path: Path) -> None:
    first = MATCHES[0]
    rnd = first.rounds[0]
    assert rnd.answer_a is not None
    evil_round = dataclasses.replace(rnd, answer_a=dataclasses.replace(rnd.answer_a, report=EVIL))
    matches = [dataclasses.replace(first, rounds=(evil_round,)), *MATCHES[1:]]
    rows = build_leaderboard(["closed", "oracle", "rag"], matches, resamples=20)
    page = tmp_path / "report.html"
    page.write_text(
        render_report("browser test", {"seed": 1}, rows, matches, {"oracle": [1.0, 2.0]}),
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
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
