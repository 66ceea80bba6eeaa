"""Ray's tests run their Ray part in a Python process of their own.

Why: `ray.init` in the pytest process leaves Ray's threads (gRPC, the core worker) in it for
the rest of the session, beside the JVM that the search tests start in that same process;
`make test` runs every test in one process. A child process is also how a user drives Ray:
one driver, started and ended by its command. The child imports this checkout's drarena.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray not installed (make setup-scale)"
)


def run_python(code: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`code` (dedented) run by this Python with `args` as sys.argv[1:] (its output kept).
    A non-zero exit fails the test with the tail of its stderr."""
    path = os.pathsep.join(p for p in [str(REPO), os.environ.get("PYTHONPATH", "")] if p)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env={**os.environ, "PYTHONPATH": path},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"exit {done.returncode}; stderr:\n{done.stderr[-3000:]}")
    return done
