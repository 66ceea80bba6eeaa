"""drarena.procs: children that die with drarena, however drarena ends.

Why: mitmdump, model servers and command agents run in sessions of their own; a drarena
killed with SIGKILL (or SIGTERM's default action) left them running as orphans. Each guard
is tested here with a real parent process that is killed; the modules that use them
(webproxy.proxy, models.serve, agents.external) test their own children the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from drarena import procs

needs_prctl = pytest.mark.skipif(procs.load_prctl() is None, reason="no prctl here (Linux only)")
SLEEP = [sys.executable, "-c", "import time; time.sleep(300)"]


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie (dead, not yet reaped by its new parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def all_gone_soon(pids: Iterable[int], within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while not all(gone(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def run_parent(script: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    """Start `script` (which writes the pids it started to argv[1]) and wait for its pids."""
    pids = tmp_path / "pids"
    parent = subprocess.Popen([sys.executable, "-c", script, str(pids)])
    deadline = time.monotonic() + 60
    while not pids.exists() and parent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists(), f"the parent ended with {parent.poll()}"
    return parent, [int(pid) for pid in pids.read_text().split()]


# A child that ignores SIGTERM, started with die_with_parent(SIGKILL); it prints once the
# SIGTERM handler is in place, then the parent writes "child-pid" to argv[1].
DEATHSIG_PARENT = """
import os, signal, subprocess, sys, time
from drarena import procs
code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(1, flush=True); time.sleep(300)")
child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         start_new_session=True, preexec_fn=procs.die_with_parent(signal.SIGKILL))
child.stdout.readline()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(child.pid))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
"""
# A child in a session of its own (no parent-death signal) that starts a grandchild in its
# group and writes "child-pid grandchild-pid" to argv[1]; the parent guards the group.
WRAPPER = """
import os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {grandchild.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
"""
GUARD_PARENT = f"""
import asyncio, sys
from drarena import procs
async def main():
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", {WRAPPER!r}, sys.argv[1], start_new_session=True
    )
    async with procs.group_guard(child.pid):
        await asyncio.sleep(300)
asyncio.run(main())
"""


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("script", "count"), [(DEATHSIG_PARENT, 1), (GUARD_PARENT, 2)])
def test_children_die_with_a_killed_parent(tmp_path: Path, script: str, count: int) -> None:
    """die_with_parent(SIGKILL): the child goes even though it ignores SIGTERM (the signal
    asked for is the one sent); group_guard alone: the child and the grandchild in its
    group go, though neither has a parent-death signal."""
    if script is DEATHSIG_PARENT and procs.load_prctl() is None:
        pytest.skip("no prctl here (Linux only)")
    parent, pids = run_parent(script, tmp_path)
    try:
        assert len(pids) == count
        assert not any(gone(pid) for pid in pids)  # alive first: cannot pass vacuously
        parent.kill()
        parent.wait()
        assert all_gone_soon(pids), [pid for pid in pids if not gone(pid)]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        kill_all(pids)


@needs_prctl
def test_a_child_whose_parent_died_before_the_prctl_exits_at_once() -> None:
    """No signal comes for a parent that is already gone: the child checks, and exits 1
    before its program starts (here: a child forked from the process that asked, as if that
    process had died and this one were the new parent)."""
    script = """
import os, subprocess, sys
from drarena import procs
in_child = procs.die_with_parent()
program = [sys.executable, "-c", "raise SystemExit(7)"]
print(subprocess.Popen(program, preexec_fn=in_child).wait(), flush=True)
if os.fork() == 0:
    print(subprocess.Popen(program, preexec_fn=in_child).wait(), flush=True)
    os._exit(0)
os.wait()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "1"]


async def test_a_normal_end_of_the_guard_leaves_the_group_alone() -> None:
    """The block's end kills the watcher before closing the pipe: the caller stops its child
    its own way, and a group reaped by then could be another's."""
    child = await asyncio.create_subprocess_exec(*SLEEP, start_new_session=True)
    try:
        async with procs.group_guard(child.pid):
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)  # time for a watcher that saw end of file to act
        assert child.returncode is None and not gone(child.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        await child.wait()
