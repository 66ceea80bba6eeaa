"""Child processes that do not outlive drarena, however drarena ends.

Why: drarena starts long-lived children in sessions of their own (mitmdump, a model server,
a command agent), so that a Ctrl-C in the terminal reaches drarena only and drarena stops
them in order. Nothing else stops them when drarena ends without running its cleanup: the
default action of SIGTERM (`kill`, a CI timeout, a bench's timer), SIGKILL, a crash. They
then ran on as orphans, holding ports, GPUs or CPU. Two guards live here, for every module
that starts such a child (this is the bottom of the import layering, so all of them can):

- `die_with_parent`: Linux's parent-death signal for the direct child.
- `group_guard`: a small watcher process that kills a child's whole process group once
  drarena is gone, for a child that starts children of its own (a wrapper script, `uv run`,
  drarena's network-namespace shim): the parent-death signal reaches the direct child only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# The watcher that group_guard starts: its stdin is a pipe that only drarena can write to,
# and never does, so the read returns (end of file) once drarena is gone, however it went.
# Then the group gets SIGKILL. Plain Python, nothing imported beyond os/signal/sys.
GROUP_GUARD = """\
import os, signal, sys
while os.read(0, 4096):
    pass
try:
    os.killpg(int(sys.argv[1]), signal.SIGKILL)
except OSError:
    pass
"""


@functools.cache
def load_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up here in the parent so that the child, between fork and exec,
    only calls it (no import, no dlopen: nothing that could wait on a lock another thread held
    at the fork, a JVM's or a model server's). None off Linux, or where libc has no prctl."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    ulong = ctypes.c_ulong
    prctl.argtypes = [ctypes.c_int, ulong, ulong, ulong, ulong]
    prctl.restype = ctypes.c_int
    found: Callable[..., int] = prctl
    return found


def die_with_parent(signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A Popen `preexec_fn` for Linux: the kernel sends the child `signum` when this process
    dies, however it dies, even while the child is still starting. If this process died
    before the prctl (no signal would come then), the child exits at once. None where prctl
    is unavailable (pass it as it is: preexec_fn=None is Popen's default).

    Limits, both the kernel's: the signal reaches the direct child only, not what it starts
    (see group_guard); and Linux ties it to the thread that started the child, so the thread
    must outlive the child's use (an event loop's thread awaiting the child does)."""
    prctl = load_prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def in_child() -> None:
        if prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0 and os.getppid() != parent:
            os._exit(1)

    return in_child


@contextlib.asynccontextmanager
async def group_guard(pgid: int) -> AsyncIterator[None]:
    """While the block runs, process group `pgid` (a child started with
    start_new_session=True: its pid) gets SIGKILL if this process ends, however it ends.

    How: a watcher process (GROUP_GUARD, in a session of its own, so a Ctrl-C does not reach
    it) holds the read end of a pipe whose write end only this process holds (os.pipe's
    descriptors are closed at exec, so no other child gets it); the kernel closes that end
    when this process dies, and the watcher then kills the group. It needs no prctl and has
    no start-up race: an end of file that came before the watcher read is still there.

    The block's end kills the watcher first, so a normal end never signals the group: the
    caller stops its child its own way. Limits: a process that left the group (setsid) is
    not reached, and a process forked from this one without exec (which would inherit the
    write end) delays the watcher until it too is gone."""
    read_end, write_end = os.pipe()
    try:
        watcher = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            "-c",
            GROUP_GUARD,
            str(pgid),
            stdin=read_end,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    try:
        yield
    finally:
        try:
            with contextlib.suppress(ProcessLookupError):
                watcher.kill()
            await watcher.wait()
        finally:
            os.close(write_end)  # after the kill: the watcher must not see it
