"""drarena: DR-Arena on a frozen web.

The Python API, the commands' work without the command line (docs/api.md):

- `load_config(path or mapping)` -> `TournamentConfig`; `tournament_options(config)` ->
  the `RunOptions` `drarena tournament` plays with (change one with `dataclasses.replace`);
- `run_tournament(config, options=None, *, live=False)` plays (or resumes) it, writes the
  leaderboard and report.html, and returns the run read back, a `StoredRun`;
- `read_run(path)` reads a run folder back, every part typed (header, config, matches,
  rounds, leaderboard, analyses), the way Inspect AI's `read_eval_log` reads an eval log;
- `rank(path)` ranks a finished run again; `replay(path, out=None, *, snapshot=None)`
  re-executes it from its record and compares (a `Replayed`); `rejudge(path, JudgeSpec(...))`
  judges its rounds again; `examiner_check(snapshot, config, CheckOptions(...))`
  measures the Examiner (a `CheckResult`); each refuses what it cannot do with one
  `DrarenaError`, the line the command prints.

Every name is imported on first use (a module `__getattr__`), so `import drarena` stays cheap:
no pydantic, numpy or drarena room is loaded until a name is asked for (the rooms read
`__version__` from here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drarena.api.functions import (
        CheckOptions,
        CheckResult,
        Replayed,
        examiner_check,
        load_config,
        rank,
        rejudge,
        replay,
        run_tournament,
        tournament_options,
    )
    from drarena.config.tournament import TournamentConfig
    from drarena.errors import DrarenaError
    from drarena.report.run import StoredRun, read_run
    from drarena.runs.execute import RunOptions
    from drarena.runs.rejudge import JudgeSpec

__version__ = "0.1.0"

# each exported name -> the module it is imported from on first use
_EXPORTS = {
    "CheckOptions": "drarena.api.functions",
    "CheckResult": "drarena.api.functions",
    "DrarenaError": "drarena.errors",
    "JudgeSpec": "drarena.runs.rejudge",
    "Replayed": "drarena.api.functions",
    "RunOptions": "drarena.runs.execute",
    "StoredRun": "drarena.report.run",
    "TournamentConfig": "drarena.config.tournament",
    "examiner_check": "drarena.api.functions",
    "load_config": "drarena.api.functions",
    "rank": "drarena.api.functions",
    "read_run": "drarena.report.run",
    "rejudge": "drarena.api.functions",
    "replay": "drarena.api.functions",
    "run_tournament": "drarena.api.functions",
    "tournament_options": "drarena.api.functions",
}

__all__ = [
    "CheckOptions",
    "CheckResult",
    "DrarenaError",
    "JudgeSpec",
    "Replayed",
    "RunOptions",
    "StoredRun",
    "TournamentConfig",
    "__version__",
    "examiner_check",
    "load_config",
    "rank",
    "read_run",
    "rejudge",
    "replay",
    "run_tournament",
    "tournament_options",
]


def __getattr__(name: str) -> object:
    """The lazy exports (_EXPORTS): the module is imported when a name is first asked for,
    and the name kept here so the next lookup is an ordinary one."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'drarena' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The exports with the module's own names: what a notebook's completion offers."""
    return sorted(set(globals()) | set(__all__))
