"""The annotation page in a real browser: headless Chromium (Debian's, over the DevTools
protocol: tests/report/cdp.py) where a scripted person labels 10 rounds with the keyboard,
reloads half-way and resumes, hostile answers stay inert text, and the figures report.html
then shows match a hand computation of the labels typed.

With DRARENA_AUDIT_SCREENSHOT=<file.png> the first round's page is saved there (how
docs/img/audit-page.png was made)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from auditrun import AGENTS, TOKEN, serving, write_run
from cdp import CHROMIUM, Browser
from sklearn.metrics import cohen_kappa_score

from drarena.cli import main
from drarena.examiner.verdicts import Verdict
from drarena.ledger.agreement import collapse
from drarena.ledger.audit import labels_path, read_labels
from drarena.ledger.folder import RunDir
from drarena.report.auditpage import round_token

# verdict keys in the page's terms: answer 1 is the answer shown first
KEY_VERDICT = {
    "1": Verdict.A_MUCH_BETTER,
    "2": Verdict.A_BETTER,
    "3": Verdict.TIE,
    "4": Verdict.B_BETTER,
    "5": Verdict.B_MUCH_BETTER,
}
TYPED = "1253411523"  # the verdict key typed on each of the 10 rounds


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup-browser)")
def test_a_person_labels_ten_rounds_with_the_keyboard(tmp_path: Path) -> None:
    run = write_run(tmp_path)[0]
    examiner = {
        round_token((m.match_id, r.index)): r.judgment.reconciled.verdict
        for m in RunDir(run).read_log()
        for r in m.rounds
        if r.judgment is not None
    }
    expected: dict[str, Verdict] = {}  # round token -> the verdict typed, in the run's order
    browser = Browser(tmp_path / "profile")
    try:
        with serving(run, n=10) as server:
            base = f"http://127.0.0.1:{server.port}"
            browser.load(f"{base}/?t={TOKEN}")
            assert browser.evaluate("document.title") == "audit: audited"
            browser.evaluate("document.getElementById('who').value = 'ann'")
            # the name field takes the focus by itself (autofocus), and Enter submits its form
            browser.wait_until("document.activeElement.id === 'who'")
            browser.press_and_load("Enter")
            for i, key in enumerate(TYPED):
                state = browser.evaluate(
                    "JSON.stringify({r: document.querySelector('input[name=r]').value,"
                    " shown: document.querySelector('input[name=shown]').value,"
                    " progress: document.getElementById('progress').textContent,"
                    " text: document.body.innerText, imgs: document.images.length,"
                    " scripts: document.scripts.length, title: document.title})"
                )
                page = json.loads(state)
                assert page["progress"] == f"{i} of 10 labelled"
                assert page["imgs"] == 0 and page["scripts"] == 1  # hostile markup is text
                assert page["title"] == "audit: audited"
                assert not any(name in page["text"] for name in AGENTS)  # blind
                if "pwned" in page["text"]:
                    assert '<script>document.title="pwned"</script>' in page["text"]
                if i == 0 and os.environ.get("DRARENA_AUDIT_SCREENSHOT"):
                    browser.screenshot(Path(os.environ["DRARENA_AUDIT_SCREENSHOT"]))
                if i == 5:  # half-way: reload, the same round comes back at 5 of 10
                    browser.load(None)
                    again = browser.evaluate("document.querySelector('input[name=r]').value")
                    assert again == page["r"]
                    assert browser.evaluate("document.getElementById('progress').textContent") == (
                        "5 of 10 labelled"
                    )
                browser.evaluate("document.getElementById('i1-0').click()")
                browser.press(key)
                browser.press("l" if key == "3" else "w")
                browser.press("x" if i == 3 else "v")
                verdict = KEY_VERDICT[key]
                expected[page["r"]] = verdict if page["shown"] == "AB" else verdict.swapped()
                browser.press_and_load("Enter")
            assert browser.evaluate("document.getElementById('done').textContent").startswith(
                "ann: all 10 sampled rounds labelled"
            )
    finally:
        browser.close()

    labels = read_labels(labels_path(run))
    assert len(labels) == 10 and {round_token(lb.key) for lb in labels} == set(expected)
    assert all(lb.verdict == expected[round_token(lb.key)] for lb in labels)
    assert sum(lb.question_valid is False for lb in labels) == 1
    assert all(lb.items_a[0] or lb.items_b[0] for lb in labels)  # the ticked item

    # the figures, by hand: people against the Examiner over the 10 labels
    people = [expected[t].value for t in sorted(expected)]
    judge = [examiner[t].value for t in sorted(expected)]
    agree = sum(p == j for p, j in zip(people, judge, strict=True)) / 10
    kappa = cohen_kappa_score(people, judge)
    direction = sum(collapse(p) == collapse(j) for p, j in zip(people, judge, strict=True)) / 10
    assert main(["run", "rank", str(run)]) == 0
    report = html.unescape((run / "report.html").read_text(encoding="utf-8"))
    section = report.split("<h2>Human audit", 1)[1].split("<h2>", 1)[0]
    assert "(10 labels of 10 rounds by 1 person)" in section
    row = re.search(
        r"<tr><td>examiner</td><td>verdict \(5-way\)</td><td class=num>10</td>"
        r"<td>([-\d.]+) \[[^]]*\]</td><td>([-\d.]+)",
        section,
    )
    assert row is not None, section[:2000]
    assert float(row.group(1)) == pytest.approx(agree, abs=0.005)
    assert float(row.group(2)) == pytest.approx(kappa, abs=0.005)
    drow = re.search(r"<td>direction \(A/TIE/B\)</td><td class=num>10</td><td>([-\d.]+)", section)
    assert drow is not None and float(drow.group(1)) == pytest.approx(direction, abs=0.005)
    assert "1 of 10 labels (10%) found the question invalid" in section
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
