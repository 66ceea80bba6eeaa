"""A tournament's examiner-check: stored by key, reused, printed with a warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drarena.validity import reuse
from drarena.validity.check import SCHEMA_VERSION
from drarena.validity.reuse import check_key, header_block, header_lines, reuse_or_run


def fake_report(can: bool) -> dict[str, Any]:
    fig = {"value": 0.5, "low": 0.25, "high": 0.75, "n": 4}
    return {
        "schema_version": SCHEMA_VERSION,
        "tasks": [{"question": "q"}],
        "outcomes": [{"x": 1}],
        "results": {"pairwise": {"figures": {"accuracy": fig}, "can_rank": can}},
        "can_rank": can,
        "verdict": "cannot rank: decisive accuracy 0.50" if not can else "can rank",
    }


def test_reuse_by_key(tmp_path: Path) -> None:
    calls: list[int] = []

    def run() -> dict[str, Any]:
        calls.append(1)
        return fake_report(False)

    key = check_key({"roles": {"judge": {"model": "m"}}, "prompt_hashes": {"judge": "h"}})
    assert key != check_key({"roles": {"judge": {"model": "other"}}, "prompt_hashes": {}})
    first, reused = reuse_or_run(tmp_path, key, run)
    again, reused_again = reuse_or_run(tmp_path, key, run)
    assert (reused, reused_again, len(calls)) == (False, True, 1)
    assert again == first
    (tmp_path / f"{key}.json").write_text("not json", encoding="utf-8")  # damaged: run again
    assert reuse_or_run(tmp_path, key, run)[1] is False and len(calls) == 2
    # the right schema version but parts missing (cut short, edited): run again, no KeyError
    for broken in (
        {"schema_version": SCHEMA_VERSION},
        {**fake_report(False), "tasks": None},
        {**fake_report(False), "results": {"pairwise": {"can_rank": False}}},
        {**fake_report(False), "results": {"pairwise": {"figures": {"accuracy": {"value": 0.5}}}}},
    ):
        (tmp_path / f"{key}.json").write_text(json.dumps(broken), encoding="utf-8")
        report, reused = reuse_or_run(tmp_path, key, run)
        assert not reused and header_block(report, key, reused)["tasks"] == 1


def test_header_block_and_lines() -> None:
    block = header_block(fake_report(False), "k", True)
    assert "outcomes" not in block and block["tasks"] == 1 and block["reused"] is True
    lines = header_lines(block)
    assert lines[0].startswith(
        "Examiner check (pairwise, 1 task(s), reused): accuracy 0.50 [0.25, 0.75] (n=4)"
    )
    assert lines[-1] == "WARNING: the Examiner cannot rank: decisive accuracy 0.50"
    lines = header_lines(header_block(fake_report(True), "k", False))
    assert not any("WARNING" in x for x in lines) and lines[-1] == "Examiner check: can rank"


def test_a_stored_file_too_large_to_be_a_report_is_run_again_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the stored report was read whole (`read_text`), however large. A file
    over MAX_STORED_BYTES is now refused after reading that much, and the check runs again."""
    monkeypatch.setattr(reuse, "MAX_STORED_BYTES", 4096)
    key = check_key({"roles": {}})
    path = tmp_path / f"{key}.json"
    big = {**fake_report(False), "padding": "x" * 5000}  # a usable report, but too large
    path.write_text(json.dumps(big), encoding="utf-8")
    calls: list[int] = []

    def run() -> dict[str, Any]:
        calls.append(1)
        return fake_report(False)

    report, reused = reuse_or_run(tmp_path, key, run)
    assert (reused, calls, "padding" in report) == (False, [1], False)
    assert reuse_or_run(tmp_path, key, run)[1] is True  # the report stored again is reused


def test_a_stored_reports_text_reaches_the_terminal_as_data() -> None:
    """Regression: a stored report's verdict and mode names were printed as they were, so
    a planted file could send the terminal escape sequences or forge a line."""
    report = fake_report(False)
    report["verdict"] = "cannot rank: \x1b]0;pwned\x07 \u202eevil\nWARNING: forged"
    report["results"] = {"pair\x1b[2Jwise": report["results"]["pairwise"]}
    lines = header_lines(header_block(report, "k", True))
    assert len(lines) == 2
    assert all(line.isprintable() for line in lines)
    assert lines[0].startswith("Examiner check (pair\\x1b[2Jwise, 1 task(s), reused)")
    assert lines[1] == (
        "WARNING: the Examiner cannot rank: \\x1b]0;pwned\\x07 \\u202eevil\\nWARNING: forged"
    )
