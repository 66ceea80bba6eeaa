"""`drarena drift run RUN`: a finished frozen tournament's questions, asked again live.

Each match of the frozen run is played again with its own tasks (question and checklist, in
the same order, follow-ups continuing each agent's conversation): the same two agents, built
from the run's config but searching the live web, answer; the same judge code judges both
orders; the live verdicts give live ratings with the same Bradley-Terry code. The comparison
itself is pure (drarena.runs.driftcompare).

The output folder holds its own model cache and capture snapshot, and a header naming them,
so `drarena drift run RUN --out DIR --replay` re-executes it offline (zero model calls, no
network) and checks that drift-run.json and live-matches.jsonl (the live answers and
verdicts) come out identical.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from drarena.agents.base import Agent, Conversation, SourcePage
from drarena.arena.match import MatchSettings, grounding_for
from drarena.arena.rounds import RoundPlay, play_round
from drarena.config.tournament import (
    LiveSettings,
    TournamentConfig,
    legacy_agents,
    legacy_judge,
    parse_config,
)
from drarena.corpus.terms import UNIFORM, TermStats
from drarena.errors import DrarenaError, one_line
from drarena.examiner.evolve import MatchScore, add_round, match_void, outcome
from drarena.examiner.judges import JudgeCall
from drarena.files import write_atomic
from drarena.ledger.folder import MAX_TEXT_BYTES, RunDir, read_text
from drarena.ledger.header import RunHeader
from drarena.ledger.records import SCHEMA_VERSION, MatchRecord, RoundRecord
from drarena.models.client import ModelClient
from drarena.runs.driftcompare import DriftRunReport, build_report, to_markdown
from drarena.runs.execute import legacy_judging
from drarena.runs.live import LivePages, capture_path, finish_block, header_block
from drarena.settle import gather_settled

HEADER = "drift-run-header.json"
REPORT_JSON = "drift-run.json"
REPORT_MD = "drift-run.md"
LIVE_LOG = "live-matches.jsonl"
# A replay reads the header from an --out folder that may be shared or damaged, bounded. Why
# 64 MiB (the bound on a run folder's whole-file reads): the header holds the run's config,
# live settings and counts, a few KiB whatever the size of the frozen web.
MAX_HEADER_BYTES = MAX_TEXT_BYTES


@dataclasses.dataclass
class DriftRunResult:
    report: DriftRunReport
    markdown: str
    model_calls: int
    identical: bool | None  # replay only: drift-run.json came out the same


def frozen_matches(run: RunDir) -> list[MatchRecord]:
    matches = sorted(run.finished().values(), key=lambda m: (m.swiss_round, m.match_id))
    if not matches:
        raise DrarenaError(f"{run.matches_dir}: no finished matches to ask again")
    return matches


def _sources(pages: LivePages, urls: Sequence[str]) -> tuple[SourcePage, ...]:
    """The round's target pages as they are today; a page gone live is left out."""
    out = []
    for url in urls:
        with contextlib.suppress(DrarenaError):
            title, text = pages.get(url)
            out.append(SourcePage(url, title, text))
    return tuple(out)


async def ask_again(
    frozen: MatchRecord,
    agents: tuple[Agent, Agent],
    client: ModelClient,
    role: str,
    pages: LivePages,
    max_void_rounds: int | None,
    judging: MatchSettings | None = None,
    terms: Callable[[], TermStats] = lambda: UNIFORM,
) -> MatchRecord:
    """The frozen match's tasks, answered live and judged (as `judging`'s judge settings
    say, default: pairwise, both orders); the record of the live match. An evidence-grading
    judge reads today's pages of each round (a fact gone from the live page no longer
    counts) and the frozen snapshot's term statistics (`terms`)."""
    settings = judging or MatchSettings()
    judge = settings.judging()
    score = MatchScore(0, 0, 0, 0)
    rounds: list[RoundRecord] = []
    conv: list[Conversation | None] = [None, None]
    last = ["", ""]
    for fr in frozen.rounds:
        task = fr.task.task
        if task is None:
            continue
        sources = _sources(pages, fr.target_urls)
        convs = [
            Conversation(task.question, targets=sources, instruction=settings.agent_instruction)
            if c is None
            else dataclasses.replace(c.then(prev, task.question), targets=sources)
            for c, prev in zip(conv, last, strict=True)
        ]
        play = await play_round(
            task,
            (frozen.a, frozen.b),
            agents,
            (convs[0], convs[1]),
            task.word_limit,
            judge,
            JudgeCall(
                client,
                role,
                judging is not None and settings.judge_swap(frozen.seed, fr.index, frozen.tree),
                grounding_for(judge, {p.url: p.text for p in sources}, terms, None),
            ),
            settings.failed_answers,
        )
        judged, void, answers = play.judgment, play.void, play.answers
        score = add_round(score, None if void or judged is None else judged.reconciled.verdict)
        rounds.append(_live_round(fr, play, score))
        if not void:
            for i in (0, 1):
                answer = answers[i]
                assert answer is not None
                if not play.failed[i]:
                    conv[i], last[i] = convs[i], answer.report
    return _live_match(frozen, rounds, score, max_void_rounds)


def _live_round(frozen: RoundRecord, play: RoundPlay, score: MatchScore) -> RoundRecord:
    """The live round's record: the frozen round's node, targets and task, today's answers
    and judgment (no transition: the frozen run's walk is not walked again)."""
    return RoundRecord(
        index=frozen.index,
        node=frozen.node,
        depth=frozen.depth,
        width=frozen.width,
        target_urls=frozen.target_urls,
        task=frozen.task,
        answer_a=play.stable[0],
        answer_b=play.stable[1],
        judgment=play.judgment,
        score=score,
        transition=None,
        void_reason=play.void,
    )


def _live_match(
    frozen: MatchRecord, rounds: list[RoundRecord], score: MatchScore, max_void_rounds: int | None
) -> MatchRecord:
    """The live match's record under the frozen match's id, pairing and seed; void as a
    tournament match would be (too many void rounds), naming the rounds' reasons."""
    reasons = "; ".join(r.void_reason for r in rounds if r.void_reason)
    void_match = ""
    if match_void(score, max_void_rounds):
        void_match = f"{score.rounds_void} void round(s): {reasons}"
    return MatchRecord(
        SCHEMA_VERSION,
        frozen.match_id,
        frozen.swiss_round,
        frozen.a,
        frozen.b,
        frozen.tree,
        frozen.seed,
        tuple(rounds),
        score,
        outcome(score, max_void_rounds=max_void_rounds),
        void_match,
    )


async def ask_all(
    frozen: Sequence[MatchRecord],
    agents: dict[str, Agent],
    client: ModelClient,
    config: TournamentConfig,
    pages: LivePages,
) -> list[MatchRecord]:
    gate = asyncio.Semaphore(config.concurrency)

    @functools.cache
    def terms() -> TermStats:  # the frozen snapshot's, built once if the judge reads them
        from drarena.runs.session import load_pages, page_terms

        return page_terms(load_pages(config).values())

    async def one(m: MatchRecord) -> MatchRecord:
        async with gate:
            return await ask_again(
                m,
                (agents[m.a], agents[m.b]),
                client,
                config.match.examiner_role,
                pages,
                config.match.max_void_rounds,
                config.match,
                terms,
            )

    return await gather_settled(*(one(m) for m in frozen))


def live_settings(
    config: TournamentConfig, provider: dict[str, Any] | None, web: dict[str, Any] | None, out: Path
) -> LiveSettings:
    """The run's live block (or the default), the overrides, captures into `out`."""
    base = config.live or LiveSettings.model_validate({})
    update: dict[str, Any] = {"capture_root": out}
    if provider is not None:
        update["provider"] = provider
    if web is not None:
        update["web"] = web
    try:
        return LiveSettings.model_validate({**base.model_dump(), **update})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise DrarenaError(f"--provider/--web: {field}: {err['msg']}") from None


def _frozen_run(run_path: Path) -> tuple[RunDir, RunHeader, TournamentConfig]:
    """The frozen run drift-run asks again: its folder, header and config (checked)."""
    from drarena.runs.session import check_components

    run = RunDir(run_path)
    header = run.header()
    if header is None:
        raise DrarenaError(f"{run_path}: no run.json (not a run folder)")
    if header.mode == "live":
        raise DrarenaError(
            f"{run_path}: a live run; drift-run compares a frozen run with the live web"
        )
    stored = legacy_agents(legacy_judge(legacy_judging(header.config, header.prompt_hashes)))
    config = parse_config(stored, f"{run.header_path}: config")
    check_components(config)
    return run, header, config


def _saved_or_new(
    out: Path,
    replay: bool,
    config: TournamentConfig,
    provider: dict[str, Any] | None,
    web: dict[str, Any] | None,
) -> tuple[dict[str, Any] | None, LiveSettings]:
    """A replay's saved header and live settings; a new drift-run's settings (never over a
    finished one: its report is only replayed)."""
    if replay:
        saved = _read_json(out / HEADER)
        if saved is None or not (out / REPORT_JSON).is_file():
            raise DrarenaError(
                f"{out}: no finished drift-run to replay (no {HEADER} or {REPORT_JSON})"
            )
        try:  # what a replay reads of it; edited by hand or cut short: one line, no KeyError
            live = LiveSettings.model_validate(saved["live_settings"])
            captures = saved["live"]["captures"]
            if not isinstance(captures, list) or not all(
                isinstance(c, dict) and isinstance(c.get("path"), str) for c in captures
            ):
                raise TypeError("live.captures is not a list of {path}")
            if not isinstance(saved["bound_roles"], dict | None):
                raise TypeError("bound_roles is not an object")
        except (KeyError, TypeError, ValueError) as exc:  # ValidationError is a ValueError
            what = f"no {exc}" if isinstance(exc, KeyError) else one_line(exc)
            raise DrarenaError(
                f"{out / HEADER}: damaged ({what}); run the drift-run again into another --out"
            ) from None
        return saved, live
    if (out / REPORT_JSON).is_file():
        raise DrarenaError(
            f"{out / REPORT_JSON} exists: replay it with --replay, or choose another --out"
        )
    return None, live_settings(config, provider, web, out)


def _compare(
    config: TournamentConfig,
    live: LiveSettings,
    frozen: Sequence[MatchRecord],
    live_log: Sequence[MatchRecord],
) -> tuple[DriftRunReport, dict[str, str]]:
    """The frozen and live leaderboards compared, and the files that hold the result."""
    from drarena.ledger.leaderboard import build_leaderboard

    names = config.agent_names()
    rating = config.rating
    report = build_report(
        config.name,
        live.provider.model_dump(mode="json"),
        frozen,
        live_log,
        build_leaderboard(names, frozen, resamples=rating.resamples, seed=rating.seed),
        build_leaderboard(names, live_log, resamples=rating.resamples, seed=rating.seed),
    )
    files = {
        REPORT_JSON: json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n",
        LIVE_LOG: "".join(m.to_json() + "\n" for m in live_log),
        REPORT_MD: to_markdown(report),
    }
    return report, files


def _now() -> datetime:
    return datetime.now(UTC)


@dataclasses.dataclass(frozen=True)
class DriftOptions:
    """How drift_run asks again. `provider`, `web`: overrides of the run's live block
    (--provider, --web). `serve`: start a model server for `served` roles (`model`: the one
    it serves). `replay`: re-execute a finished drift-run offline instead. `now`: the clock
    that names the capture. `backend`: the model backend (tests inject a scripted one)."""

    provider: dict[str, Any] | None = None
    web: dict[str, Any] | None = None
    serve: bool = True
    replay: bool = False
    model: str | None = None
    now: Callable[[], datetime] = _now
    backend: Any = None


def drift_run(run_path: Path, out: Path, options: DriftOptions) -> DriftRunResult:
    """Ask `run_path`'s questions again live into `out` (or, with `options.replay`,
    re-execute `out` offline)."""
    provider, web, serve, replay = options.provider, options.web, options.serve, options.replay
    model, now, backend = options.model, options.now, options.backend
    from drarena.models.config import CacheMode
    from drarena.runs.context import OpenOptions, check_config, open_run
    from drarena.runs.webmode import LiveMode

    run, header, config = _frozen_run(run_path)
    frozen = frozen_matches(run)
    saved, live = _saved_or_new(out, replay, config, provider, web)
    live_config = config.model_copy(update={"offline": False, "live": live})
    captures = [Path(c["path"]) for c in saved["live"]["captures"]] if saved else []
    target = None if replay else capture_path(out, f"drift-{config.name}", now())
    names = {n for m in frozen for n in (m.a, m.b)}
    # always live (no choice to make): into `target`, or a replay from the saved captures
    mode = LiveMode(live_config, capture=target, replay_from=captures)
    # no prepare stage: the frozen run's questions are asked again; no tree or index is read
    live_config = check_config(live_config, web=mode)
    with open_run(
        live_config,
        OpenOptions(
            cache_path=out / "llm-cache.sqlite",
            cache_mode=CacheMode.REPLAY if replay else CacheMode.READ_WRITE,
            serve=serve,
            model=model,
            fixed_roles=None if saved is None else saved["bound_roles"],
            web=mode,
            agent_names=names,
            backend=backend,
        ),
    ) as ctx:
        out.mkdir(parents=True, exist_ok=True)
        session, client = mode.session, ctx.client
        new_header: dict[str, Any] = {
            "created": now().isoformat(timespec="seconds"),
            "run": str(run_path),
            "frozen_config_digest": header.config_digest if header.has("config_digest") else None,
            "frozen_snapshot_fingerprint": header.snapshot_fingerprint,
            "live_settings": live.model_dump(mode="json"),
            "bound_roles": {
                k: {"model": r.model, "api_base": r.api_base, "sampling": r.sampling.as_params()}
                for k, r in sorted(ctx.bound.roles.items())
            },
            "live": header_block(live, [], target) if saved is None else saved["live"],
        }
        if not replay:
            write_atomic(out / HEADER, json.dumps(new_header, indent=2, sort_keys=True) + "\n")
        try:
            with ctx.guard():
                live_log = asyncio.run(
                    ask_all(frozen, ctx.agents, client, live_config, session.pages)
                )
        finally:
            closed = session.close()
            if not replay:
                new_header["live"] = finish_block(new_header["live"], closed)
                write_atomic(out / HEADER, json.dumps(new_header, indent=2, sort_keys=True) + "\n")
    report, files = _compare(config, live, frozen, live_log)
    identical = _replayed_or_written(out, files, None if replay else new_header, client)
    return DriftRunResult(report, files[REPORT_MD], client.model_calls, identical)


def _replayed_or_written(
    out: Path, files: dict[str, str], new_header: dict[str, Any] | None, client: ModelClient
) -> bool | None:
    """A replay (`new_header` None): whether the answers, verdicts and comparison came out
    the same as the files in `out`. A new drift-run: its files written, then the header with
    its model calls (None returned)."""
    if new_header is None:
        return all(
            (out / name).read_text(encoding="utf-8") == files[name]
            for name in (REPORT_JSON, LIVE_LOG)
        )
    for name, text in files.items():
        write_atomic(out / name, text)
    new_header["model_calls"] = client.model_calls
    write_atomic(out / HEADER, json.dumps(new_header, indent=2, sort_keys=True) + "\n")
    return None


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    text = read_text(path, MAX_HEADER_BYTES)  # larger, unreadable, not UTF-8: one line
    try:
        value: dict[str, Any] = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise DrarenaError(f"{path}: not valid JSON ({one_line(exc)})") from None
    return value
