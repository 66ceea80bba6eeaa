"""The Python API: what `import drarena` exports for scripts and notebooks.

Each function does what one command does (`drarena tournament`, `run rank`, `run replay`,
`run rejudge`, `examiner-check`), through the same library calls, and returns typed values
instead of printing: a finished run comes back as a `StoredRun` (drarena.report.run), read
from what was just written, so a script sees the figures report.html shows. Options are the
library's own objects (`RunOptions` for a tournament, `JudgeSpec` for a rejudge,
`CheckOptions` for the examiner-check, whose fields are the command's flags), so no function
takes a long parameter list. Progress lines go to stderr, as the commands' do; nothing goes
to stdout.

Why a room of its own, above the report room: a function here plays a run (the runs room)
and finishes it as the commands do (drarena.report.finish.finish_run): the runs room may
not import the report room above it, and the report room may not import the runs room, whose
commands import the report room (two packages importing each other).
What a command and its function share lives below, once, and both call it: the options and
the play (drarena.runs.execute.tournament_options, play), the default output folders
(replay_folder, rejudge_folder), ranking (drarena.report.finish.rank_run) and the
examiner-check's plan and run (drarena.runs.checkcommands); a command module cannot be
imported by a room, and this room by none.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drarena.config.tournament import TournamentConfig, config_of, parse_config
from drarena.ledger.folder import RunDir
from drarena.ledger.records import MatchRecord
from drarena.report.finish import Finished, finish_run, rank_run
from drarena.report.run import StoredRun

# the examiner-check's options are the command's (the module's imports are the standard
# library's); the rest of the runs room (the engine, the model client, the agents) is imported
# by the functions that play, replay or rejudge: `drarena.load_config` or `drarena.rank` alone
# do not load it
from drarena.runs.checkcommands import CheckOptions

if TYPE_CHECKING:
    from drarena.runs.execute import RunOptions
    from drarena.runs.rejudge import JudgeSpec, RejudgeResult

__all__ = [
    "CheckOptions",
    "CheckResult",
    "Replayed",
    "examiner_check",
    "load_config",
    "rank",
    "rejudge",
    "replay",
    "run_tournament",
    "tournament_options",
]


def load_config(source: Path | str | Mapping[str, Any]) -> TournamentConfig:
    """A tournament config from a YAML file (as `drarena tournament CONFIG` reads it) or from
    a mapping of the same fields (a notebook builds one in code); every problem is one
    DrarenaError naming the file, or `config`, and the field."""
    if isinstance(source, Mapping):
        return parse_config(dict(source), "config")
    from drarena.config.tournament import load_config as load_yaml

    return load_yaml(Path(source))


def tournament_options(config: TournamentConfig) -> RunOptions:
    """What `drarena tournament` plays `config` with: the models served locally for roles
    with model `served`, the run's model cache read and written, and the config's
    examiner-check (`examiner_check.tasks`) before the first match. Change a field with
    `dataclasses.replace`, e.g. `model="qwen1.5b-cpu"` to serve that model."""
    from drarena.runs.execute import tournament_options as options_of

    return options_of(config)


def run_tournament(
    config: TournamentConfig, options: RunOptions | None = None, *, live: bool = False
) -> StoredRun:
    """Play (or resume) the Swiss tournament of `config` into <runs_root>/<name>, write its
    leaderboard files and report.html, and return the run read back. `options`: default
    `tournament_options(config)`, the command's. `live` (or `offline: false` in the config):
    agents search the live web through `live.provider` and every read is captured, as
    `drarena tournament --live` does."""
    from drarena.runs.execute import play

    result = play(config, options or tournament_options(config), live=live)
    return _finished(result.run, result.config, result.log)


def rank(path: Path | str) -> StoredRun:
    """Rank a finished run again from its matches.jsonl (`drarena run rank`): the leaderboard
    files and report.html are rewritten from the log, and the run is returned as ranked now.
    Every input is read before anything is written; an empty log is refused (an empty table
    would overwrite the real one)."""
    run, log, done = rank_run(Path(path), show=())
    return _stored(run, log, done)


@dataclasses.dataclass(frozen=True, slots=True)
class Replayed:
    """A replay (`replay`): the replayed run read back (`run`, its own folder), the compared
    files whose bytes differ from the original's (`differ`: matches.jsonl and
    leaderboard.{md,csv,json}; empty when identical) and the model calls it made (0: every
    answer came from the cache)."""

    run: StoredRun
    differ: tuple[str, ...]
    model_calls: int

    @property
    def identical(self) -> bool:
        return not self.differ


def replay(
    path: Path | str, out: Path | str | None = None, *, snapshot: Path | str | None = None
) -> Replayed:
    """Re-execute the run at `path` into `out` (default <run>-replay, beside it) from its
    model cache and tool record alone, and compare (`drarena run replay`). `snapshot`: where
    the run's snapshot is on this machine, when not at the path its config names. A replay
    that would need a model call, or of an unfinished run, is one DrarenaError."""
    from drarena.runs.execute import replay as replay_run
    from drarena.runs.execute import replay_folder

    source = Path(path)
    target = RunDir(replay_folder(source, None if out is None else Path(out)))
    result, differ = replay_run(
        RunDir(source), target, snapshot=None if snapshot is None else Path(snapshot)
    )
    return Replayed(_finished(target, result.config, result.log), tuple(differ), result.model_calls)


def rejudge(
    path: Path | str,
    judge: JudgeSpec,
    out: Path | str | None = None,
    *,
    write: bool = False,
    serve: bool = True,
    backend: Any = None,
) -> RejudgeResult:
    """Judge the finished run's stored rounds again with another judge (`drarena run
    rejudge`) into `out` (default <run>-rejudge): agreement and Cohen's kappa with the run's
    own verdicts in `.report`. `judge`: which one (`JudgeSpec(judge={"kind": "evidence"})`
    calls no model). `write`: `out` also becomes a run folder ranked by the new judgments,
    its leaderboard and report.html written. `backend`: the model backend, for tests."""
    from drarena.runs.rejudge import RejudgeOptions, rejudge_folder
    from drarena.runs.rejudge import rejudge as rejudge_run

    source = Path(path)
    folder = rejudge_folder(source, None if out is None else Path(out))
    options = RejudgeOptions(write=write, serve=serve, backend=backend)
    result = rejudge_run(source, folder, judge, options)
    if result.leaderboard_md is not None:
        finish_run(RunDir(folder), result.config, result.log, show=())
    return result


@dataclasses.dataclass(frozen=True, slots=True)
class CheckResult:
    """An examiner-check: the report as its file (`path`, examiner-check.json) holds it, the
    model calls made, and for a replay whether the report came out identical to the file
    (None otherwise)."""

    report: dict[str, Any]
    model_calls: int
    path: Path
    identical: bool | None = None

    @property
    def verdicts(self) -> dict[str, str]:
        """Each judge kind's one-line verdict: can it rank?"""
        return {kind: str(r["verdict"]) for kind, r in self.report["results"].items()}

    @property
    def table(self) -> str:
        """The figures as the command prints them: value [95% interval] (n) per judge."""
        from drarena.validity.check import table

        return table(self.report)


def examiner_check(
    snapshot: Path | str,
    config: TournamentConfig | None = None,
    options: CheckOptions | None = None,
) -> CheckResult:
    """Measure the Examiner on answer pairs of known preference made from `snapshot`'s
    Information Trees (`drarena examiner-check`): can it rank? `config`: take the models,
    match settings and seed from it (its snapshot replaced by `snapshot`); without one the
    Examiner is the locally served model, greedy."""
    from drarena.runs.checkcommands import plan_check, report_text, run_planned

    plan = plan_check(Path(snapshot), config, options or CheckOptions())
    report, calls, identical = run_planned(plan)
    # the report as its file holds it (keys sorted), the bytes run_planned compared
    return CheckResult(json.loads(report_text(report)), calls, plan.path, identical)


def _finished(run: RunDir, config: TournamentConfig, log: Sequence[MatchRecord]) -> StoredRun:
    """The commands' last step with nothing shown (report.html and the leaderboard files
    written from one computation of the figures), and the run as `read_run` gives it."""
    return _stored(run, log, finish_run(run, config, log, show=()))


def _stored(run: RunDir, log: Sequence[MatchRecord], done: Finished) -> StoredRun:
    """The run as `read_run` gives it, built from finish_run's computation of the figures
    (`done`) instead of a second one."""
    header = run.require_header()
    stored = config_of(header, f"{run.header_path}: config")
    return StoredRun(run.path, header, stored, tuple(log), done.analyses)
