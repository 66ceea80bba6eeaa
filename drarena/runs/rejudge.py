"""`drarena run rejudge RUN`: a finished run's rounds judged again by another Examiner.

Why: a ranking is only as good as its judge, and one way to measure a judge without humans is
to ask whether a second judge agrees (DR-Arena reports Cohen's kappa 0.84-0.90 between
Examiners). Every stored round with a task and two judgeable answers is judged again through
the same judging code a tournament uses (both orders, reconciled), by the judge model given
here; nothing is asked of the agents and no task is generated. The comparison is per round:
the source run's reconciled verdict against the new one, as agreement and Cohen's kappa
(drarena.ledger.agreement) on the 5-way verdict, on the direction (A / TIE / B), and on the
loser's failure type where both judges named the same winner (the type diagnoses the loser,
so it is compared only when both judges mean the same loser).

The output folder (default <RUN>-rejudge) holds the rejudge's own model cache, so a second
rejudge with the same judge makes no model calls, and rejudge.json / rejudge.md. With
`write`, it is also a run folder (run.json naming the source run and the new judge,
matches.jsonl with the new judgments and rescored matches, the leaderboard): `drarena run rank`
reads it like any run. The walk through each tree stays the source run's (the rounds played
are the ones the first Examiner's verdicts chose); every stored round is rescored, none is cut.
The source run is only read.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drarena.arena.rounds import failure, for_judge
from drarena.config.tournament import (
    SERVED,
    TournamentConfig,
    legacy_match,
    load_config,
    parse_config,
)
from drarena.corpus.treewalk import TreeWalker
from drarena.errors import DrarenaError
from drarena.examiner.evidence import Grounding
from drarena.examiner.evolve import MatchScore, add_round, match_void, outcome
from drarena.examiner.judge import JudgeOptions, PairJudgment, judge_answers
from drarena.examiner.judges import Judge, JudgeCall, build_judge
from drarena.examiner.templates import used_hashes
from drarena.examiner.verdicts import Judgment
from drarena.files import write_atomic
from drarena.ledger.agreement import Agreement, collapse, measure
from drarena.ledger.agreement import to_markdown as agreement_markdown
from drarena.ledger.folder import RunDir, beside, read_text, remove_own_files
from drarena.ledger.header import RunHeader
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.models.client import ModelClient
from drarena.models.config import CacheMode, ModelRole, ModelsConfig, Sampling
from drarena.records import Record
from drarena.runs.execute import finish, legacy_judging
from drarena.runs.session import bind_roles, load_pages, load_trees, model_endpoint, page_terms
from drarena.settle import gather_settled

SCHEMA_VERSION = 1
MARK = "rejudge_of"
REPORT_JSON = "rejudge.json"
REPORT_MD = "rejudge.md"
ROLE = "rejudge"
# what a rejudge writes into its folder (the cache is kept: a second rejudge is free)
WRITTEN = (
    REPORT_JSON,
    REPORT_MD,
    "run.json",
    "matches.jsonl",
    "leaderboard.md",
    "leaderboard.csv",
    "leaderboard.json",
    "report.html",
)


@dataclasses.dataclass(frozen=True, slots=True)
class JudgeSpec:
    """Which judge to ask: a role of a config (default the run's own judging role), its
    model replaced when `model` is given, its sampling changed by the given fields."""

    model: str | None = None
    api_base: str | None = None
    role: str | None = None
    config: Path | None = None
    temperature: float | None = None
    seed: int | None = None
    judge: dict[str, Any] | None = None  # a judge component that calls no model: {kind, args}


@dataclasses.dataclass(frozen=True, slots=True)
class RoundComparison(Record):
    """One round: the source run's reconciled judgment and the new judge's ('' error when
    the new judge answered); `original` is None where the source round was not judged."""

    match_id: str
    round: int
    a: str
    b: str
    original: Judgment | None
    new: Judgment | None
    error: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class RejudgeReport(Record):
    schema_version: int
    rejudge_of: str
    source_judge: dict[str, Any]
    judge: dict[str, Any]
    prompt_hashes: dict[str, str]
    source_prompt_hashes: dict[str, str]
    rounds_stored: int
    rounds_rejudged: int
    rounds_compared: int
    rounds_new_judge_failed: int
    verdict: Agreement
    direction: Agreement
    failure_type: Agreement
    rounds: tuple[RoundComparison, ...]
    model_calls: int
    written_run: bool


@dataclasses.dataclass
class RejudgeResult:
    report: RejudgeReport
    markdown: str
    leaderboard_md: str | None  # with `write`
    log: list[MatchRecord]  # with `write`: the rescored matches
    config: TournamentConfig


def resolve_judge(source: TournamentConfig, spec: JudgeSpec) -> tuple[str, ModelRole]:
    """(a description of where the judge came from, the judge's model role). Default: the
    role that judged the run (match.judge_role; the Examiner's role in runs recorded before
    judging had a role of its own)."""
    base = source if spec.config is None else load_config(spec.config)
    where = "the run's config" if spec.config is None else str(spec.config)
    name = spec.role or base.match.judge_role
    role = base.models.roles.get(name)
    if role is None:
        known = ", ".join(sorted(base.models.roles)) or "none"
        raise DrarenaError(f"{where}: models.roles has no role {name!r} (roles: {known})")
    update: dict[str, Any] = {}
    if spec.model is not None:
        update.update(model=spec.model, api_base=spec.api_base, api_bases=None)
    elif spec.api_base is not None:
        update.update(api_base=spec.api_base, api_bases=None)
    sampling = role.sampling.model_dump()
    if spec.temperature is not None:
        sampling["temperature"] = spec.temperature
    if spec.seed is not None:
        sampling["seed"] = spec.seed
    try:
        update["sampling"] = Sampling.model_validate(sampling)
        judge = ModelRole.model_validate({**role.model_dump(), **update})
    except ValueError as exc:
        raise DrarenaError(f"rejudge judge: {str(exc).splitlines()[0]}") from None
    return f"{where}, role {name}", judge


def judge_record(role: ModelRole, origin: str) -> dict[str, Any]:
    return {
        "from": origin,
        "model": role.model,
        "api_base": role.api_base,
        "sampling": role.sampling.as_params(),
    }


def prepare_out(source: Path, out: Path) -> None:
    """`out` ready for a rejudge: never the source run (nor inside or around it); a new or
    empty folder as is; a folder an earlier rejudge of the same run made (MARK in its
    rejudge.json) loses only the files a rejudge writes, keeping its model cache; any
    other folder is refused, nothing deleted."""
    src, dst = source.resolve(), out.resolve()
    if dst == src or dst.is_relative_to(src) or src.is_relative_to(dst):
        raise DrarenaError(f"{out}: is, holds or lies inside the run being rejudged ({source})")
    if not out.exists():
        return
    if not out.is_dir():
        raise DrarenaError(f"{out}: exists and is not a folder")
    if not any(out.iterdir()):
        return
    marker = out / REPORT_JSON
    try:
        earlier = json.loads(read_text(marker)) if marker.is_file() else None
    except (ValueError, DrarenaError):
        earlier = None
    if not isinstance(earlier, dict) or earlier.get(MARK) != str(src):
        raise DrarenaError(
            f"{out}: not empty and not a rejudge of {source} (no {REPORT_JSON} naming it); "
            "nothing was deleted: choose a new or empty folder"
        )
    remove_own_files(out, WRITTEN)


def judgeable(r: RoundRecord) -> bool:
    """A round the new judge can see exactly as the first one could: a task, two answers,
    neither empty nor failed."""
    if r.task.task is None or r.answer_a is None or r.answer_b is None:
        return False
    return not failure(r.answer_a) and not failure(r.answer_b)


async def judge_rounds(
    log: Sequence[MatchRecord], client: ModelClient, options: Callable[[int, int], JudgeOptions]
) -> dict[tuple[str, int], PairJudgment | str]:
    """Every judgeable round judged again with the run's judging options (prompt, mode,
    orders; with one order, the same A/B order the round had): a PairJudgment, or the error
    (a failing judge is a recorded failure, as in a tournament round, never a crash)."""

    async def one(seed: int, r: RoundRecord) -> PairJudgment | str:
        task, a, b = r.task.task, r.answer_a, r.answer_b
        assert task is not None and a is not None and b is not None
        try:
            chosen = options(seed, r.index)
            return await judge_answers(client, ROLE, task, for_judge(a), for_judge(b), chosen)
        except DrarenaError as exc:
            return f"judge failed: {exc}"

    keys = [(m.match_id, r.index) for m in log for r in m.rounds if judgeable(r)]
    jobs = [one(m.seed, r) for m in log for r in m.rounds if judgeable(r)]
    return dict(zip(keys, await gather_settled(*jobs), strict=True))


def model_free_judge(spec: dict[str, Any]) -> Judge:
    """The judge component of `--judge` (e.g. {"kind": "evidence"}); one that calls a model
    is refused: the rejudge's LLM judge is chosen by --model, --role and --config."""
    judge = build_judge(spec)
    if judge.uses_model:
        raise DrarenaError(
            f"--judge {judge.spec.kind}: calls a model; rejudge with an LLM judge through "
            "--model, --role or --config, and with --judge a judge that calls none (evidence)"
        )
    return judge


def round_grounding(config: TournamentConfig) -> Callable[[MatchRecord, RoundRecord], Grounding]:
    """What the evidence judge reads for a stored round, from the run's snapshot: the
    pages of the round's chain (root to the node's parent, when the node is in the stored
    tree; a node grown during the run is not) and targets, the snapshot's term statistics
    and its page lookup, as a tournament round gives them (match.grounding_for)."""
    trees = load_trees(config)
    pages = load_pages(config)
    terms = page_terms(pages.values())
    by_url: dict[str, str] = {}
    for doc in pages.values():
        for url in (doc.url, *doc.aliases):
            by_url.setdefault(url, doc.contents)

    def ground(m: MatchRecord, r: RoundRecord) -> Grounding:
        texts: dict[str, str] = {}
        tree = trees.get(m.tree)
        if tree is not None and r.node in {n.id for n in tree.nodes}:
            walker = TreeWalker(tree=tree, pages=pages, rng=random.Random(0))
            texts.update((p.url, p.text) for p in walker.chain(walker.path_to(r.node)))
        texts.update((u, by_url[u]) for u in r.target_urls if u in by_url)
        return Grounding(terms, texts, by_url.get)

    return ground


async def grade_rounds(
    log: Sequence[MatchRecord],
    judge: Judge,
    ground: Callable[[MatchRecord, RoundRecord], Grounding],
) -> dict[tuple[str, int], PairJudgment | str]:
    """Every judgeable round graded by a judge that calls no model (`--judge evidence`)."""

    async def one(m: MatchRecord, r: RoundRecord) -> PairJudgment | str:
        task, a, b = r.task.task, r.answer_a, r.answer_b
        assert task is not None and a is not None and b is not None
        try:
            call = JudgeCall(None, ROLE, False, ground(m, r))
            return await judge.judge(call, task, for_judge(a), for_judge(b))
        except DrarenaError as exc:
            return f"judge failed: {exc}"

    keys = [(m.match_id, r.index) for m in log for r in m.rounds if judgeable(r)]
    jobs = [one(m, r) for m in log for r in m.rounds if judgeable(r)]
    return dict(zip(keys, await gather_settled(*jobs), strict=True))


def compare(
    log: Sequence[MatchRecord], judged: dict[tuple[str, int], PairJudgment | str]
) -> list[RoundComparison]:
    out = []
    for m in log:
        for r in m.rounds:
            got = judged.get((m.match_id, r.index))
            if got is None:
                continue
            original = None if r.judgment is None or r.void_reason else r.judgment.reconciled
            if isinstance(got, str):
                out.append(RoundComparison(m.match_id, r.index, m.a, m.b, original, None, got))
            else:
                out.append(RoundComparison(m.match_id, r.index, m.a, m.b, original, got.reconciled))
    return out


def agreements(
    rows: Sequence[RoundComparison], *, resamples: int, seed: int
) -> tuple[Agreement, Agreement, Agreement]:
    """Verdict (5-way), direction (A / TIE / B) and failure type (rounds where both judges
    named the same winner), each over the rounds both judges judged."""
    both = [(r.original, r.new) for r in rows if r.original is not None and r.new is not None]
    verdicts = [(o.verdict.value, n.verdict.value) for o, n in both]
    directions = [(collapse(o), collapse(n)) for o, n in verdicts]
    failures = [
        (o.loser_failure_type.value, n.loser_failure_type.value)
        for o, n in both
        if collapse(o.verdict.value) == collapse(n.verdict.value) != "TIE"
    ]
    return (
        measure("verdict (5-way)", verdicts, resamples=resamples, seed=seed),
        measure("direction (A/TIE/B)", directions, resamples=resamples, seed=seed),
        measure("failure type (same winner)", failures, resamples=resamples, seed=seed),
    )


def rescore(
    m: MatchRecord,
    judged: dict[tuple[str, int], PairJudgment | str],
    max_void_rounds: int | None,
) -> MatchRecord:
    """The match with the new judgments in its rounds and its score and outcome recomputed
    as a tournament computes them; rounds the new judge could not see stay as recorded."""
    score = MatchScore(0, 0, 0, 0)
    rounds = []
    for r in m.rounds:
        got = judged.get((m.match_id, r.index))
        if isinstance(got, PairJudgment):
            r = dataclasses.replace(r, judgment=got, void_reason="")
        elif isinstance(got, str):
            r = dataclasses.replace(r, judgment=None, void_reason=got)
        verdict = None if r.void_reason or r.judgment is None else r.judgment.reconciled.verdict
        score = add_round(score, verdict)
        rounds.append(dataclasses.replace(r, score=score))
    void = ""
    if not rounds:
        void = m.void_reason
    elif match_void(score, max_void_rounds):
        reasons = "; ".join(r.void_reason for r in rounds if r.void_reason)
        void = f"{score.rounds_void} void round(s): {reasons}"
    return dataclasses.replace(
        m,
        rounds=tuple(rounds),
        score=score,
        outcome=outcome(score, max_void_rounds=max_void_rounds),
        void_reason=void,
    )


def to_markdown(report: RejudgeReport) -> str:
    j, s = report.judge, report.source_judge
    lines = [
        f"rejudge of {report.rejudge_of}",
        f"source judge: {s['model']} {s['sampling']}",
        (
            f"new judge: {j['kind']} {json.dumps(j.get('args', {}), sort_keys=True)} "
            "(--judge: no model call)"
            if "kind" in j
            else f"new judge: {j['model']} {j['sampling']} ({j['from']})"
        ),
        f"rounds: {report.rounds_stored} stored, {report.rounds_rejudged} judged again, "
        f"{report.rounds_compared} judged by both, {report.rounds_new_judge_failed} the new "
        f"judge failed; {report.model_calls} model calls",
        "",
        agreement_markdown([report.verdict, report.direction, report.failure_type]),
    ]
    if not set(report.prompt_hashes.values()) <= set(report.source_prompt_hashes.values()):
        lines.insert(
            3,
            "note: the prompt templates differ from the ones the source run recorded "
            "(prompt_hashes): the new judge read today's wording",
        )
    confusion = report.verdict.confusion
    if confusion:
        lines.append(
            "verdicts (source -> new): " + ", ".join(f"{k} {v}" for k, v in confusion.items())
        )
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def judge_client(
    config: TournamentConfig,
    judge: ModelRole,
    cache_path: Path,
    *,
    serve: bool,
    backend: Any = None,
) -> Iterator[ModelClient]:
    """A client with one role, the judge, its calls cached in `cache_path`; a `served` judge
    uses the local model server (DRARENA_MODEL_API_BASE, or the CPU default one started
    here), as a tournament's roles do."""
    models = ModelsConfig(roles={ROLE: judge}, concurrency=config.models.concurrency)
    models = models.model_copy(update={"retry": config.models.retry})
    only = config.model_copy(update={"models": models})
    endpoint: contextlib.AbstractContextManager[tuple[str | None, str | None]] = (
        model_endpoint(only, serve)
        if judge.model == SERVED
        else contextlib.nullcontext((None, None))
    )
    with endpoint as (api_base, served):
        yield ModelClient(
            bind_roles(models, api_base, served, cache_path, CacheMode.READ_WRITE), backend=backend
        )


def _now() -> datetime:
    return datetime.now(UTC)


@dataclasses.dataclass(frozen=True, slots=True)
class RejudgeOptions:
    """How `rejudge` runs. `write`: the output folder is also a run folder (run.json,
    matches.jsonl with the rescored matches, the leaderboard). `serve`: start a model server
    for a `served` judge. `resamples`, `seed`: the agreement bootstrap's (default: the run's
    rating settings). `backend`: the model backend (tests inject a scripted one). `now`: the
    clock that dates the written run.json."""

    write: bool = False
    serve: bool = True
    resamples: int | None = None
    seed: int | None = None
    backend: Any = None
    now: Callable[[], datetime] = _now


@dataclasses.dataclass(frozen=True, slots=True)
class _Source:
    """The run being rejudged, as read: its header, the rules it was played by, its
    matches and how many rounds they store."""

    header: RunHeader
    config: TournamentConfig
    log: list[MatchRecord]
    stored: int


@dataclasses.dataclass(frozen=True, slots=True)
class _Judging:
    """What the new judge did: each judgeable round's judgment (or error), the judge as the
    report names it, the prompt templates it read, its model calls and their usage."""

    judged: dict[tuple[str, int], PairJudgment | str]
    info: dict[str, Any]
    prompt_hashes: dict[str, str]
    calls: int
    usage: dict[str, Any]


def rejudge_folder(run: Path, out: Path | None = None) -> Path:
    """Where a rejudge of the run at `run` goes: `out`, else <run>-rejudge beside the run."""
    return out if out is not None else beside(run, "-rejudge")


def rejudge(
    source_path: Path, out_path: Path, spec: JudgeSpec, options: RejudgeOptions | None = None
) -> RejudgeResult:
    """Judge `source_path`'s stored rounds again into `out_path` (see the module doc), as
    `options` say (default: RejudgeOptions())."""
    options = options or RejudgeOptions()
    src = _read_source(source_path)
    component = model_free_judge(spec.judge) if spec.judge is not None else None
    origin, judge = ("", ModelRole(model=SERVED)) if component else resolve_judge(src.config, spec)
    prepare_out(source_path, out_path)
    out = RunDir(out_path)
    out_path.mkdir(parents=True, exist_ok=True)
    mark = {"schema_version": SCHEMA_VERSION, MARK: str(source_path.resolve()), "finished": False}
    write_atomic(out_path / REPORT_JSON, json.dumps(mark) + "\n")  # a crash resumes here
    if component is not None:
        judging = _grade_again(src, component)
    else:
        judging = _judge_again(src, judge, origin, out.cache_path, options)
    report = _report(source_path, src, judging, options)
    leaderboard_md = None
    rescored: list[MatchRecord] = []
    if options.write:
        max_void = src.config.match.max_void_rounds
        rescored = [rescore(m, judging.judged, max_void) for m in src.log]
        leaderboard_md = _write_run(out, src, report, judging, rescored, options.now)
    markdown = to_markdown(report)
    write_atomic(out_path / REPORT_MD, markdown)
    write_atomic(out_path / REPORT_JSON, report.to_json() + "\n")
    return RejudgeResult(report, markdown, leaderboard_md, rescored, src.config)


def _read_source(source_path: Path) -> _Source:
    """The run folder read, with the rules it was played by; refused when it holds no round
    the new judge could see."""
    source = RunDir(source_path)
    header = source.require_header()
    # the rules the run was played by (older drarenas: the Examiner judged, v1 prompt)
    rules = legacy_match(legacy_judging(header.config, header.prompt_hashes))
    config = parse_config(rules, f"{source.header_path}: config")
    log = source.read_log()
    stored = sum(len(m.rounds) for m in log)
    if not any(judgeable(r) for m in log for r in m.rounds):
        raise DrarenaError(
            f"{source.log_path}: no round holds a task and two judgeable answers "
            f"({stored} rounds stored); nothing to rejudge"
        )
    return _Source(header, config, log, stored)


def _grade_again(src: _Source, component: Judge) -> _Judging:
    """The rounds graded by a judge component that calls no model (--judge)."""
    judged = asyncio.run(grade_rounds(src.log, component, round_grounding(src.config)))
    info: dict[str, Any] = {"from": "--judge", **component.spec.model_dump()}
    return _Judging(judged, info, {}, 0, {})


def _judge_again(
    src: _Source, judge: ModelRole, origin: str, cache_path: Path, options: RejudgeOptions
) -> _Judging:
    """The rounds judged by the `judge` model with the run's judging options, its calls
    cached in `cache_path`."""
    judge_options = src.config.match.judge_options
    with judge_client(
        src.config, judge, cache_path, serve=options.serve, backend=options.backend
    ) as client:
        judged = asyncio.run(judge_rounds(src.log, client, judge_options))
        info = judge_record(client.role(ROLE), origin)
        calls = client.model_calls
        usage = {k: v.to_dict() for k, v in client.usage().items()}
    hashes = used_hashes(judge_options(0, 0).template_specs())
    return _Judging(judged, info, hashes, calls, usage)


def _report(
    source_path: Path, src: _Source, judging: _Judging, options: RejudgeOptions
) -> RejudgeReport:
    """The comparison of the two judges, round by round and as agreement figures."""
    config = src.config
    rows = compare(src.log, judging.judged)
    verdict, direction, failure_type = agreements(
        rows,
        resamples=config.rating.resamples if options.resamples is None else options.resamples,
        seed=config.rating.seed if options.seed is None else options.seed,
    )
    source_name = config.match.judge_role
    source_role = src.header.bound_role_dicts().get(source_name, {})
    return RejudgeReport(
        SCHEMA_VERSION,
        str(source_path.resolve()),
        {
            "role": source_name,
            "model": source_role.get("model", "unknown"),
            "sampling": source_role.get("sampling", {}),
        },
        judging.info,
        judging.prompt_hashes,
        dict(src.header.prompt_hashes),
        src.stored,
        len(rows),
        sum(r.original is not None and r.new is not None for r in rows),
        sum(r.new is None for r in rows),
        verdict,
        direction,
        failure_type,
        tuple(rows),
        judging.calls,
        options.write,
    )


def _write_run(
    out: RunDir,
    src: _Source,
    report: RejudgeReport,
    judging: _Judging,
    rescored: list[MatchRecord],
    now: Callable[[], datetime],
) -> str:
    """The output folder as a run folder: the source's run.json naming the rejudge, the
    rescored matches, the leaderboard (whose markdown is returned)."""
    new_header: dict[str, Any] = {
        k: v for k, v in src.header.as_json().items() if k not in ("replay_of", MARK, "rejudge")
    }
    new_header.update(
        created=now().isoformat(timespec="seconds"),
        model_calls=judging.calls,
        usage=judging.usage,
        **{MARK: report.rejudge_of},
        rejudge={"judge": report.judge, "prompt_hashes": report.prompt_hashes},
    )
    out.write_header(new_header)
    for m in rescored:
        out.save_match(m)
    out.write_log(rescored)
    return finish(out, src.config, rescored)
