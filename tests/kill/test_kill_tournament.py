"""SIGKILL during a tournament (scripted model backend: control flow only), 10 trials at
seeded random moments; after each, the same command again.

Checked: the re-run resumes (or refuses in one line); the resumed run's matches.jsonl is
byte-identical to an uninterrupted run's; `drarena replay` re-executes the resumed run from
its model cache alone and finds matches.jsonl and the leaderboard identical (checked in two
of the ten trials: a replay costs as much as the run).
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kill_trials import REPO, TRIALS, Outcome, drarena, kill_at, run, timed

sys.path.insert(0, str(REPO / "tests" / "arena"))
import tournament_driver
from arena_live_site import LiveSiteForTests, freeze

pytestmark = pytest.mark.slow
DRIVER = [sys.executable, str(Path(tournament_driver.__file__))]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    site = LiveSiteForTests().start()
    try:
        yield freeze(site, tmp_path_factory.mktemp("kill") / "frozen", tree_ids=("t1", "t2"))
    finally:
        site.stop()


def _resume(snapshot: Path, runs: Path) -> Outcome:
    """The driver again, in this process (a traceback would propagate and fail the test)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = tournament_driver.main([str(snapshot), str(runs)])
    return Outcome(code, err.getvalue())


def test_sigkill_during_a_tournament(snapshot: Path, tmp_path: Path) -> None:
    def started(runs: Path) -> bool:
        return (runs / "killed" / "run.json").is_file()

    ref = tmp_path / "ref"
    done, span = timed([*DRIVER, str(snapshot), str(ref)], lambda: started(ref))
    done.check()
    assert done.returncode == 0, done.stderr
    reference = (ref / "killed" / "matches.jsonl").read_bytes()
    assert reference.count(b"\n") >= 4
    outcomes = []
    for trial in range(TRIALS):
        runs = tmp_path / f"trial{trial}"
        delay = kill_at(
            [*DRIVER, str(snapshot), str(runs)], trial, span * 0.95, lambda runs=runs: started(runs)
        )
        run_dir = runs / "killed"
        finished = len(list((run_dir / "matches").glob("*.json"))) if run_dir.exists() else 0
        again = _resume(snapshot, runs)
        again.check()
        assert again.returncode == 0, again.stderr
        assert (run_dir / "matches.jsonl").read_bytes() == reference
        replayed = ""
        if trial % 5 == 4:  # a replay takes as long as the run: two of the ten trials
            replay = run(drarena("replay", run_dir, "--out", tmp_path / f"replay{trial}"))
            assert replay.returncode == 0, replay.stderr
            replayed = "; replay from its cache identical"
        outcomes.append(
            f"tournament trial {trial}: killed {delay:.2f} s after run.json "
            f"({finished} match file(s) on disk); re-run resumed; matches.jsonl "
            f"identical to the uninterrupted run{replayed}"
        )
    print("\n" + "\n".join(outcomes))
