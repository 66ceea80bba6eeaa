"""Running a tournament, a replay or a placement from a config: the one shared path."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drarena.agents.registry import AgentContext, build_agent
from drarena.arena.config import TournamentConfig, parse_config
from drarena.arena.live import (
    LiveSession,
    capture_fingerprint,
    capture_path,
    finish_block,
    header_block,
    preflight,
)
from drarena.arena.records import MatchRecord
from drarena.arena.runs import REPLAY_MARK, RunDir, prepare_replay_target, write_atomic
from drarena.arena.session import (
    bind_roles,
    build_header,
    check_components,
    config_digest,
    load_pages,
    load_trees,
    model_endpoint,
    prepare_inputs,
)
from drarena.arena.tournament import Tournament
from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.config import CacheMode, ModelsConfig
from drarena.report.html import render_report
from drarena.report.leaderboard import build_leaderboard, to_markdown


@dataclasses.dataclass
class RunResult:
    run: RunDir
    log: list[MatchRecord]
    model_calls: int
    leaderboard_md: str


def _agents_and_client(config: TournamentConfig, bound: ModelsConfig,
                       live: LiveSession | None = None, backend: Any = None
                       ) -> tuple[ModelClient, dict[str, Any], Any]:
    from drarena.agents.citations import SnapshotUrlChecker

    client = ModelClient(bound, backend=backend)
    if live is None:
        checker = SnapshotUrlChecker(config.snapshot)
        context = AgentContext(client=client, snapshot_dir=config.snapshot,
                               index_root=config.index_root, url_checker=checker)
    else:  # citations counted, not checked (see drarena.arena.live)
        checker = None
        context = AgentContext(client=client, snapshot_dir=config.snapshot,
                               index_root=config.index_root, url_checker=None,
                               retriever_factory=live.retriever_factory(config.snapshot,
                                                                        config.index_root))
    agents = {a.name: build_agent(a.spec(), context, name=a.name) for a in config.agents}
    return client, agents, checker


def _expander(config: TournamentConfig) -> Any:
    from drarena.corpus.extract import load_docs, load_links
    from drarena.corpus.trees import LinkGraph
    from drarena.corpus.treewalk import SnapshotExpander

    return SnapshotExpander(LinkGraph.build(load_docs(config.snapshot),
                                            load_links(config.snapshot)))


def _guard(config: TournamentConfig, bound: ModelsConfig, *, replaying: bool = False
           ) -> contextlib.AbstractContextManager[Any]:
    """Frozen runs and offline replays of live runs reach only the model endpoints."""
    if not config.offline and not replaying:
        return contextlib.nullcontext()
    from drarena.models.guard import NetworkGuard, endpoint_hosts

    return NetworkGuard(endpoint_hosts(r.api_base for r in bound.roles.values()))


def finish(run: RunDir, config: TournamentConfig, log: list[MatchRecord]) -> str:
    """Leaderboard files and report.html from the log (pure apart from writing files; all
    inputs are read before the first write, so a damaged one overwrites nothing)."""
    rows = build_leaderboard(config.agent_names(), log, resamples=config.rating.resamples,
                             seed=config.rating.seed)
    header = run.header() or {}
    page = render_report(f"drarena: {config.name}", header, rows, log, run.answer_seconds())
    drift_json = run.path / "drift.json"
    if drift_json.is_file():  # written by `drarena drift --run`: keep its section on re-render
        from drarena.drift.report import drift_section, read_json, splice_section

        page = splice_section(page, drift_section(read_json(drift_json)))
    run.write_leaderboard(rows)
    write_atomic(run.path / "report.html", page)
    return to_markdown(rows)


def execute(config: TournamentConfig, run: RunDir, *, serve: bool, cache_mode: CacheMode,
            cache_path: Path | None = None, fixed_roles: dict[str, Any] | None = None,
            newcomer: str | None = None, prepare: bool = True,
            model: str | None = None, live_replay: Sequence[Path] | None = None,
            now: Callable[[], datetime] = lambda: datetime.now(UTC),
            backend: Any = None, header_extra: dict[str, Any] | None = None) -> RunResult:
    """Play (or resume) the tournament of `config` into `run`. `backend`: the model
    backend (tests inject a scripted one; default litellm).

    Live mode (`offline: false`): the provider is checked first, then one LiveWeb serves
    every read and captures it; `live_replay` (the captures of a finished live run) answers
    every read from those captures instead, with the network guard on."""
    check_components(config)
    live_mode = not config.offline
    if live_mode:
        config = config.as_live()  # the default live block when the config has none
    if config.live is not None and live_mode and live_replay is None:
        preflight(config.live)
    if prepare:
        prepare_inputs(config, index=not live_mode)
    trees = load_trees(config)
    pages = load_pages(config)
    old = run.header()
    if old is not None and newcomer is None and old.get("config_digest") != config_digest(config):
        raise DrarenaError(f"{run.path} holds a run of another config; choose another `name` "
                           "or delete the folder")
    endpoint = (contextlib.nullcontext((None, None)) if fixed_roles is not None
                else model_endpoint(config, serve, model))
    with endpoint as (api_base, served_model):
        if fixed_roles is not None:  # replay: the exact models the original run used
            models = config.models.model_copy(update={"roles": {
                k: r.model_copy(update={"model": fixed_roles[k]["model"],
                                        "api_base": fixed_roles[k]["api_base"]})
                for k, r in config.models.roles.items()}})
        else:
            models = config.models
        bound = bind_roles(models, api_base, served_model, cache_path or run.cache_path,
                           cache_mode)
        header = build_header(config, bound, trees)
        header.update(header_extra or {})  # e.g. a replay's replay_of
        if old is not None and newcomer is None:
            header["created"] = old.get("created", header["created"])
        live = None
        if config.live is not None and live_mode:
            earlier = [] if old is None else old.get("live", {}).get("captures", [])
            target = (None if live_replay is not None else
                      capture_path(config.live.capture_root, config.name, now()))
            live = LiveSession(config.live, capture_to=target, replay_from=live_replay or ())
            if live_replay is not None:
                header["live"] = header_block(
                    config.live, [{"path": str(p), "fingerprint": capture_fingerprint(p)}
                                  for p in live_replay], None, replayed=True)
            else:
                header["live"] = header_block(config.live, earlier, target)
        run.write_header(header)
        try:
            client, agents, checker = _agents_and_client(config, bound, live, backend)
            tournament = Tournament(
                run, config.seed, agents, trees, pages, client, config.match,
                config.swiss_rounds, config.concurrency,
                None if live else _expander(config),
                walker_factory=live.walker if live else None)
            try:
                with _guard(config, bound, replaying=live_replay is not None):
                    if live is not None:
                        live.check_roots(list(trees.values()))
                    if newcomer is None:
                        log = asyncio.run(tournament.play())
                    else:
                        log = asyncio.run(tournament.place(newcomer, run.read_log()))
            finally:
                if checker is not None:
                    checker.close()
        finally:
            if live is not None:  # the capture is written even when the run is interrupted
                header["live"] = finish_block(header["live"], live.close())
                run.write_header(header)
        usage = {k: v.to_dict() for k, v in client.usage().items()}
        header["usage"] = usage
        header["model_calls"] = client.model_calls
        run.write_header(header)
    md = finish(run, config, log)
    return RunResult(run, log, client.model_calls, md)


def replay(run: RunDir, out: RunDir) -> tuple[RunResult, list[str]]:
    """Re-execute `run` into `out` from its model cache only; returns the files that differ."""
    header = run.header()
    if header is None:
        raise DrarenaError(f"{run.path}: no run.json (not a run folder)")
    if not run.cache_path.is_file():
        raise DrarenaError(f"{run.cache_path}: no model cache to replay from")
    config = parse_config(header["config"], f"{run.header_path}: config")
    prepare_replay_target(run.path, out.path)  # deletes nothing drarena did not write
    result = execute(config, out, serve=False, cache_mode=CacheMode.REPLAY,
                     cache_path=run.cache_path, fixed_roles=header["bound_roles"],
                     prepare=False, live_replay=None if config.offline else
                     live_captures(run.header_path, header),
                     header_extra={REPLAY_MARK: str(run.path.resolve())})
    differ = [name for name in ("matches.jsonl", "leaderboard.md", "leaderboard.csv",
                                "leaderboard.json")
              if (run.path / name).read_bytes() != (out.path / name).read_bytes()]
    return result, differ


def live_captures(where: Path, header: dict[str, Any]) -> list[Path]:
    """The capture folders of a live run, in run order (one per part of a resumed run)."""
    captures = header.get("live", {}).get("captures", [])
    if not captures:
        raise DrarenaError(f"{where}: a live run with no capture snapshot recorded; it cannot "
                           "be replayed offline")
    return [Path(c["path"]) for c in captures]


def log_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
