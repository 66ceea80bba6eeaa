"""People's labels of a run's rounds: RUN/audit/labels.jsonl, its CSV round trip (thin I/O
over pure parsing).

Why a file of its own, appended: a human audit must never change what the Examiner wrote
(matches.jsonl stays as the run left it), and labels from several people, sessions and
spreadsheets must add up rather than replace one another. One JSON line per label, schema
versioned; a person who labels the same round again corrects their earlier label (the
latest line counts, `latest`), and nothing is ever rewritten.

A label is in the run's own A/B order, whatever order the page showed the answers in:
`shown` is "AB" (the run's A answer shown first) or "BA" (B shown first), recorded so that
position effects in people can be measured too. `items_a` / `items_b` say, for each
checklist item (depth items first, then width, as the task lists them), whether that
answer satisfies it; `question_valid` is the person's view of the question itself
(answerable from the target pages and not leaking them), None when not given.

The CSV form (`drarena run audit RUN --export` / `--import`) has one row per label with the
columns of CSV_COLUMNS; items as a string of y/n, one letter per item. Text cells that a
spreadsheet would run as a formula (starting =, +, -, @, tab or CR) are written with a
leading apostrophe, which import takes off again, so the round trip keeps the text.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError, one_line
from drarena.examiner.verdicts import FailureType, TieQuality, Verdict
from drarena.files import own_folder
from drarena.ledger.folder import append_whole, check_schema, json_object, jsonl_lines
from drarena.ledger.records import MatchRecord
from drarena.records import Record

AUDIT_DIR = "audit"
LABELS_FILE = "labels.jsonl"
LABEL_SCHEMA_VERSION = 1
ORDERS = ("AB", "BA")
SOURCES = ("page", "import")
MAX_NOTE_CHARS = 2000
MAX_NAME_CHARS = 64
MAX_ITEMS = 64  # a task has at most a few dozen checklist items
# an annotator's name: letters, digits, spaces and . ' - _ (shown on pages and in CSV cells)
NAME = re.compile(r"[\w .'-]+")
CSV_COLUMNS = (
    "annotator",
    "time",
    "match_id",
    "round",
    "shown",
    "verdict",
    "tie_quality",
    "loser_failure",
    "items_a",
    "items_b",
    "question_valid",
    "note",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")

RoundKey = tuple[str, int]  # (match id, round index)


@dataclasses.dataclass(frozen=True, slots=True)
class AuditLabel(Record):
    """One person's label of one round, in the run's A/B order (see the module doc)."""

    schema_version: int
    annotator: str
    time: str
    match_id: str
    round: int
    shown: str
    verdict: Verdict
    tie_quality: TieQuality | None
    loser_failure: FailureType
    items_a: tuple[bool, ...]
    items_b: tuple[bool, ...]
    question_valid: bool | None
    note: str = ""
    source: str = "page"

    @property
    def key(self) -> RoundKey:
        return (self.match_id, self.round)


def now() -> str:
    """The time a label is made: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_name(name: str) -> str:
    """An annotator's name, stripped; ValueError when empty, too long or not plain text."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS or not NAME.fullmatch(name):
        raise ValueError(
            f"annotator name {name[:80]!r}: 1 to {MAX_NAME_CHARS} letters, digits, spaces "
            "or . ' - _"
        )
    return name


def check_label(label: AuditLabel, rounds: Mapping[RoundKey, int] | None = None) -> None:
    """ValueError for a label no page would make: a bad name, time or order, a tie quality
    on a decided verdict, a failure type on a tie, a note too long, or (with `rounds`, each
    labelled round's number of checklist items) a round the run does not have or item
    lists of the wrong length."""
    if label.schema_version != LABEL_SCHEMA_VERSION:
        raise ValueError(f"schema_version {label.schema_version} (this drarena writes 1)")
    check_name(label.annotator)
    if label.annotator != label.annotator.strip():
        raise ValueError("annotator: leading or trailing spaces")
    if not _TIME.fullmatch(label.time):
        raise ValueError(f"time {label.time[:40]!r}: not an ISO 8601 time with a zone")
    if label.shown not in ORDERS:
        raise ValueError(f"shown {label.shown[:10]!r}: AB or BA")
    if label.source not in SOURCES:
        raise ValueError(f"source {label.source[:20]!r}: page or import")
    if label.round < 0:
        raise ValueError(f"round {label.round}: 0 or more")
    if label.verdict == Verdict.TIE:
        if label.loser_failure != FailureType.NONE:
            raise ValueError("a tie has no loser: loser_failure must be NONE")
    elif label.tie_quality is not None:
        raise ValueError("tie_quality is for a tie only")
    if len(label.note) > MAX_NOTE_CHARS:
        raise ValueError(f"note longer than {MAX_NOTE_CHARS} characters")
    if len(label.items_a) > MAX_ITEMS or len(label.items_b) > MAX_ITEMS:
        raise ValueError(f"more than {MAX_ITEMS} checklist items")
    if rounds is not None:
        n = rounds.get(label.key)
        if n is None:
            raise ValueError(
                f"match {label.match_id[:120]!r} round {label.round}: not a judged round "
                "of this run"
            )
        for side, items in (("items_a", label.items_a), ("items_b", label.items_b)):
            if items and len(items) != n:
                raise ValueError(f"{side}: {len(items)} items, the round's checklist has {n}")


def labelled_rounds(log: Sequence[MatchRecord]) -> dict[RoundKey, int]:
    """Every round a person can label (played, judged, with a task and both answers), with
    the number of its checklist items."""
    out = {}
    for m in log:
        for r in m.rounds:
            task = r.task.task
            if r.void_reason or r.judgment is None or task is None:
                continue
            if r.answer_a is None or r.answer_b is None:
                continue
            out[(m.match_id, r.index)] = len(task.checklist_depth) + len(task.checklist_width)
    return out


def labels_path(run: Path) -> Path:
    return run / AUDIT_DIR / LABELS_FILE


def parse_label(text: str, where: str) -> AuditLabel:
    """One label from a JSON line; a newer schema is a DrarenaError naming `where`, damage
    a ValueError."""
    data = json_object(text, "a label")
    check_schema(data.get("schema_version"), LABEL_SCHEMA_VERSION, where)
    try:
        label = AuditLabel.from_dict(data)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    check_label(label)
    return label


def read_labels(path: Path, rounds: Mapping[RoundKey, int] | None = None) -> list[AuditLabel]:
    """The labels of labels.jsonl in file order (none when there is no file); a bad line is
    one DrarenaError naming the file and line. With `rounds` (labelled_rounds of the run), a
    label of a round the run does not have is one too."""
    if not path.is_file() and not path.is_symlink():
        return []
    out = []
    for where, line in jsonl_lines(path):
        if not line.strip():
            continue
        try:
            label = parse_label(line, where)
            if rounds is not None:
                check_label(label, rounds)
        except ValueError as exc:  # pydantic's ValidationError is one
            raise DrarenaError(f"{where}: bad audit label ({one_line(exc)})") from None
        out.append(label)
    return out


def append_labels(path: Path, labels: Iterable[AuditLabel]) -> None:
    """Append labels to labels.jsonl (made with its folder when missing), under an exclusive
    lock so that two servers or an import at the same time never interleave lines; a write
    that fails is cut off again, so no half line is left."""
    data = "".join(label.to_json() + "\n" for label in labels).encode("utf-8")
    if not data:
        return
    own_folder(path.parent)
    append_whole(path, data, lock=True)


def latest(labels: Iterable[AuditLabel]) -> dict[tuple[str, str, int], AuditLabel]:
    """Each person's last label of each round, by (annotator, match id, round): a label made
    again corrects the earlier one."""
    out: dict[tuple[str, str, int], AuditLabel] = {}
    for label in labels:
        out[(label.annotator, label.match_id, label.round)] = label
    return out


# --- CSV ------------------------------------------------------------------------------------


def _guard(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) or text.startswith("'") else text


def _unguard(text: str) -> str:
    return text[1:] if text.startswith("'") else text


def _items(values: Sequence[bool]) -> str:
    return "".join("y" if v else "n" for v in values)


def labels_to_csv(labels: Iterable[AuditLabel]) -> str:
    """The labels as CSV with a header row (CSV_COLUMNS), text cells guarded (module doc)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for label in labels:
        writer.writerow(
            [
                _guard(label.annotator),
                label.time,
                _guard(label.match_id),
                label.round,
                label.shown,
                label.verdict.value,
                "" if label.tie_quality is None else label.tie_quality.value,
                label.loser_failure.value,
                _items(label.items_a),
                _items(label.items_b),
                {None: "", True: "yes", False: "no"}[label.question_valid],
                _guard(label.note),
            ]
        )
    return out.getvalue()


def _parse_items(text: str, column: str) -> tuple[bool, ...]:
    text = text.strip().lower()
    if any(c not in "yn" for c in text):
        raise ValueError(f"{column}: one y or n per checklist item, got {text[:40]!r}")
    return tuple(c == "y" for c in text)


def _row_label(row: Mapping[str, str]) -> AuditLabel:
    def cell(name: str) -> str:
        return (row.get(name) or "").strip()

    valid = cell("question_valid").lower()
    if valid not in ("", "yes", "no"):
        raise ValueError(f"question_valid: yes, no or empty, got {valid[:20]!r}")
    verdict = cell("verdict").upper()
    try:
        number = int(cell("round"))
        parsed: dict[str, Any] = {
            "verdict": Verdict(verdict),
            "tie_quality": TieQuality(cell("tie_quality").upper()) if cell("tie_quality") else None,
            "loser_failure": FailureType(cell("loser_failure").upper() or "NONE"),
        }
    except ValueError as exc:
        raise ValueError(f"round, verdict, tie_quality or loser_failure: {exc}") from None
    if parsed["verdict"] == Verdict.TIE and parsed["tie_quality"] is None:
        parsed["tie_quality"] = TieQuality.HIGH  # as the Examiner's ties: HIGH unless LOW
    label = AuditLabel(
        schema_version=LABEL_SCHEMA_VERSION,
        annotator=_unguard(cell("annotator")),
        time=cell("time") or now(),
        match_id=_unguard(cell("match_id")),
        round=number,
        shown=cell("shown").upper() or "AB",
        verdict=parsed["verdict"],
        tie_quality=parsed["tie_quality"],
        loser_failure=parsed["loser_failure"],
        items_a=_parse_items(cell("items_a"), "items_a"),
        items_b=_parse_items(cell("items_b"), "items_b"),
        question_valid=None if not valid else valid == "yes",
        note=_unguard(row.get("note") or ""),
        source="import",
    )
    check_label(label)
    return label


def labels_from_csv(
    text: str, where: str, rounds: Mapping[RoundKey, int] | None = None
) -> list[AuditLabel]:
    """Labels from CSV text with a header row naming at least annotator, match_id, round and
    verdict (other columns may be missing: a spreadsheet made by hand); a bad row is one
    DrarenaError naming `where` and its line."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in ("annotator", "match_id", "round", "verdict") if c not in header]
    if missing:
        raise DrarenaError(f"{where}:1: header row lacks {', '.join(missing)}")
    reader.fieldnames = header
    out = []
    try:
        for row in reader:
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue
            try:
                if None in row:
                    raise ValueError("more cells than the header row names")
                label = _row_label(row)
                if rounds is not None:
                    check_label(label, rounds)
            except ValueError as exc:
                raise DrarenaError(f"{where}:{reader.line_num}: {one_line(exc)}") from None
            out.append(label)
    except csv.Error as exc:
        raise DrarenaError(f"{where}:{reader.line_num}: not CSV ({exc})") from None
    return out


def new_labels(known: Iterable[AuditLabel], incoming: Iterable[AuditLabel]) -> list[AuditLabel]:
    """The incoming labels not already known (same person, round and time): importing a file
    twice, or the export of this run, adds nothing."""
    seen = {(k.annotator, k.match_id, k.round, k.time) for k in known}
    out = []
    for label in incoming:
        key = (label.annotator, label.match_id, label.round, label.time)
        if key not in seen:
            seen.add(key)
            out.append(label)
    return out
