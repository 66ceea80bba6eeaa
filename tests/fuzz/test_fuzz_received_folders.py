"""Fuzzing folders received from elsewhere (issue 38): a snapshot or run folder someone else
made (a tarball keeps symlinks, FIFOs and devices) holds, in place of drarena's own files and
subfolders, a link to a file or folder of the user's, a dangling link, a FIFO no one writes,
a link to /dev/zero or /dev/null, a huge sparse file, an empty file or a folder; planted
links also sit where drarena writes temporary files (`docs.jsonl.tmp`, `leaderboard.md.tmp`).

Commands run on such a folder: `snapshot extract --force`, `snapshot trees`, `snapshot
verify`, `snapshot export --wacz` on a snapshot; `run rank`, preparing a replay's --out,
resuming a run's folder (RunDir.create, appending timings) on a run folder.

Defects this found, kept as @example: a folder named like a file a replay writes was an
IsADirectoryError traceback (now refused before anything is deleted), and `snapshot export`
read index.cdxj a second time, waiting for ever on a FIFO there (now read bounded).

Properties: each ends (a watchdog fails a hang) either with success or with a DrarenaError
shown as one line (`drarena: error: ...`), never another exception; nothing outside the
folder is written, truncated or deleted (the user's files keep their bytes, their folders
their entries); no temporary file of drarena's is left behind.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_inputs import tiny_snapshot
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.cli import main
from drarena.errors import DrarenaError
from drarena.files import temp_target
from drarena.ledger.folder import RunDir, prepare_replay_target
from drarena.ledger.records import AnswerTiming

RUN_FIXTURE = Path(__file__).resolve().parents[1] / "arena" / "fixtures" / "recorded-run"
HUGE = 80 << 20  # past every 64 MiB cap on a whole file or line (sparse: no disk used)
WATCHDOG_S = 120

SNAPSHOT_FILES = [
    "manifest.json",
    "index.cdxj",
    "tiny-00000.warc.gz",
    "docs.jsonl",
    "links.jsonl",
    "extract-manifest.json",
    "trees",
    "trees/index.json",
    "trees/tree-000.json",
    "docs.jsonl.tmp",
    "links.jsonl.tmp",
    "trees/index.json.tmp",
    "manifest.json.tmp",
]
RUN_FILES = [
    "run.json",
    "matches.jsonl",
    "timings.jsonl",
    "leaderboard.md",
    "leaderboard.csv",
    "leaderboard.json",
    "report.html",
    "llm-cache.sqlite",
    "matches",
    "leaderboard.md.tmp",
    "run.json.tmp",
    "report.html.tmp",
]
KINDS = ["link-file", "link-folder", "dangling", "fifo", "dev-zero", "dev-null", "huge", "empty"]
KINDS += ["folder"]


class Hung(Exception):
    """A command did not end within WATCHDOG_S."""


@contextlib.contextmanager
def watchdog() -> Iterator[None]:
    def ring(*_: Any) -> None:
        raise Hung(f"no end within {WATCHDOG_S} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(WATCHDOG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        snap = tiny_snapshot(root / "seed-snap")
        with _quiet():
            code = main(["snapshot", "trees", str(snap), "--count", "1", "--no-progress"])
        if code != 0:  # the tiny snapshot roots no tree: extract only
            with _quiet():
                assert main(["snapshot", "extract", str(snap), "--no-progress"]) == 0
        shutil.copytree(RUN_FIXTURE, root / "seed-run")
        yield root


@contextlib.contextmanager
def _quiet() -> Iterator[io.StringIO]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        yield err


def _victims(root: Path) -> Path:
    """The user's own files and folder, outside every folder drarena is given."""
    victims = root / "victims"
    shutil.rmtree(victims, ignore_errors=True)
    (victims / "folder").mkdir(parents=True)
    (victims / "precious.txt").write_text("precious\n")
    (victims / "folder" / "mine.json").write_text('{"mine": true}\n')
    return victims


def _state(folder: Path) -> dict[str, bytes | None]:
    """Every entry under `folder` (links not followed) and its bytes (None: not a file)."""
    state: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        state[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return state


def _plant(target: Path, kind: str, victims: Path) -> None:
    """Put `kind` where `target` is (removing what drarena had there); nothing when an
    earlier plant replaced its folder (`trees` then `trees/index.json`)."""
    if target.parent.is_symlink() or (target.parent.exists() and not target.parent.is_dir()):
        return
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link-file":
        target.symlink_to(victims / "precious.txt")
    elif kind == "link-folder":
        target.symlink_to(victims / "folder")
    elif kind == "dangling":
        target.symlink_to(victims / "not-there" / "x")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "dev-null":
        target.symlink_to("/dev/null")
    elif kind == "huge":
        with target.open("wb") as f:
            f.truncate(HUGE)
    elif kind == "empty":
        target.write_bytes(b"")
    else:
        target.mkdir()


def _run(call: Callable[[], int], name: str) -> None:
    """Success, or one line of error; never another exception, never a hang."""
    with watchdog(), _quiet() as err:
        code = call()
    lines = err.getvalue().strip().splitlines()
    assert code in (0, 1, 2), (name, code, lines[-3:])
    text = "\n".join(lines)
    assert "Traceback" not in text, (name, text[-2000:])
    if code == 2:
        assert lines and lines[-1].startswith("drarena: error: "), (name, lines[-3:])


def _no_temporaries(folder: Path, planted: set[str]) -> None:
    for path in folder.rglob("*"):
        rel = str(path.relative_to(folder))
        if rel not in planted and temp_target(path.name) is not None:
            raise AssertionError(f"a temporary file was left: {rel}")


SNAPSHOT_OPS = ["extract", "trees", "verify", "export"]
RUN_OPS = ["rank", "replay-target", "resume"]


def _snapshot_op(op: str, snap: Path, out: Path) -> Callable[[], int]:
    argv = {
        "extract": ["snapshot", "extract", str(snap), "--force", "--no-progress", "--workers", "1"],
        "trees": ["snapshot", "trees", str(snap), "--count", "1", "--no-progress"],
        "verify": ["snapshot", "verify", str(snap)],
        "export": ["snapshot", "export", str(snap), "--wacz", str(out / "x.wacz")],
    }[op]
    return lambda: main(argv)


def _run_op(op: str, run: Path) -> Callable[[], int]:
    if op == "rank":
        return lambda: main(["run", "rank", str(run)])

    def library() -> int:  # the library calls a replay and a resume make, as the CLI would
        try:
            if op == "replay-target":
                prepare_replay_target(RUN_FIXTURE, run)
            else:
                folder = RunDir(run)
                folder.create()
                folder.append_timings([AnswerTiming("m", 0, "a", 1.0, 0.5)])
        except DrarenaError as exc:
            print(f"drarena: error: {exc}", file=__import__("sys").stderr)
            return 2
        return 0

    return library


@given(
    which=st.lists(st.sampled_from(SNAPSHOT_FILES), min_size=1, max_size=3, unique=True),
    kinds=st.lists(st.sampled_from(KINDS), min_size=3, max_size=3),
    op=st.sampled_from(SNAPSHOT_OPS),
)
@example(which=["docs.jsonl.tmp"], kinds=["link-file"] * 3, op="extract")
@example(which=["trees/index.json.tmp"], kinds=["link-file"] * 3, op="trees")
@example(which=["trees"], kinds=["link-folder"] * 3, op="trees")
@example(which=["index.cdxj"], kinds=["dev-zero"] * 3, op="verify")
@example(which=["index.cdxj"], kinds=["fifo"] * 3, op="extract")
@example(which=["docs.jsonl"], kinds=["huge"] * 3, op="trees")
@example(which=["manifest.json"], kinds=["fifo"] * 3, op="export")
@example(which=["index.cdxj"], kinds=["fifo"] * 3, op="export")  # hung: export read it again
def test_a_received_snapshot_folder(
    work: Path, which: list[str], kinds: list[str], op: str
) -> None:
    case = work / "case"
    shutil.rmtree(case, ignore_errors=True)
    snap, out = case / "snap", case / "out"
    shutil.copytree(work / "seed-snap", snap, symlinks=True)
    out.mkdir()
    victims = _victims(work)
    for name, kind in zip(which, kinds, strict=False):
        _plant(snap / name, kind, victims)
    before = _state(victims)
    _run(_snapshot_op(op, snap, out), f"{op} with {list(zip(which, kinds, strict=False))}")
    assert _state(victims) == before, "something outside the snapshot was changed"
    _no_temporaries(snap, set(which))
    _no_temporaries(out, set())


@given(
    which=st.lists(st.sampled_from(RUN_FILES), min_size=1, max_size=3, unique=True),
    kinds=st.lists(st.sampled_from(KINDS), min_size=3, max_size=3),
    op=st.sampled_from(RUN_OPS),
)
@example(which=["leaderboard.md.tmp"], kinds=["link-file"] * 3, op="rank")
@example(which=["leaderboard.md"], kinds=["link-file"] * 3, op="rank")
@example(which=["matches"], kinds=["link-folder"] * 3, op="replay-target")
@example(which=["matches"], kinds=["link-folder"] * 3, op="resume")
@example(which=["timings.jsonl"], kinds=["fifo"] * 3, op="resume")
@example(which=["run.json"], kinds=["dev-zero"] * 3, op="rank")
@example(which=["matches.jsonl"], kinds=["huge"] * 3, op="rank")
@example(which=["leaderboard.md"], kinds=["folder"] * 3, op="replay-target")  # IsADirectoryError
def test_a_received_run_folder(work: Path, which: list[str], kinds: list[str], op: str) -> None:
    case = work / "case"
    shutil.rmtree(case, ignore_errors=True)
    run = case / "run"
    shutil.copytree(work / "seed-run", run, symlinks=True)
    if op == "replay-target":  # an earlier replay of the fixture run, as a replay finds it
        import json

        header = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**header, "replay_of": str(RUN_FIXTURE)}))
    victims = _victims(work)
    for name, kind in zip(which, kinds, strict=False):
        _plant(run / name, kind, victims)
    before = _state(victims)
    _run(_run_op(op, run), f"{op} with {list(zip(which, kinds, strict=False))}")
    assert _state(victims) == before, "something outside the run folder was changed"
    _no_temporaries(run, set(which))
