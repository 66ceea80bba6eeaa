"""The Python API: what `import drarena` exports for scripts and notebooks.

Each function does what one command does (`drarena tournament`, `run rank`, `run replay`,
`run rejudge`, `examiner-check`), through the same library calls, and returns typed values
instead of printing: a finished run comes back as a `StoredRun` (drarena.report.run), read
from what was just written, so a script sees the figures report.html shows. Options are the
library's own objects (`RunOptions` for a tournament, `JudgeSpec` for a rejudge) or, where a
command had only flags, one dataclass here (`CheckOptions`), so no function takes a long
parameter list. Progress lines go to stderr, as the commands' do; nothing goes to stdout.

Why a room of its own, above the report room: a function here plays a run (the runs room)
and finishes it as the commands do (drarena.report.finish.finish_run): the runs room may
not import the report room above it, and the report room may not import the runs room, whose
commands import the report room (two packages importing each other).
The command-line shell (drarena/*/commands.py) cannot be imported by a room, so the few lines
of it repeated here (the default folders, the examiner-check's defaults) are kept the same.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drarena.config.tournament import TournamentConfig, config_of, parse_config
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.header import RunHeader
from drarena.ledger.leaderboard import check_agents
from drarena.ledger.records import MatchRecord
from drarena.report.finish import finish_run
from drarena.report.run import StoredRun

# the runs room (the engine, the model client, the agents) is imported by the functions that
# play, replay or rejudge: `drarena.load_config` or `drarena.rank` alone do not load it
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
    from drarena.models.config import CacheMode
    from drarena.runs.execute import RunOptions

    return RunOptions(
        serve=True,
        cache_mode=CacheMode.READ_WRITE,
        examiner_check_pairs=max(config.examiner_check.tasks, 0),
    )


def run_tournament(
    config: TournamentConfig, options: RunOptions | None = None, *, live: bool = False
) -> StoredRun:
    """Play (or resume) the Swiss tournament of `config` into <runs_root>/<name>, write its
    leaderboard files and report.html, and return the run read back. `options`: default
    `tournament_options(config)`, the command's. `live` (or `offline: false` in the config):
    agents search the live web through `live.provider` and every read is captured, as
    `drarena tournament --live` does."""
    from drarena.runs.execute import execute

    if live or not config.offline:
        config = config.as_live()
    run = RunDir(config.runs_root / config.name)
    result = execute(config, run, options or tournament_options(config))
    return _finished(run, result.config or config, result.log)


def rank(path: Path | str) -> StoredRun:
    """Rank a finished run again from its matches.jsonl (`drarena run rank`): the leaderboard
    files and report.html are rewritten from the log, and the run is returned as ranked now.
    Every input is read before anything is written; an empty log is refused (an empty table
    would overwrite the real one)."""
    run = RunDir(Path(path))
    header = _header(run)
    config = config_of(header, f"{run.header_path}: config")
    log = run.read_log()
    if not log:
        raise DrarenaError(
            f"{run.log_path}: no matches in the log; nothing ranked, the leaderboard and "
            "report are left as they are"
        )
    check_agents(config.agent_names(), log, f"{run.log_path} (config: {run.header_path})")
    return _finished(run, config, log)


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

    source = Path(path)
    target = RunDir(Path(out) if out is not None else beside(source, "-replay"))
    result, differ = replay_run(
        RunDir(source), target, snapshot=None if snapshot is None else Path(snapshot)
    )
    config = result.config or config_of(_header(target), f"{target.header_path}: config")
    return Replayed(_finished(target, config, result.log), tuple(differ), result.model_calls)


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
    from drarena.runs.rejudge import RejudgeOptions
    from drarena.runs.rejudge import rejudge as rejudge_run

    source = Path(path)
    folder = Path(out) if out is not None else beside(source, "-rejudge")
    options = RejudgeOptions(write=write, serve=serve, backend=backend)
    result = rejudge_run(source, folder, judge, options)
    if result.leaderboard_md is not None:
        finish_run(RunDir(folder), result.config, result.log, show=())
    return result


@dataclasses.dataclass(frozen=True, slots=True)
class CheckOptions:
    """How `examiner_check` runs; each field is a flag of `drarena examiner-check`.

    `pairs`: tasks (each gives one answer pair per kind); `seed`: default the config's, 0
    without one; `judges`: judge kinds to compare on the same pairs (default: the config's
    judge); `paraphrase` False skips the paraphrased pair (one task-model call a task);
    `out`: the folder (default runs/examiner-check-<snapshot name>); `replay`: answer every
    call from `out`'s cache and check the report comes out identical; `serve` and `model`:
    as for a tournament; `labels`: a run folder whose rounds people labelled
    (`drarena run audit`), judged too as known-answer pairs; `index_root`: the indexes'
    folder when no config is given; `backend`: the model backend, for tests."""

    pairs: int = 3
    seed: int | None = None
    judges: tuple[str, ...] = ()
    paraphrase: bool = True
    out: Path | None = None
    replay: bool = False
    serve: bool = True
    model: str | None = None
    labels: Path | None = None
    index_root: Path = Path("index")
    backend: Any = None


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
    from drarena.runs.checkcommands import REPORT_FILE, default_config, run_check
    from drarena.validity.check import CheckSettings, check_judges

    o = options or CheckOptions()
    if o.pairs < 1:
        raise DrarenaError("pairs: at least 1")
    where = Path(snapshot)
    if config is not None:
        config = config.model_copy(update={"snapshot": where})
    else:
        config = default_config(where, Path(o.index_root), o.seed or 0)
    judges = tuple(o.judges) or (config.match.judge_spec().kind,)
    check_judges(judges)
    settings = CheckSettings(
        pairs=o.pairs,
        seed=config.seed if o.seed is None else o.seed,
        judges=judges,
        paraphrase=o.paraphrase,
    )
    out = Path(o.out) if o.out is not None else Path("runs") / f"examiner-check-{where.name}"
    human: Sequence[Any] = ()
    if o.labels is not None:
        from drarena.runs.humanpairs import human_pairs

        human = human_pairs(Path(o.labels))  # a bad labels file fails before any model starts
    report, calls = run_check(
        config,
        out,
        settings,
        replay=o.replay,
        serve=o.serve,
        model=o.model,
        backend=o.backend,
        human=human,
    )
    path = out / REPORT_FILE
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"  # the file's bytes
    identical = path.read_text(encoding="utf-8") == text if o.replay else None
    return CheckResult(json.loads(text), calls, path, identical)


def beside(run: Path, suffix: str) -> Path:
    """The default output folder <run><suffix>, next to the run folder (as the commands name
    it): built from the absolute path, since `.` or `runs/demo/..` name their folder only
    there."""
    folder = Path(os.path.normpath(run.absolute()))
    return folder.with_name(folder.name + suffix)


def _header(run: RunDir) -> RunHeader:
    header = run.header()
    if header is None:
        raise DrarenaError(f"{run.path}: no run.json (not a run folder)")
    return header


def _finished(run: RunDir, config: TournamentConfig, log: Sequence[MatchRecord]) -> StoredRun:
    """The commands' last step with nothing shown (report.html and the leaderboard files
    written from one computation of the figures), and the run as `read_run` gives it, built
    from that same computation instead of a second one."""
    done = finish_run(run, config, log, show=())
    header = _header(run)
    stored = config_of(header, f"{run.header_path}: config")
    return StoredRun(run.path, header, stored, tuple(log), done.analyses)
