"""SIGKILL at seeded random moments, then what the user does next: run the command again.

A trial starts a command in its own process group, waits until it is at work (`ready`), sleeps
a delay drawn from random.Random(trial) (so each trial's kill point is fixed in intent, though
where the process is at that moment still depends on the machine's speed), SIGKILLs the whole
group (no handler, no cleanup: a crash or the OOM killer), and then re-runs the command. A
re-run either finishes (exit 0) or refuses in one line (exit 2, `drarena: error: ...`), never
a traceback; the test then checks what the finished result claims.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRIALS = 10


@dataclass(frozen=True)
class Outcome:
    """One run: exit status and stderr, and whether it was a one-line refusal."""

    returncode: int
    stderr: str

    @property
    def refused(self) -> bool:
        return self.returncode == 2

    def check(self) -> None:
        """A re-run finishes or refuses in one line; never a traceback."""
        assert "Traceback" not in self.stderr, self.stderr[-3000:]
        assert self.returncode in (0, 2), (self.returncode, self.stderr[-3000:])
        if self.refused:  # one error line (a "drarena: ..." notice, e.g. a deprecation, aside)
            lines = [line for line in self.stderr.splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("drarena: error: ")]
            assert len(errors) == 1 and all(line.startswith("drarena: ") for line in lines), (
                self.stderr
            )


def drarena(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "drarena", *map(str, args)]


def run(cmd: Sequence[str]) -> Outcome:
    """A re-run of `drarena ...` in this process (cli.main, as the console script calls it:
    saves an interpreter start per re-run); an exception other than the CLI's own one-line
    errors propagates and fails the test, as a traceback would show."""
    from drarena.cli import main

    assert list(cmd[:3]) == [sys.executable, "-m", "drarena"], cmd
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(cmd[3:]))
    return Outcome(code, err.getvalue())


def kill_at(
    cmd: Sequence[str],
    trial: int,
    span_s: float,
    ready: Callable[[], bool],
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> float:
    """Start `cmd`, wait until `ready()` (or the process ends), sleep Random(trial) *
    span_s, SIGKILL its process group; returns the delay used (after ready)."""
    delay = random.Random(trial).uniform(0, span_s)
    out = log.open("w") if log is not None else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=out, stderr=out, env=env, start_new_session=True
        )
        deadline = time.monotonic() + 120
        while proc.poll() is None and not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):  # children left in the group die too
            os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if log is not None:
            out.close()  # type: ignore[union-attr]
    return delay


def timed(
    cmd: Sequence[str], ready: Callable[[], bool], env: dict[str, str] | None = None
) -> tuple[Outcome, float]:
    """Run `cmd` to the end; (outcome, seconds from ready() to exit): the span kills draw
    from."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, text=True, env=env
        )
        while proc.poll() is None and not ready():
            time.sleep(0.01)
        start = time.monotonic()
        proc.wait(timeout=600)
        span = time.monotonic() - start
        err.seek(0)
        return Outcome(proc.returncode, err.read()), span
