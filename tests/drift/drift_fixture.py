"""A drifted copy of the committed snapshot, and its loopback replay.

The copy is written with the real SnapshotWriter from the original's responses: two pages
gone (one absent, one 404), a number changed in one sentence of two pages, one sentence
reworded (with markup-looking text in it), one page turned into a 301 to another, one page
changed only in its HTML whitespace, a robots.txt that disallows one page; everything else
byte-identical.
"""

from __future__ import annotations

import contextlib
import http
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from loopback_servers import replay_snapshot

from drarena.ledger.header import RunHeader
from drarena.web.warc.manifest import Counts
from drarena.web.warc.snapshot import Snapshot
from drarena.web.warc.writer import Exchange, SnapshotWriter

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "snapshots" / "pydocs"
ORIGIN = "http://127.0.0.1:8765"
B = ORIGIN + "/"

NUM1 = B + "library/binascii.html"
NUM2 = B + "howto/functional.html"
REWORD = B + "howto/logging.html"
MOVED = B + "library/asynchat.html"
MOVED_TO = B + "library/asyncore.html"
ABSENT = B + "library/aifc.html"
NOT_FOUND = B + "library/audioop.html"
WHITESPACE = B + "library/bisect.html"
BLOCKED = B + "library/zipapp.html"  # disallowed by the copy's robots.txt
ROBOTS = b"User-agent: *\nDisallow: /library/zipapp.html\n"

# url -> (exact old HTML, new HTML): each old string occurs once in its page
EDITS = {
    NUM1: ("Lines normally contain 45 (binary) bytes", "Lines normally contain 57 (binary) bytes"),
    NUM2: ("starting with Python 3.7, dictionary", "starting with Python 3.8, dictionary"),
    REWORD: (
        "logging has been introduced, using\ndictionaries to hold",
        "logging was added, using\ndictionaries (&lt;script&gt;steal()&lt;/script&gt;) to hold",
    ),
    WHITESPACE: (
        "this can be an improvement over the more common\napproach.",
        "this can be an   improvement over the\n      more common\n\n   approach.",
    ),
}
NUM1_OLD = "Lines normally contain 45 (binary) bytes, except for the last line."
NUM2_OLD = (
    "Note that starting with Python 3.7, dictionary iteration order is guaranteed to be "
    "the same as the insertion order."
)
REWORD_OLD = (
    "In Python 3.2, a new means of configuring logging has been introduced, using "
    "dictionaries to hold configuration information."
)
CHANGED = {NUM1, NUM2, REWORD}
GONE = {ABSENT, NOT_FOUND}
DRIFTED = CHANGED | GONE | {MOVED}


@dataclass(frozen=True)
class DriftWorld:
    snapshot: Path  # copy of snapshots/pydocs with docs.jsonl and trees
    drifted: Path  # the drifted copy (a later snapshot of the same site)
    run: Path  # a run folder over `snapshot`
    fingerprint: str


_SKIP = frozenset({"content-length", "content-encoding", "transfer-encoding"})


def _exchange(url: str, status: int, headers: list[tuple[str, str]], body: bytes) -> Exchange:
    kept = [(k, v) for k, v in headers if k.lower() not in _SKIP]
    return Exchange(
        url=url,
        request_headers=(("User-Agent", "drift-fixture"),),
        status=status,
        reason=http.HTTPStatus(status).phrase,
        response_headers=(*kept, ("Content-Length", str(len(body)))),
        entity=body,
    )


def write_drifted(out: Path) -> Path:
    """The drifted copy of SOURCE in `out`; raises if an edit no longer applies."""
    clock = iter(range(10**6))

    def tick() -> datetime:
        return datetime.fromtimestamp(1_800_000_000 + next(clock), UTC)

    with Snapshot.open(SOURCE) as snap:
        spec = dict(snap.manifest.spec, name="pydocs-drifted")
        writer = SnapshotWriter(out, "pydocs-drifted", spec, {"test": "drift"}, clock=tick)
        writer.open()
        seen = set()
        for stored in snap.iter_responses():
            url = stored.canonical_url
            seen.add(url)
            headers = list(stored.headers)
            if url == ABSENT:
                continue
            if url == NOT_FOUND:
                writer.write_exchange(
                    _exchange(stored.url, 404, [("Content-Type", "text/plain")], b"not found\n")
                )
                continue
            if url == MOVED:
                writer.write_exchange(_exchange(stored.url, 301, [("Location", MOVED_TO)], b""))
                continue
            body = stored.body
            if url in EDITS:
                old, new = EDITS[url]
                text = body.decode("utf-8")
                if text.count(old) != 1:
                    raise AssertionError(f"{url}: the fixture edit {old!r} no longer applies")
                body = text.replace(old, new).encode("utf-8")
            writer.write_exchange(_exchange(stored.url, stored.status, headers, body))
        writer.write_exchange(
            _exchange(ORIGIN + "/robots.txt", 200, [("Content-Type", "text/plain")], ROBOTS)
        )
        missing = (DRIFTED | {BLOCKED} | {MOVED_TO, WHITESPACE}) - seen
        if missing:
            raise AssertionError(f"fixture pages not in {SOURCE}: {sorted(missing)}")
        writer.close(complete=True, counts=Counts(pages=len(seen)))
    return out


def copy_extracted(out: Path, trees: int = 3, extracted: Path = SOURCE) -> Path:
    """A copy of SOURCE with docs.jsonl and `trees` trees (the repository stays clean);
    extraction outputs are taken from `extracted` (a copy of SOURCE) when up to date there."""
    import shutil

    from drarena.cli import main

    out.mkdir(parents=True)
    # extraction outputs go along when present: the stage checks they are up to date
    # (fingerprint, parameters, digests) and extracts afresh when not, as from a clean clone
    derived = ("docs.jsonl", "links.jsonl", "extract-manifest.json")
    for path in SOURCE.iterdir():
        if path.name in ("manifest.json", "index.cdxj") or path.name.endswith(".warc.gz"):
            shutil.copy2(path, out / path.name)
    for name in derived:
        if (extracted / name).is_file():
            shutil.copy2(extracted / name, out / name)
    if main(["trees", str(out), "--count", str(trees), "--seed", "1"]) != 0:
        raise AssertionError("drarena trees failed on the fixture copy")
    return out


@contextlib.contextmanager
def replay(snapshot: Path) -> Iterator[int]:
    """`drarena replay-snapshot` on a free port, as a real subprocess; yields the port."""
    with replay_snapshot(snapshot, ORIGIN) as (port, _):
        yield port


def drift_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "drarena", "drift", "snapshot", *args, "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )


# -- a run folder whose tasks cite drifted and undrifted sentences --------------------------

# (match, round, checklist, index) of the items that must come out stale
STALE_KEYS = {
    ("m1", 0, "depth", 0),
    ("m1", 0, "width", 0),
    ("m2", 1, "depth", 0),
    ("m2", 1, "width", 0),
    ("m2", 1, "width", 2),
    ("m2", 1, "width", 3),
}


def write_run(folder: Path, fingerprint: str) -> Path:
    """runs/<x>/ with run.json, two finished matches of real records, and a report.html."""
    from drarena.examiner.evolve import MatchScore, Outcome
    from drarena.examiner.taskcheck import ChecklistItem, Task
    from drarena.examiner.taskgen import TaskOutcome
    from drarena.ledger.folder import RunDir
    from drarena.ledger.records import SCHEMA_VERSION, MatchRecord, RoundRecord
    from drarena.report.html import render_report

    def task(depth: list[tuple[str, str]], width: list[tuple[str, str]]) -> TaskOutcome:
        return TaskOutcome(
            Task(
                "q?",
                "Answer in 100 to 200 words.",
                (100, 200),
                tuple(ChecklistItem(i, u) for i, u in depth),
                tuple(ChecklistItem(i, u) for i, u in width),
                "r",
            ),
            (),
            (),
        )

    def rnd(index: int, outcome: TaskOutcome) -> RoundRecord:
        return RoundRecord(
            index, "n", 1, 2, (), outcome, None, None, None, MatchScore(0, 0, 0, 0), None
        )

    first = task(
        [
            ("Lines normally contain 45 (binary) bytes, except for the last line", NUM1),
            ("binascii contains low-level functions written in C for greater speed", NUM1),
        ],
        [
            ("A new means of configuring logging has been introduced, using dictionaries", REWORD),
            ("asyncore is deprecated since 3.6 and will be removed in 3.12 (PEP 594)", MOVED_TO),
        ],
    )
    second = task(
        [("Since Python 3.7 dictionary iteration order is guaranteed to be insertion order", NUM2)],
        [
            ("asynchat is an asynchronous socket command/response handler", MOVED),
            ("bisect is an improvement over the more common approach for long lists", WHITESPACE),
            ("aifc supports reading and writing AIFF and AIFF-C files", ABSENT),
            ("audioop operates on signed integer samples 8, 16, 24 or 32 bits wide", NOT_FOUND),
        ],
    )
    void = TaskOutcome(None, (), (), "task generation failed")
    matches = [
        MatchRecord(
            SCHEMA_VERSION,
            "m1",
            1,
            "a",
            "b",
            "tree-000",
            0,
            (rnd(0, first),),
            MatchScore(1, 0, 1, 0),
            Outcome.A_WINS,
        ),
        MatchRecord(
            SCHEMA_VERSION,
            "m2",
            1,
            "b",
            "a",
            "tree-001",
            0,
            (rnd(0, void), rnd(1, second)),
            MatchScore(0, 1, 1, 1),
            Outcome.B_WINS,
        ),
    ]
    run = RunDir(folder)
    header = {"snapshot_fingerprint": fingerprint, "seed": 0, "config": {"name": "drift-fixture"}}
    run.write_header(header)
    for match in matches:
        run.save_match(match)
    (folder / "report.html").write_text(
        render_report("drarena: drift fixture", RunHeader.model_validate(header), [], matches),
        encoding="utf-8",
    )
    return folder
