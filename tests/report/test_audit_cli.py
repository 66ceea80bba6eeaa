"""`drarena run audit RUN --export/--import` (the spreadsheet round trip) and the audit's
figures in `drarena run rank --json` and report.html's "Human audit" section."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from auditkit import ITEMS, label
from auditrun import write_run

from drarena.cli import main
from drarena.examiner.verdicts import Verdict
from drarena.ledger.audit import append_labels, labels_path, read_labels

V = Verdict


def digests(folder: Path) -> dict[str, str]:
    """What the Examiner wrote: every file but the audit's and the re-rendered outputs."""
    outputs = ("audit", "report.html", "leaderboard")
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(str(p.relative_to(folder)).startswith(o) for o in outputs)
    }


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path)[0]


def test_export_then_import_elsewhere(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mid = "m0-alpha-secret-vs-beta-secret"
    mine = [
        label("ann", mid, 1, V.A_BETTER, items_a=(True,) * ITEMS, items_b=(False,) * ITEMS),
        label("ann", mid, 2, V.TIE, note="=1+1"),
    ]
    append_labels(labels_path(run), mine)
    out = tmp_path / "labels.csv"
    assert main(["run", "audit", str(run), "--export", str(out)]) == 0
    assert "'=1+1" in out.read_text(encoding="utf-8")
    # an existing file is not overwritten
    assert main(["run", "audit", str(run), "--export", str(out)]) != 0
    assert "exists; choose a new file" in capsys.readouterr().err
    # the same labels made on another machine: imported into a copy of the run
    other = write_run(tmp_path / "elsewhere")[0]
    assert main(["run", "audit", str(other), "--import", str(out)]) == 0
    assert "2 labels added" in capsys.readouterr().out
    assert main(["run", "audit", str(other), "--import", str(out)]) == 0
    assert "0 labels added" in capsys.readouterr().out  # twice adds nothing
    back = read_labels(labels_path(other))
    assert [b.to_dict() | {"source": "page"} for b in back] == [m.to_dict() for m in mine]


def test_a_bad_import_names_file_and_line(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("annotator,match_id,round,verdict\nann,nope,0,TIE\n", encoding="utf-8")
    assert main(["run", "audit", str(run), "--import", str(bad)]) != 0
    err = capsys.readouterr().err
    assert f"{bad}:2: match 'nope'" in err and len(err.strip().splitlines()) == 1
    assert not labels_path(run).exists()


def test_rank_json_and_the_report_show_the_audit(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digests(run)
    assert main(["run", "rank", str(run), "--json"]) == 0
    assert "human_audit" not in json.loads(capsys.readouterr().out)  # no labels yet
    mid = "m0-alpha-secret-vs-beta-secret"  # judged A_MUCH_BETTER, A_BETTER, TIE, A_MUCH_BETTER
    append_labels(
        labels_path(run),
        [
            label("ann", mid, 0, V.A_MUCH_BETTER),
            label("ann", mid, 1, V.B_BETTER, valid=False),
            label("bob", mid, 1, V.B_MUCH_BETTER),
        ],
    )
    assert main(["run", "rank", str(run), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["human_audit"]
    (examiner,) = got["judges"]
    assert examiner["judge"] == "examiner" and examiner["verdict"]["n"] == 3
    assert examiner["verdict"]["agreement"] == pytest.approx(1 / 3)
    assert examiner["direction"]["agreement"] == pytest.approx(1 / 3)
    assert got["questions_invalid"] == 1 and got["questions_rated"] == 3
    assert got["disagreements"][0]["round"] == 1 and got["disagreements"][0]["match_index"] == 0
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "Human audit (3 labels of 2 rounds by 2 people)" in html
    assert 'href="#m0r1"' in html and "<h4 id=m0r1>" in html
    assert digests(run) == before  # matches.jsonl and run.json as they were


def test_a_bad_labels_file_stops_rank_in_one_line(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = labels_path(run)
    path.parent.mkdir()
    path.write_text("{not json\n", encoding="utf-8")
    assert main(["run", "rank", str(run)]) != 0
    err = capsys.readouterr().err.strip()
    assert f"{path}:1: " in err and len(err.splitlines()) == 1
