"""`drarena drift` for real: the committed snapshot against a drifted copy served on loopback
by `drarena replay-snapshot`, and against the same copy offline."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from drift_fixture import (
    ABSENT,
    BLOCKED,
    CHANGED,
    DRIFTED,
    GONE,
    MOVED,
    MOVED_TO,
    NOT_FOUND,
    NUM1,
    NUM1_OLD,
    NUM2,
    NUM2_OLD,
    REWORD,
    REWORD_OLD,
    STALE_KEYS,
    WHITESPACE,
    DriftWorld,
    drift_cli,
    replay,
)
from loopback_servers import free_port

from drarena.drift.compare import DriftRequest, run_drift

pytestmark = pytest.mark.slow


def verdicts(pages: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
    return {p["url"]: (p["verdict"], p["target"]) for p in pages}


def connect_to(port: int) -> list[str]:
    return ["--connect-to", f"127.0.0.1:8765=127.0.0.1:{port}"]


class LiveRun(NamedTuple):
    report: dict[str, Any]
    table: str
    json_path: Path
    capture: Path


@pytest.fixture(scope="module")
def live(drift_world: DriftWorld, tmp_path_factory: pytest.TempPathFactory) -> LiveRun:
    folder = tmp_path_factory.mktemp("live")
    out, capture = folder / "drift.json", folder / "capture"
    with replay(drift_world.drifted) as port:
        started = time.perf_counter()
        done = drift_cli(
            str(drift_world.snapshot),
            "--against",
            "live",
            *connect_to(port),
            "--allow-private",
            "--json",
            str(out),
            "--run",
            str(drift_world.run),
            "--capture",
            str(capture),
        )
        seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    print(f"\n{done.stdout}\n(drift against live, 320 pages, CLI process: {seconds:.1f} s)")
    return LiveRun(json.loads(out.read_text(encoding="utf-8")), done.stdout, out, capture)


def test_live_drift_finds_exactly_the_changes(live: LiveRun) -> None:
    report, table = live.report, live.table
    pages = {p["url"]: p for p in report["pages"]}
    assert len(pages) == 320 and list(pages) == sorted(pages)
    found = verdicts(report["pages"])
    expected: dict[str, tuple[str, str | None]] = {url: ("unchanged", None) for url in found}
    expected.update({u: ("gone", None) for u in GONE})
    expected.update({u: ("changed", None) for u in CHANGED})
    expected[MOVED] = ("redirected", MOVED_TO)
    expected[BLOCKED] = ("unchecked", None)
    assert found == expected
    assert report["counts"] == {
        "gone": 2,
        "redirected": 1,
        "changed": 3,
        "unchecked": 1,
        "unchanged": 313,
    }
    assert "320 pages: 2 gone, 1 redirected, 3 changed, 1 unchecked, 313 unchanged" in table
    assert pages[ABSENT]["reason"] == pages[NOT_FOUND]["reason"] == "HTTP 404"
    assert pages[MOVED]["hops"] == [f"301 {MOVED}", f"200 {MOVED_TO}"]
    assert pages[BLOCKED]["reason"].startswith("robots:")
    # the whitespace-only page was re-extracted and found the same
    assert pages[WHITESPACE]["reason"] == "same text"
    assert {p["reason"] for u, p in pages.items() if u not in DRIFTED | {WHITESPACE, BLOCKED}} == {
        "same bytes"
    }


def test_live_drift_reports_the_changed_sentences_and_figures(live: LiveRun) -> None:
    pages = {p["url"]: p for p in live.report["pages"]}
    for url, old, before, after in (
        (NUM1, NUM1_OLD, ["45"], ["57"]),
        (NUM2, NUM2_OLD, ["3.7"], ["3.8"]),
    ):
        (change,) = pages[url]["changed"]
        assert change["old"] == old
        assert (change["numbers_old"], change["numbers_new"]) == (before, after)
        assert pages[url]["added"] == pages[url]["removed"] == []
        assert f"figures {before[0]} -> {after[0]}" in pages[url]["reason"]
    (change,) = pages[REWORD]["changed"]
    assert change["old"] == REWORD_OLD
    assert change["new"] == (
        "In Python 3.2, a new means of configuring logging was added, using "
        "dictionaries (<script>steal()</script>) to hold configuration "
        "information."
    )
    assert change["numbers_old"] == change["numbers_new"] == []
    assert 0.5 < change["ratio"] < 1


def test_trees_list_exactly_their_drifted_nodes(live: LiveRun, drift_world: DriftWorld) -> None:
    from drarena.drift.stale import load_snapshot_trees

    trees = {t.id: t for t in load_snapshot_trees(drift_world.snapshot)}
    report = live.report
    assert [t["tree"] for t in report["trees"]] == sorted(trees) and len(trees) == 3
    for impact in report["trees"]:
        tree = trees[impact["tree"]]
        expected = sorted(n.url for n in tree.nodes if n.url in DRIFTED)
        assert [n["url"] for n in impact["affected"]] == expected
        assert impact["unchecked"] == sum(n.url == BLOCKED for n in tree.nodes)
    assert any(t["affected"] for t in report["trees"])  # the check above is not vacuous


def test_exactly_the_items_on_moved_sentences_are_stale(live: LiveRun) -> None:
    tasks = live.report["tasks"]
    assert (tasks["matches"], tasks["tasks"], tasks["items"]) == (2, 2, 9)
    stale = {(s["match_id"], s["round"], s["checklist"], s["index"]): s for s in tasks["stale"]}
    assert set(stale) == STALE_KEYS
    assert stale[("m1", 0, "depth", 0)]["reason"] == "source sentence changed: 45 -> 57"
    assert stale[("m1", 0, "depth", 0)]["support"] == [NUM1_OLD]
    assert stale[("m2", 1, "depth", 0)]["reason"] == "source sentence changed: 3.7 -> 3.8"
    assert stale[("m1", 0, "width", 0)]["reason"].startswith("source sentence reworded")
    assert stale[("m2", 1, "width", 0)]["reason"] == f"source page redirects to {MOVED_TO}"
    assert stale[("m2", 1, "width", 2)]["reason"] == "source page gone (HTTP 404)"
    assert "stale checklist items: 6 of 9" in live.table


def test_html_outputs_escape_page_text(live: LiveRun, drift_world: DriftWorld) -> None:
    out = live.json_path
    page = out.with_name("drift.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;steal()&lt;/script&gt;" in page and "<script" not in page
    assert (drift_world.run / "drift.json").is_file()
    assert (drift_world.run / "drift.html").is_file()
    report = (drift_world.run / "report.html").read_text(encoding="utf-8")
    assert report.count("<section id=drift>") == 1 and "<script" not in report
    assert report.index("<section id=drift>") < report.index("</body>")
    assert "Stale checklist items (6 of 9)" in report


def test_offline_against_the_drifted_snapshot_gives_the_same_verdicts(
    live: LiveRun, drift_world: DriftWorld
) -> None:
    moment = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    report = run_drift(
        DriftRequest(drift_world.snapshot, against=str(drift_world.drifted), progress=False),
        clock=lambda: moment,
    )
    assert report.created == "2030-01-02T03:04:05+00:00"
    assert report.against_snapshot is not None
    assert report.against_snapshot.name == "pydocs-drifted"
    offline = {p.url: (p.verdict.value, p.target) for p in report.pages}
    online = verdicts(live.report["pages"])
    online[BLOCKED] = ("unchanged", None)  # no robots.txt applies to reading a snapshot
    assert offline == online
    by_url = {p.url: p for p in report.pages}
    assert by_url[ABSENT].reason.startswith("absent: not in snapshot pydocs-drifted")
    assert by_url[NOT_FOUND].reason == "HTTP 404"
    live_pages = {p["url"]: p for p in live.report["pages"]}
    for url in CHANGED:
        assert (
            json.loads(json.dumps([c.to_dict() for c in by_url[url].changed]))
            == live_pages[url]["changed"]
        )


def test_the_capture_replays_the_live_verdicts_offline(live: LiveRun) -> None:
    from drarena.web.warc.snapshot import Snapshot

    with Snapshot.open(live.capture) as capture:
        assert capture.verify().ok and capture.manifest.complete
    done = drift_cli(
        str(Path(live.report["snapshot"]["path"])),
        "--against",
        str(live.capture),
        "--json",
        str(live.capture.parent / "offline.json"),
    )
    assert done.returncode == 0, done.stderr
    offline = json.loads((live.capture.parent / "offline.json").read_text(encoding="utf-8"))

    def key(pages: list[dict[str, Any]]) -> list[tuple[str, str, str, Any]]:
        return [(p["url"], p["verdict"], p["reason"], p["changed"]) for p in pages]

    assert key(offline["pages"]) == key(live.report["pages"])  # robots refusal included


def test_ignore_robots_and_url_selection(drift_world: DriftWorld, tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    with replay(drift_world.drifted) as port:
        done = drift_cli(
            str(drift_world.snapshot),
            *connect_to(port),
            "--allow-private",
            "--ignore-robots",
            "--url",
            BLOCKED,
            "--url",
            NUM1,
            "--json",
            str(out),
        )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert verdicts(report["pages"]) == {BLOCKED: ("unchanged", None), NUM1: ("changed", None)}
    assert report["options"]["robots"] is False


def test_unreachable_origin_is_one_line(drift_world: DriftWorld) -> None:
    done = drift_cli(
        str(drift_world.snapshot), *connect_to(free_port()), "--allow-private", "--limit", "4"
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("drarena: error: every one of 4 pages failed (connection_error: ")


def test_private_addresses_need_the_flag(drift_world: DriftWorld) -> None:
    with replay(drift_world.drifted) as port:
        done = drift_cli(str(drift_world.snapshot), *connect_to(port), "--limit", "2")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "private_address" in line and line.endswith(
        "pass --allow-private to fetch non-public addresses"
    )


def test_bad_inputs_are_one_line(drift_world: DriftWorld, tmp_path: Path) -> None:
    cases = {
        "missing snapshot": ([str(tmp_path / "nope")], "not a snapshot folder"),
        "no run.json": (
            [
                str(drift_world.snapshot),
                "--against",
                str(drift_world.drifted),
                "--run",
                str(tmp_path),
            ],
            "no run.json (not a run folder)",
        ),
        "missing later snapshot": (
            [str(drift_world.snapshot), "--against", str(tmp_path / "later")],
            "no such snapshot folder",
        ),
        "bad --connect-to": (
            [str(drift_world.snapshot), "--connect-to", "127.0.0.1=x"],
            "expected HOST:PORT=HOST:PORT",
        ),
        "unknown --url": (
            [
                str(drift_world.snapshot),
                "--against",
                str(drift_world.drifted),
                "--url",
                "http://127.0.0.1:8765/nowhere.html",
            ],
            "not a page of",
        ),
    }
    other = tmp_path / "other-run"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"snapshot_fingerprint": "f" * 64, "config": {}}))
    cases["run of another snapshot"] = (
        [str(drift_world.snapshot), "--against", str(drift_world.drifted), "--run", str(other)],
        "the run was played on snapshot ffffffffffff",
    )
    for name, (args, message) in cases.items():
        done = drift_cli(*args)
        assert done.returncode == 2, name
        (line,) = done.stderr.strip().splitlines()
        assert message in line, (name, line)
