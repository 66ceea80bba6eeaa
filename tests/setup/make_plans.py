"""`make -n`: the commands a make target would run, without running them (shared by the setup
and main-job tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# never inherited from the shell: a `make test PYTHON=...` or a user's MODEL would change the plan
MAKE_VARIABLES = ("PYTHON", "VENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")


def make_dry_run(*argv: str, drop: tuple[str, ...] = ()) -> str:
    """stdout of `make -n ARGV` in the repository, without MAKE_VARIABLES and `drop` in its
    environment."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES + drop}
    result = subprocess.run(
        ["make", "-n", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout
