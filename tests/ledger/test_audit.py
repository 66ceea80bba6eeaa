"""People's labels (drarena.ledger.audit): appended JSONL, schema checked, one-line errors
naming file and line, the CSV round trip, corrections by the same person."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from auditkit import ITEMS, audit_log, label

from drarena.errors import DrarenaError
from drarena.examiner.verdicts import Verdict
from drarena.ledger.audit import (
    AuditLabel,
    append_labels,
    check_name,
    labelled_rounds,
    labels_from_csv,
    labels_path,
    labels_to_csv,
    latest,
    new_labels,
    read_labels,
)

V = Verdict
LOG = audit_log([[V.A_BETTER, V.TIE]], [("x", "y")])
MID = LOG[0].match_id
HEAD = "annotator,match_id,round,verdict"


def test_labels_append_and_read_back(tmp_path: Path) -> None:
    path = labels_path(tmp_path)
    first = label("ann", MID, 0, V.A_BETTER, items_a=(True,) * ITEMS, items_b=(False,) * ITEMS)
    append_labels(path, [first])
    second = label("bob", MID, 1, V.TIE, shown="BA", valid=None, note="both fine")
    append_labels(path, [second])
    assert read_labels(path, labelled_rounds(LOG)) == [first, second]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["schema_version"] == 1
    assert json.loads(lines[1])["shown"] == "BA"
    append_labels(path, [])  # nothing to write: the file is left as it is
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2


def test_no_file_is_no_labels(tmp_path: Path) -> None:
    assert read_labels(labels_path(tmp_path)) == []


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not valid JSON"),
        ("[1]", "a label is a JSON object"),
        ('{"schema_version": 9}', "newer than this drarena supports"),
        ('{"schema_version": 1, "annotator": "a"}', "bad audit label"),
    ],
)
def test_a_bad_line_is_one_line_naming_file_and_line(tmp_path: Path, line: str, says: str) -> None:
    path = labels_path(tmp_path)
    append_labels(path, [label("ann", MID, 0, V.A_BETTER)])
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    with pytest.raises(DrarenaError) as err:
        read_labels(path)
    text = str(err.value)
    assert text.startswith(f"{path}:2: ") and says in text and "\n" not in text


def test_labels_a_page_would_not_make_are_refused(tmp_path: Path) -> None:
    path = labels_path(tmp_path)
    path.parent.mkdir()
    cases = {
        "a tie has no loser": label("ann", MID, 0, V.TIE).to_dict() | {"loser_failure": "DEPTH"},
        "tie_quality is for a tie": label("ann", MID, 0, V.A_BETTER).to_dict()
        | {"tie_quality": "LOW"},
        "AB or BA": label("ann", MID, 0, V.A_BETTER).to_dict() | {"shown": "CD"},
        "annotator name": label("ann", MID, 0, V.A_BETTER).to_dict() | {"annotator": "<b>"},
        "ISO 8601": label("ann", MID, 0, V.A_BETTER).to_dict() | {"time": "yesterday"},
    }
    for says, data in cases.items():
        path.write_text(json.dumps(data) + "\n", encoding="utf-8")
        with pytest.raises(DrarenaError, match=says):
            read_labels(path)


def test_a_label_of_a_round_the_run_lacks_is_refused(tmp_path: Path) -> None:
    path = labels_path(tmp_path)
    append_labels(path, [label("ann", "m-other", 0, V.A_BETTER)])
    with pytest.raises(DrarenaError, match=r":1: .*not a judged round of this run"):
        read_labels(path, labelled_rounds(LOG))
    path.unlink()
    append_labels(path, [label("ann", MID, 0, V.A_BETTER, items_a=(True,))])
    with pytest.raises(DrarenaError, match="items_a: 1 items, the round's checklist has 3"):
        read_labels(path, labelled_rounds(LOG))


def test_a_link_in_place_of_the_labels_file_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "notes.txt"
    theirs.write_text("mine\n", encoding="utf-8")
    path = labels_path(tmp_path / "run")
    path.parent.mkdir(parents=True)
    path.symlink_to(theirs)
    with pytest.raises(DrarenaError, match="a link"):
        append_labels(path, [label("ann", MID, 0, V.A_BETTER)])
    assert theirs.read_text(encoding="utf-8") == "mine\n"


def test_the_latest_label_of_a_person_counts() -> None:
    early = label("ann", MID, 0, V.A_BETTER, time="2025-01-01T00:00:00+00:00")
    late = label("ann", MID, 0, V.B_BETTER, time="2025-01-02T00:00:00+00:00")
    other = label("bob", MID, 0, V.TIE)
    got = latest([early, other, late])
    assert got == {("ann", MID, 0): late, ("bob", MID, 0): other}


def test_names() -> None:
    assert check_name("  Ann O'Neil-2 ") == "Ann O'Neil-2"
    assert check_name("Zoë") == "Zoë"
    for bad in ("", "   ", "a" * 65, "<script>", "a\nb", "\u202eevil"):
        with pytest.raises(ValueError, match="annotator name"):
            check_name(bad)


def test_csv_round_trip_keeps_every_field_and_defuses_formulas() -> None:
    labels = [
        label("ann", MID, 0, V.A_BETTER, items_a=(True, False, True), items_b=(False,) * 3),
        label("bob", MID, 1, V.TIE, shown="BA", valid=False, note='=HYPERLINK("x"), "quoted"'),
        label("cy", MID, 1, V.B_MUCH_BETTER, valid=None, note="-1 and\na second line"),
    ]
    text = labels_to_csv(labels)
    assert "'=HYPERLINK" in text and "'-1 and" in text  # no cell a spreadsheet would run
    back = labels_from_csv(text, "x.csv", labelled_rounds(LOG))
    # imported labels say so; everything else is as it was
    assert [AuditLabel.from_dict(b.to_dict() | {"source": "page"}) for b in back] == labels
    assert {b.source for b in back} == {"import"}
    assert new_labels(labels, back) == []  # importing the export again adds nothing


def test_a_hand_made_spreadsheet_with_few_columns() -> None:
    text = f"annotator,match_id,round,verdict\nann,{MID},1,tie\n"
    (got,) = labels_from_csv(text, "hand.csv", labelled_rounds(LOG))
    assert got.verdict == V.TIE and got.shown == "AB" and got.items_a == ()
    assert got.tie_quality is not None and got.question_valid is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("who,when\n", "hand.csv:1: header row lacks annotator, match_id, round, verdict"),
        (f"{HEAD}\nann,{MID},0,BEST\n", "hand.csv:2: "),
        (f"{HEAD}\nann,{MID},x,TIE\n", "hand.csv:2: "),
        (f"{HEAD}\n\nann,{MID},0,TIE,extra\n", "hand.csv:3: more"),
        (f"{HEAD}\nann,nope,0,TIE\n", "hand.csv:2: match 'nope'"),
        (f"{HEAD},items_a\nann,{MID},0,TIE,yx\n", "one y or n"),
    ],
)
def test_a_bad_csv_row_is_one_line_naming_its_line(text: str, says: str) -> None:
    with pytest.raises(DrarenaError) as err:
        labels_from_csv(text, "hand.csv", labelled_rounds(LOG))
    assert says in str(err.value) and "\n" not in str(err.value)
