"""A run's report keeps the drift section `drarena drift --run` added when it is re-rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.config.tournament import load_config
from drarena.drift.pages import PageDiff, Verdict
from drarena.drift.report import (
    SCHEMA_VERSION,
    SECTION_BEGIN,
    DriftReport,
    SnapshotRef,
    count_verdicts,
    write_json,
)
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.report.run import write_report

ROOT = Path(__file__).resolve().parents[2]


def test_rerendered_report_keeps_the_drift_section(tmp_path: Path) -> None:
    config = load_config(ROOT / "configs" / "demo.yaml")
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_header({"seed": 0, "config": config.model_dump(mode="json")})
    write_report(run, config, [])
    assert SECTION_BEGIN not in (run.path / "report.html").read_text(encoding="utf-8")

    pages = (PageDiff("http://site.test/a.html", "a", "A", Verdict.GONE, "HTTP 404 <b>"),)
    write_json(
        DriftReport(
            SCHEMA_VERSION,
            "2030-01-01T00:00:00+00:00",
            SnapshotRef("snap", "/s", "f" * 64),
            "live",
            None,
            {},
            count_verdicts(pages),
            pages,
            (),
        ),
        run.path / "drift.json",
    )
    write_report(run, config, [])  # what `drarena rank` does
    page = (run.path / "report.html").read_text(encoding="utf-8")
    assert page.count(SECTION_BEGIN) == 1
    assert "http://site.test/a.html" in page and "HTTP 404 &lt;b&gt;" in page


@pytest.mark.parametrize(
    "damage",
    [b"{}\n", b"{not json", b"\xff\xfe", b"[1]\n", b'{"schema_version": "one"}\n'],
    ids=["empty object", "not JSON", "not UTF-8", "a list", "wrong field"],
)
def test_a_damaged_drift_json_is_one_line_and_overwrites_nothing(
    tmp_path: Path, damage: bytes
) -> None:
    config = load_config(ROOT / "configs" / "demo.yaml")
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_header({"seed": 0, "config": config.model_dump(mode="json")})
    write_report(run, config, [])
    before = (run.path / "report.html").read_bytes()
    (run.path / "drift.json").write_bytes(damage)
    with pytest.raises(DrarenaError) as caught:
        write_report(run, config, [])  # what `drarena rank` does
    message = str(caught.value)
    assert "\n" not in message and str(run.path / "drift.json") in message
    assert f"drarena drift SNAPSHOT --run {run.path}" in message
    assert (run.path / "report.html").read_bytes() == before
