"""Running a tournament, a replay or a placement from a config: the one shared path."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drarena.config.tournament import TournamentConfig, legacy_match, parse_config
from drarena.errors import DrarenaError
from drarena.ledger.folder import (
    REPLAY_MARK,
    RunDir,
    beside,
    check_new_run_folder,
    prepare_replay_target,
    run_lock,
)
from drarena.ledger.header import RunHeader, ToolRecordRef
from drarena.ledger.leaderboard import (
    build_leaderboard,
    check_agents,
    to_markdown,
    write_leaderboard,
)
from drarena.ledger.records import MatchRecord
from drarena.models.cache import TOOL_SCHEMA_VERSION
from drarena.models.config import CacheMode
from drarena.runs.context import OpenOptions, RunContext, check_config, open_run
from drarena.runs.prepare import prepare as prepare_stage  # (`prepare`: execute's switch for it)
from drarena.runs.session import config_digest
from drarena.runs.webmode import WebMode, web_mode


@dataclasses.dataclass
class RunResult:
    run: RunDir
    log: list[MatchRecord]
    model_calls: int
    leaderboard_md: str
    config: TournamentConfig  # as played (a live run's with its live block)
    replay_misses: list[str] = dataclasses.field(default_factory=list)


# objects allocated (net) between two collections of the youngest generation while a
# tournament plays (Python's default: 700); see frozen_heap
YOUNG_COLLECTION_EVERY = 20_000
# what the interpreter has frozen by itself when drarena is imported: Python 3.12 starts with
# a few hundred objects in the permanent generation, 3.11 and 3.13 with none (see frozen_heap)
INTERPRETER_FROZEN = gc.get_freeze_count()


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive before the tournament (imported modules, litellm's model map, the
    pages and trees) are left out of the cyclic garbage collector's scans while it plays,
    and given back afterwards.

    Why: the tournament is one event loop, and a full collection stops it while it walks
    every object in the process. With 128 agents on 16 simulated replicas
    (bench/bench_cluster.py) one such collection took 250-268 ms of a 5 s run, every request
    in flight finishing into a loop that could not send the next. Frozen, what is scanned is
    only what the tournament made. Reference counting still frees them as before; unfreezing
    afterwards lets later collections reach them (garbage made before included: no collection
    is forced first), so a process that runs many tournaments (the test suite) keeps
    collecting their cycles. The youngest generation is also collected every
    YOUNG_COLLECTION_EVERY allocations instead of Python's 700: 290 collections in that run's
    window became 17, the time in the collector 130-165 ms -> 54-62 ms.

    A caller's own freeze (a forking server's: more frozen than INTERPRETER_FROZEN) is left as
    it is: nothing is frozen or unfrozen then. Why not "anything frozen is a caller's": Python
    3.12 starts with a few hundred objects frozen, so that rule never unfroze there, and every
    object alive before a tournament stayed out of every later collection (a process running
    several tournaments never collected their cycles). bench/bench_cpython_tricks.py shows
    what this buys on each Python."""
    thresholds = gc.get_threshold()
    ours = gc.get_freeze_count() <= INTERPRETER_FROZEN
    if ours:
        gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_COLLECTION_EVERY), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if ours:
            gc.unfreeze()


def finish(run: RunDir, config: TournamentConfig, log: list[MatchRecord]) -> str:
    """The leaderboard files from the log (a replay compares them with the run's); returns
    the leaderboard as Markdown. (report.html is the report room's: the commands end with
    drarena.report.finish.finish_run, which writes it and these files again from the same
    rows.)"""
    rows = build_leaderboard(
        config.agent_names(), log, resamples=config.rating.resamples, seed=config.rating.seed
    )
    write_leaderboard(run, rows)
    return to_markdown(rows)


def _start_header(
    ctx: RunContext,
    old: RunHeader | None,
    header_extra: dict[str, Any] | None,
    *,
    resumed: bool,
) -> RunHeader:
    """The run header before the first match: the context's (config, fingerprints,
    versions), what a resumed run keeps of `old` (its creation time), the tool record, and
    the web's own fields (a frozen run's derived files' digests, a live run's block with the
    captures a resumed run made before). `old`: the header being on disk (None for a new
    run); `resumed`: the same tournament goes on (it keeps its creation time), not a newcomer
    being placed into it."""
    header = ctx.header()
    for key, value in (header_extra or {}).items():  # e.g. a replay's replay_of
        setattr(header, key, value)
    if old is not None and resumed:
        header.created = old.created if old.has("created") else header.created
    record = ctx.tool_record
    if record is not None:  # one list of replay misses, in the order they happened
        record.misses = ctx.client.replay_misses
    ctx.web.stamp_header(header, old)
    # a run resumed from one begun without a record has matches no record answers
    if record is not None and (old is None or old.tool_record is not None):
        header.tool_record = ToolRecordRef(table="tools", version=TOOL_SCHEMA_VERSION)
    return header


def _now() -> datetime:
    return datetime.now(UTC)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How `execute` plays a config: the model cache, the models, the web, and what kind of
    run it is.

    `serve`, `cache_mode`, `model`, `fixed_roles`, `replay_tools`, `backend`: as in
    OpenOptions (drarena.runs.context); `cache_path`: default the run folder's. `newcomer`:
    place this agent into the finished tournament (add-agent) instead of playing it.
    `prepare` False: the snapshot's derived files are read as they are, never rebuilt (a
    replay reads the files the run read).

    `web`: the run's web (drarena.runs.webmode), chosen once from the config where not given:
    frozen, or live (`offline: false`: the provider is checked first, then one LiveWeb
    serves every read and captures it into <live.capture_root>/<name>-live-<now()>). A
    replay gives the recorded run's (`replay`): a live run's answers every read from its
    captures instead, with the network guard on.

    `header_extra`: fields set on the run header before the first match (a replay's
    replay_of). `examiner_check_pairs` > 0: an examiner-check of that many tasks runs (or is
    reused) before the first match and its figures go into run.json
    (drarena.runs.examinercheck)."""

    serve: bool
    cache_mode: CacheMode
    cache_path: Path | None = None
    fixed_roles: dict[str, Any] | None = None
    newcomer: str | None = None
    prepare: bool = True
    model: str | None = None
    web: WebMode | None = None
    now: Callable[[], datetime] = _now
    backend: Any = None
    replay_tools: bool | None = None
    header_extra: dict[str, Any] | None = None
    examiner_check_pairs: int = 0

    def opening(self, run: RunDir, web: WebMode) -> OpenOptions:
        """What open_run is given for `run`, played on `web`: the run's folder is private to
        it (hidden from command agents)."""
        return OpenOptions(
            cache_path=self.cache_path or run.cache_path,
            cache_mode=self.cache_mode,
            serve=self.serve,
            model=self.model,
            fixed_roles=self.fixed_roles,
            web=web,
            replay_tools=self.replay_tools,
            backend=self.backend,
            private=(run.path,),
        )


def tournament_options(
    config: TournamentConfig,
    *,
    serve: bool = True,
    model: str | None = None,
    check_pairs: int | None = None,
) -> RunOptions:
    """What `drarena tournament` (and `drarena.run_tournament`) plays `config` with: the
    model cache read and written, the models served locally for roles with model `served`
    (`serve`; `model`: which one), and an examiner-check of `check_pairs` tasks before the
    first match (default: the config's `examiner_check.tasks`; 0 or less: none)."""
    pairs = config.examiner_check.tasks if check_pairs is None else check_pairs
    return RunOptions(
        serve=serve,
        cache_mode=CacheMode.READ_WRITE,
        model=model,
        examiner_check_pairs=max(pairs, 0),
    )


def play(config: TournamentConfig, options: RunOptions, *, live: bool = False) -> RunResult:
    """Play (or resume) the tournament of `config` into <runs_root>/<name>, as `drarena
    tournament` does: `live` (or `offline: false` in the config) plays it on the live web."""
    if live or not config.offline:
        config = config.as_live()
    return execute(config, RunDir(config.runs_root / config.name), options)


def execute(config: TournamentConfig, run: RunDir, options: RunOptions) -> RunResult:
    """Play (or resume) the tournament of `config` into `run` (RunOptions says how).

    Frozen runs keep every tool result in the run's tool record (next to the model cache);
    with `cache_mode` REPLAY tool calls are answered from it (see `replay`)."""
    with run_lock(run.path):  # a second drarena in this folder is refused, naming this one
        return _execute(config, run, options)


def _execute(config: TournamentConfig, run: RunDir, options: RunOptions) -> RunResult:
    """The checks before anything is written (the folder, the config a resumed run was
    begun with, the log a placement reads), the prepare stage, then the play (`_play`)."""
    header_extra, newcomer = options.header_extra, options.newcomer
    web = options.web or web_mode(config, capture_as=config.name, now=options.now)
    config = web.config  # as played: a live run's with its live block
    old = run.header()
    if old is None and REPLAY_MARK not in (header_extra or {}):  # (prepare_replay_target's)
        check_new_run_folder(run.path)
    if old is not None and newcomer is None and old.config_digest != config_digest(config):
        raise DrarenaError(
            f"{run.path} holds a run of another config; choose another `name` or delete the folder"
        )
    # what a resumed run or a placement reads is checked before run.json is rewritten
    from drarena.arena.tournament import finished_matches, split_placement

    prior: list[MatchRecord] = []
    if newcomer is not None:
        prior = run.read_log()
        # either may be the damaged one: the log and the run.json whose agents it is checked against
        check_agents(config.agent_names(), prior, f"{run.log_path} (config: {run.header_path})")
        split_placement(newcomer, prior)
    if old is not None:
        finished_matches(run, config.agent_names())
    config = check_config(config, web=web)
    if options.prepare:  # a replay reads the derived files the run read: never rebuilt
        prepare_stage(config, web)
    with open_run(config, options.opening(run, web)) as ctx:
        header = _start_header(ctx, old, header_extra, resumed=newcomer is None)
        log = _play(ctx, run, header, options, prior)
        client = ctx.client
    md = finish(run, config, log)
    misses = list(client.replay_misses)  # the tool record's misses included
    return RunResult(run, log, client.model_calls, md, config, misses)


def _play(
    ctx: RunContext,
    run: RunDir,
    header: RunHeader,
    options: RunOptions,
    prior: list[MatchRecord],
) -> list[MatchRecord]:
    """The tournament played (or the newcomer placed against `prior`) under the network
    guard, run.json written before the first match and again after the last with the usage
    and model calls; returns the log. A live run's capture is written even when the run is
    interrupted (web.finish)."""
    config, web, newcomer = ctx.config, ctx.web, options.newcomer
    if options.examiner_check_pairs > 0 and newcomer is None:  # the Examiner's figures first
        from drarena.runs.examinercheck import tournament_check

        header.examiner_check = tournament_check(
            ctx, header, options.examiner_check_pairs, paraphrase=config.examiner_check.paraphrase
        )
    run.write_header(header)
    tournament = ctx.tournament(run)
    proxied = web.frozen_proxy and any(a.kind == "command" for a in config.agents)
    if proxied:  # what this run's command agents do through the frozen-web proxy
        from drarena.agents.frozenweb import recorded_tally
        from drarena.webproxy.proxy import TALLY  # (aiohttp: imported only for them)

        proxy_before = TALLY.copy()
    try:
        with ctx.guard(), frozen_heap():
            web.check_roots(ctx.trees)
            if newcomer is None:
                log = asyncio.run(tournament.play())
            else:
                log = asyncio.run(tournament.place(newcomer, prior))
    finally:  # a live run's capture is written even when the run is interrupted
        web.finish(header, run.write_header)
    client = ctx.client
    header.usage = dict(client.usage())
    header.model_calls = client.model_calls
    if proxied:  # over the whole run where its tool record has every answer's trace
        record = ctx.tool_record
        tally = TALLY.minus(proxy_before) if record is None else recorded_tally(record)
        header.web_proxy = tally.to_dict()
    run.write_header(header)
    return log


class NoModelBackend:
    """The backend of a replay: every answer comes from the cache, so no model library is
    loaded (litellm's import alone costs seconds) and a call that got here is a bug."""

    async def complete(self, request: Any) -> Any:
        raise DrarenaError(
            "replay: a model call reached the backend (the cache should have "
            "answered or refused it)"
        )

    def is_retriable(self, exc: BaseException) -> bool:
        return False


def legacy_judging(
    config: dict[str, Any], prompt_hashes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A run recorded before the judge prompt was choosable (no `match.judge_prompt` in its
    stored config) was judged by the v1 prompt, kept under its old name: replay with it.
    A run whose `prompt_hashes` (run.json) give a renamed prompt's old name its old wording
    (templates.RENAMED_PROMPTS: "paper" before issue 35) names it by its name now."""
    from drarena.examiner.templates import LEGACY_JUDGE_PROMPT

    match = config.get("match", {})
    if not isinstance(match, dict):
        return config
    if "judge_prompt" not in match:
        return {**config, "match": {**match, "judge_prompt": LEGACY_JUDGE_PROMPT}}
    renamed = _renamed_prompts(prompt_hashes or {})
    if not renamed:
        return config
    judge = match.get("judge")
    return {
        **config,
        "match": {
            **match,
            "judge_prompt": renamed.get(match["judge_prompt"], match["judge_prompt"]),
            **({"judge": _rename_in(judge, renamed)} if judge is not None else {}),
        },
    }


def _renamed_prompts(prompt_hashes: dict[str, Any]) -> dict[str, str]:
    from drarena.examiner.templates import RENAMED_PROMPTS

    return {
        old: new
        for old, (new, digest) in RENAMED_PROMPTS.items()
        if prompt_hashes.get(old) == digest
    }


def _rename_in(value: Any, renamed: dict[str, str]) -> Any:
    """`value` with every `prompt` entry that names an old prompt name renamed (a judge's
    {kind, args}, a hybrid judge's nested llm judge)."""
    if isinstance(value, dict):
        return {
            k: (
                renamed.get(v, v)
                if k == "prompt" and isinstance(v, str)
                else _rename_in(v, renamed)
            )
            for k, v in value.items()
        }
    return value


def replay_folder(run: Path, out: Path | None = None) -> Path:
    """Where a replay of the run at `run` goes: `out`, else <run>-replay beside the run."""
    return out if out is not None else beside(run, "-replay")


def replay(
    run: RunDir, out: RunDir, *, snapshot: Path | None = None
) -> tuple[RunResult, list[str]]:
    """Re-execute `run` into `out` from its record alone (model cache and tool record: no
    model, index, JVM or encoder); returns the files that differ. `snapshot`: where the run's
    snapshot is on this machine (default: the path in its config)."""
    header = run.require_header()
    if not run.cache_path.is_file():
        raise DrarenaError(f"{run.cache_path}: no model cache to replay from")
    if not header.bound_roles:  # the cache is keyed by the models the roles were bound to
        raise DrarenaError(
            f"{run.header_path}: no bound_roles (the model each role used); the run cannot be "
            "replayed without them"
        )
    # rules of older drarenas
    stored = legacy_match(legacy_judging(header.config, header.prompt_hashes))
    config = parse_config(stored, f"{run.header_path}: config")
    # round by round: a replayed match ends as soon as it is read, so planning the next
    # round under the 4^k outcomes of the unfinished ones (BT fits, scipy's import) would only
    # delay it; the matches and their bytes are the same either way (config_digest too)
    config = config.model_copy(update={"early_start": 0})
    if snapshot is not None:
        config = config.model_copy(update={"snapshot": snapshot})
    # checked before prepare_replay_target: a refused replay leaves --out as it was (a
    # frozen run's snapshot bytes; a live run's captures, which answer every read)
    web = web_mode(config).replay(header, run.header_path)
    with run_lock(out.path):  # held from the clean-up through the replay (reentrant)
        prepare_replay_target(run.path, out.path)  # deletes nothing drarena did not write
        result = execute(
            config,
            out,
            RunOptions(
                serve=False,
                cache_mode=CacheMode.REPLAY,
                cache_path=run.cache_path,
                fixed_roles=header.bound_role_dicts(),
                prepare=False,
                web=web,
                replay_tools=header.tool_record is not None,
                backend=NoModelBackend(),
                header_extra={REPLAY_MARK: str(run.path.resolve())},
            ),
        )
    if result.replay_misses:
        more = len(result.replay_misses) - 1
        raise DrarenaError(result.replay_misses[0] + (f" (and {more} more)" if more else ""))
    compared = ("matches.jsonl", "leaderboard.md", "leaderboard.csv", "leaderboard.json")
    missing = [name for name in compared if not (run.path / name).is_file()]
    if missing:  # an unfinished run: nothing to compare the replay with
        raise DrarenaError(
            f"{run.path}: no {', '.join(missing)} to compare the replay with "
            f"(replayed into {out.path}); finish the run first"
        )
    differ = [
        name
        for name in compared
        if (run.path / name).read_bytes() != (out.path / name).read_bytes()
    ]
    return result, differ


def log_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
