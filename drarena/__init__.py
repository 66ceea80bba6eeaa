"""drarena: DR-Arena on a frozen web.

`drarena.read_run(path)` reads a run folder back, every part typed (a `StoredRun`: header,
config, matches, rounds, leaderboard, analyses), the way Inspect AI's `read_eval_log` reads an
eval log. It is imported on first use, so `import drarena` stays cheap (the rooms read
`__version__` from here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drarena.report.run import StoredRun, read_run

__version__ = "0.1.0"

__all__ = ["StoredRun", "__version__", "read_run"]


def __getattr__(name: str) -> object:
    """The lazy exports: `read_run` and `StoredRun` (drarena.report.run)."""
    if name in ("read_run", "StoredRun"):
        from drarena.report import run

        return getattr(run, name)
    raise AttributeError(f"module 'drarena' has no attribute {name!r}")
