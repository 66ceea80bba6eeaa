"""Hostile folders received from elsewhere (issue 38, item 1): a snapshot or run folder may
come from someone else (tar keeps symlinks), so a link planted where drarena writes must never
be written through, and a link in place of a folder drarena writes into is refused.

Each test reproduces a recipe of the issue and failed before its fix: `<name>.tmp` was opened
with a fixed name and followed, so `docs.jsonl.tmp -> ~/victim` overwrote the victim.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest

from drarena.cli import main
from drarena.web.warc.manifest import Counts, load_manifest, write_manifest
from drarena.web.warc.writer import Exchange, SnapshotWriter

RUN = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"
PRECIOUS = "precious\n"


def small_snapshot(folder: Path, pages: int = 8) -> Path:
    """A snapshot of a few linked pages, written by drarena's own writer."""
    ticks = count()
    start = datetime(2026, 1, 2, tzinfo=UTC)
    writer = SnapshotWriter(
        folder,
        "small",
        {"seeds": ["http://example.org/p0.html"]},
        {"drarena": "test"},
        clock=lambda: start + timedelta(seconds=next(ticks)),
    )
    writer.open()
    for n in range(pages):
        words = f"Some words about topic {n} and more. " * 80
        links = (  # the first page is a hub (a tree's root); the others are leaves
            "".join(f"<li><a href='/p{m}.html'>page {m} topic</a></li>" for m in range(1, pages))
            if n == 0
            else ""
        )
        body = (
            f"<html><head><title>Page {n}</title></head><body><main><h1>Page {n}</h1>"
            f"<p>{words}</p><ul>{links}</ul>"
            "</main></body></html>"
        ).encode()
        writer.write_exchange(
            Exchange(
                f"http://example.org/p{n}.html",
                (("Host", "example.org"),),
                200,
                "OK",
                (("Content-Type", "text/html; charset=utf-8"),),
                body,
            )
        )
    writer.close(complete=True, counts=Counts(pages=pages, responses=pages))
    return folder


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = small_snapshot(tmp_path_factory.mktemp("snap") / "s")
    assert main(["snapshot", "extract", str(folder), "--no-progress"]) == 0
    return folder


def _victim(tmp_path: Path, name: str = "victim") -> Path:
    victim = tmp_path / name
    victim.write_text(PRECIOUS)
    return victim


def test_extract_never_writes_through_a_planted_tmp_link(extracted: Path, tmp_path: Path) -> None:
    snap = tmp_path / "s"
    shutil.copytree(extracted, snap, symlinks=True)
    victim = _victim(tmp_path)
    for name in ("docs.jsonl", "links.jsonl", "extract.json"):
        (snap / f"{name}.tmp").symlink_to(victim)
    assert main(["snapshot", "extract", str(snap), "--force", "--no-progress"]) == 0
    assert victim.read_text() == PRECIOUS
    assert (snap / "docs.jsonl").is_file() and not (snap / "docs.jsonl").is_symlink()
    assert not [p for p in snap.glob("*.tmp") if not p.is_symlink()]  # none of drarena's left


def test_extract_replaces_a_link_at_its_file_and_leaves_the_target(
    extracted: Path, tmp_path: Path
) -> None:
    snap = tmp_path / "s"
    shutil.copytree(extracted, snap, symlinks=True)
    victim = _victim(tmp_path)
    (snap / "docs.jsonl").unlink()
    (snap / "docs.jsonl").symlink_to(victim)
    assert main(["snapshot", "extract", str(snap), "--force", "--no-progress"]) == 0
    assert victim.read_text() == PRECIOUS
    assert not (snap / "docs.jsonl").is_symlink()


def test_trees_never_write_through_planted_links(extracted: Path, tmp_path: Path) -> None:
    snap = tmp_path / "s"
    shutil.copytree(extracted, snap, symlinks=True)
    victim = _victim(tmp_path)
    (snap / "trees").mkdir(exist_ok=True)
    (snap / "trees" / "index.json.tmp").symlink_to(victim)
    assert main(["snapshot", "trees", str(snap), "--count", "1", "--no-progress"]) == 0
    assert victim.read_text() == PRECIOUS
    assert (snap / "trees" / "index.json").is_file()


def test_a_trees_folder_that_is_a_link_is_refused_in_one_line(
    extracted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "s"
    shutil.copytree(extracted, snap, symlinks=True)
    shutil.rmtree(snap / "trees", ignore_errors=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.json").write_text(PRECIOUS)
    (snap / "trees").symlink_to(elsewhere)
    assert main(["snapshot", "trees", str(snap), "--count", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "trees: a link, not a folder drarena made" in err and "\n" not in err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.json"]


def test_write_manifest_never_writes_through_a_planted_tmp_link(tmp_path: Path) -> None:
    snap = small_snapshot(tmp_path / "s")
    victim = _victim(tmp_path)
    (snap / "manifest.json.tmp").symlink_to(victim)
    write_manifest(snap, load_manifest(snap))
    assert victim.read_text() == PRECIOUS
    load_manifest(snap)


# --- run folders ---------------------------------------------------------------------------


def test_run_rank_never_writes_through_a_planted_tmp_link(tmp_path: Path) -> None:
    run = tmp_path / "r"
    shutil.copytree(RUN, run)
    victim = _victim(tmp_path)
    (run / "leaderboard.md.tmp").symlink_to(victim)
    assert main(["run", "rank", str(run)]) == 0
    assert victim.read_text() == PRECIOUS
    assert not (run / "leaderboard.md").is_symlink()
    assert (run / "leaderboard.md").read_text().startswith("|") or (
        "agent" in (run / "leaderboard.md").read_text()
    )


def test_run_rank_replaces_a_link_at_the_leaderboard_and_leaves_the_target(
    tmp_path: Path,
) -> None:
    run = tmp_path / "r"
    shutil.copytree(RUN, run)
    victim = _victim(tmp_path)
    (run / "leaderboard.md").unlink()
    (run / "leaderboard.md").symlink_to(victim)
    assert main(["run", "rank", str(run)]) == 0
    assert victim.read_text() == PRECIOUS
    assert not (run / "leaderboard.md").is_symlink()


def test_timings_appended_to_a_link_are_refused(tmp_path: Path) -> None:
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir
    from drarena.ledger.records import AnswerTiming

    run = RunDir(tmp_path / "r")
    run.create()
    victim = _victim(tmp_path)
    run.timings_path.symlink_to(victim)
    timing = AnswerTiming("m", 1, "a", 1.0, 0.5)
    with pytest.raises(DrarenaError, match=r"timings\.jsonl: a link, not a file drarena wrote"):
        run.append_timings([timing])
    assert victim.read_text() == PRECIOUS


def test_a_run_whose_matches_folder_is_a_link_is_refused(tmp_path: Path) -> None:
    from drarena.errors import DrarenaError
    from drarena.ledger.folder import RunDir

    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "matches").symlink_to(elsewhere)
    with pytest.raises(DrarenaError, match=r"matches: a link, not a folder drarena made"):
        RunDir(tmp_path / "r").create()


def test_replay_out_with_a_linked_matches_folder_deletes_nothing(tmp_path: Path) -> None:
    """Regression: preparing `run replay --out OUT` (an earlier replay of the same run) emptied
    OUT/matches/ of its *.json files, following the link into the user's folder. Now refused
    in one line; the link's target is kept."""
    import json

    from drarena.errors import DrarenaError
    from drarena.files import write_atomic
    from drarena.ledger.folder import prepare_replay_target

    out = tmp_path / "out"
    out.mkdir()
    data = json.loads((RUN / "run.json").read_text())
    data["replay_of"] = str(RUN.resolve())
    write_atomic(out / "run.json", json.dumps(data))
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    (elsewhere / "mine.json").write_text(PRECIOUS)
    (out / "matches").symlink_to(elsewhere)
    with pytest.raises(DrarenaError, match=r"matches: a link, not a folder drarena made"):
        prepare_replay_target(RUN, out)
    assert (elsewhere / "mine.json").read_text() == PRECIOUS
    assert (out / "run.json").is_file()  # refused before anything was deleted


# --- a full disk (item 9) -----------------------------------------------------------------------


@pytest.mark.parametrize("copy", [True, False])
def test_import_onto_a_full_disk_is_one_line_and_keeps_nothing(
    tmp_path: Path,
    small_disk: Callable[[int], Path],
    copy: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Regression: `snapshot import ... --copy` onto a full disk ended in an `OSError: [Errno
    28]` traceback. Now one line; the build folder (all that was written) is removed."""
    warc = small_snapshot(tmp_path / "src", pages=40) / "small-00000.warc.gz"
    disk = small_disk(4)
    argv = ["snapshot", "import", "x", str(warc), "--out", str(disk / "x"), "--no-progress"]
    assert main([*argv, "--copy"] if copy else argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("drarena: error: ") and "\n" not in err, err
    assert "no room left to write" in err
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]


# --- manifest names (item 5) -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../mn-escaped", "/tmp/mn-abs", "a/b", "", ".hidden", "x\n"])
def test_a_manifest_name_that_is_not_a_plain_name_is_refused(tmp_path: Path, name: str) -> None:
    import json

    from drarena.errors import DrarenaError

    snap = small_snapshot(tmp_path / "s", pages=1)
    data = json.loads((snap / "manifest.json").read_text())
    data["name"] = name
    (snap / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(DrarenaError, match=r"manifest\.json: field name: unsafe snapshot name"):
        load_manifest(snap)


def test_serve_web_never_builds_its_state_folder_from_an_unchecked_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: the default --state-dir is .drarena-webproxy/<manifest name>, and a name
    `../../mn-escaped` put the proxy's CA key and logs outside it."""
    import json

    snap = small_snapshot(tmp_path / "s", pages=1)
    data = json.loads((snap / "manifest.json").read_text())
    data["name"] = "../../mn-escaped"
    (snap / "manifest.json").write_text(json.dumps(data))
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(shutil, "which", lambda *_a, **_k: "/bin/true")  # no mitmdump needed
    assert main(["snapshot", "serve-web", str(snap)]) == 2
    err = capsys.readouterr().err.strip()
    assert "unsafe snapshot name" in err and "\n" not in err
    assert not list(tmp_path.rglob("mn-escaped")) and not (work / ".drarena-webproxy").exists()


# --- WACZ with a repeated resource list (item 4) -----------------------------------------------


def test_a_wacz_listing_one_warc_many_times_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: a 0.6 MB WACZ whose datapackage.json lists its one WARC 1,000 times
    imported as a 587 MB snapshot (a copy per listing)."""
    from bomb_files import wacz_repeated

    wacz = wacz_repeated(tmp_path / "rep.wacz", 1000)
    assert wacz.stat().st_size < 1 << 20
    out = tmp_path / "out"
    assert main(["snapshot", "import", "rep", str(wacz), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "archive/a.warc is listed again (first at [0])" in err and "\n" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep.wacz"]


def test_a_wacz_listing_each_warc_once_still_imports(tmp_path: Path) -> None:
    from bomb_files import wacz_repeated

    wacz = wacz_repeated(tmp_path / "one.wacz", 1, size=20_000)
    out = tmp_path / "out"
    assert main(["snapshot", "import", "one", str(wacz), "--out", str(out), "--no-progress"]) == 0
    assert sum(p.stat().st_size for p in out.glob("*.warc*")) < 2 * wacz.stat().st_size


# --- the smaller items (item 11) ------------------------------------------------------------------


def test_extract_and_export_leave_out_what_import_skipped(tmp_path: Path) -> None:
    """Regression: import leaves javascript: and file: records out of the index (non-http),
    but extract read every response of the WARC files, so they reached docs.jsonl and the
    WACZ pages list."""
    import json

    from bomb_files import http_block, write_warc

    page = (
        b"<html><head><title>%s</title></head><body><p>" + b"words " * 200 + b"</p></body></html>"
    )
    warc = write_warc(
        tmp_path / "mixed.warc.gz",
        [
            ("http://ok.example/", http_block(page.replace(b"%s", b"ok"), "identity")),
            ("javascript:alert(1)", http_block(page.replace(b"%s", b"js"), "identity")),
            ("file:///etc/passwd", http_block(page.replace(b"%s", b"file"), "identity")),
        ],
    )
    snap = tmp_path / "snap"
    assert (
        main(["snapshot", "import", "mixed", str(warc), "--out", str(snap), "--no-progress"]) == 0
    )
    assert main(["snapshot", "extract", str(snap), "--no-progress"]) == 0
    urls = [json.loads(line)["url"] for line in (snap / "docs.jsonl").read_text().splitlines()]
    assert urls == ["http://ok.example/"]
    wacz = tmp_path / "mixed.wacz"
    assert main(["snapshot", "export", str(snap), "--wacz", str(wacz)]) == 0
    import zipfile

    with zipfile.ZipFile(wacz) as zf:
        pages = zf.read("pages/pages.jsonl").decode().splitlines()[1:]
    assert [json.loads(line)["url"] for line in pages] == ["http://ok.example/"]


@pytest.mark.parametrize("swap", ["dev-zero", "fifo", "huge"])
def test_a_cdxj_that_is_a_device_a_fifo_or_huge_is_one_line(tmp_path: Path, swap: str) -> None:
    """Regression: Snapshot.open read index.cdxj whole: a link to /dev/zero was read until a
    MemoryError at 7.6 GB (and a FIFO would wait for a writer for ever)."""
    import os

    from drarena.errors import DrarenaError
    from drarena.web.warc.snapshot import Snapshot

    snap = small_snapshot(tmp_path / "s", pages=1)
    cdxj = snap / "index.cdxj"
    cdxj.unlink()
    if swap == "dev-zero":
        cdxj.symlink_to("/dev/zero")
        expected = r"index\.cdxj: cannot read CDXJ index \(a device, not a regular file"
    elif swap == "fifo":
        os.mkfifo(cdxj)
        expected = r"index\.cdxj: line 1: not a CDXJ line|no captures|lines are not sorted"
    else:
        with cdxj.open("wb") as f:
            f.truncate(3 << 30)  # sparse: 3 GiB of zeros, no newline
        expected = r"index\.cdxj: larger than \d+ bytes \(its manifest says \d+"
    try:
        with Snapshot.open(snap) as opened:
            assert len(opened) == 0, "an empty index (a FIFO with no writer reads as empty)"
    except DrarenaError as exc:
        assert "\n" not in str(exc)
        assert re.search(expected, str(exc)), str(exc)
