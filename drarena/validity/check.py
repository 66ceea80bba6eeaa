"""The examiner-check: tasks from the snapshot's trees, known-preference pairs, judged in both
orders with the real judging code, and the figures.

Thin I/O over the pure parts (pairs, stats, leaks): tasks come from the normal task generator
(drarena.examiner.taskgen) at nodes drawn with a seeded generator, and every model call goes
through the caller's ModelClient, so its cache makes a re-run free and a replay exact. The
report is plain JSON (SCHEMA_VERSION), with no times or call counts in it: the same seed and
cache give the same bytes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drarena.corpus.records import Doc, Tree, TreePage
from drarena.corpus.terms import UNIFORM, TermStats
from drarena.corpus.treewalk import CannotExpand, Expander, TreeWalker
from drarena.errors import DrarenaError, one_line
from drarena.examiner.evidence import Grounding
from drarena.examiner.judge import AnswerForJudge
from drarena.examiner.judges import (
    LLM_KINDS,
    Judge,
    JudgeCall,
    build_judge,
    judge_kinds,
    reads_evidence,
)
from drarena.examiner.taskcheck import Task
from drarena.examiner.taskgen import TaskCall, TaskRequest, TaskRules
from drarena.examiner.taskgens import TaskGenerator, build_taskgen
from drarena.examiner.verdicts import Judgment, reconcile
from drarena.models.client import ModelClient
from drarena.models.structured import complete_json
from drarena.records import Record
from drarena.registry import IMPORT_KIND, ComponentSpec
from drarena.settle import gather_settled
from drarena.validity.leaks import question_leaks, site_segments
from drarena.validity.pairs import (
    PARAPHRASE_SCHEMA,
    Kind,
    Pair,
    build_pairs,
    paraphrase_prompt,
    paraphrased,
)
from drarena.validity.stats import (
    MIN_ACCURACY,
    MIN_ACCURACY_LOW,
    MIN_CONSISTENCY,
    PairOutcome,
    can_rank,
    figure,
    figures,
)

SCHEMA_VERSION = 2  # 2: judges by kind (`judges`); the stuffed, copied_page, paraphrased kinds
# the figures of pairs people labelled (`--labels RUN`), shown after FIGURE_ROWS when present
HUMAN_ROWS = (
    ("human_agreement", "people's choice wins"),
    ("human_tie_rate", "tie on people's ties"),
)
CONTENT_RICH = 500


@dataclasses.dataclass(frozen=True, slots=True)
class CheckSettings(Record):
    """`pairs`: tasks to generate, each giving one pair of every kind; `judges`: the judge
    kinds to measure on the same pairs (the run's own judge keeps its args); `paraphrase`:
    ask the task model to rewrite each task's reference (one call a task) for the
    paraphrased pair."""

    pairs: int = 3
    seed: int = 0
    judges: tuple[str, ...] = ("pairwise",)
    page_budget_chars: int = 4000
    task_attempts: int = 2
    resamples: int = 1000
    paraphrase: bool = True


def check_judges(kinds: tuple[str, ...]) -> None:
    """DrarenaError (one line) unless `kinds` names judge kinds, each once. The command
    calls it before it starts a model, so a typo costs nothing."""
    if not kinds:
        raise DrarenaError("--judges: name at least one judge kind")
    known = judge_kinds()
    for i, kind in enumerate(kinds):
        if kind not in known and not IMPORT_KIND.match(kind):
            raise DrarenaError(f"--judges: unknown judge kind {kind!r} (one of {', '.join(known)})")
        if kind in kinds[:i]:
            raise DrarenaError(f"--judges: {kind!r} is named twice")


def _default_taskgen() -> TaskGenerator:
    return build_taskgen(ComponentSpec(kind="llm", args={"ground": False}))


def _default_judge() -> ComponentSpec:
    return ComponentSpec(kind="pairwise")


def _no_terms() -> TermStats:
    return UNIFORM


@dataclasses.dataclass(frozen=True)
class CheckRun:
    """What the check is played with: the model client, the roles that write tasks and
    judge, the snapshot's trees and pages, the run's task generator and its rules, the run's
    own judge (a kind of `settings.judges` that is its kind keeps its args), and the
    snapshot's term statistics and page lookup (grounded tasks, the evidence judge)."""

    client: ModelClient
    taskgen_role: str
    judge_role: str
    trees: Mapping[str, Tree]
    pages: Mapping[str, Doc]
    expander: Expander | None = None
    taskgen: TaskGenerator = dataclasses.field(default_factory=_default_taskgen)
    rules: TaskRules = dataclasses.field(default_factory=TaskRules)
    judge: ComponentSpec = dataclasses.field(default_factory=_default_judge)
    terms: Callable[[], TermStats] = _no_terms
    page_text: Callable[[str], str | None] | None = None


def _llm_args(run_judge: ComponentSpec) -> tuple[str, dict[str, Any]]:
    """The run's LLM judge (its own, or its hybrid's decider): kind and args."""
    if run_judge.kind in LLM_KINDS:
        return run_judge.kind, dict(run_judge.args)
    llm = run_judge.args.get("llm") if run_judge.kind == "hybrid" else None
    if isinstance(llm, Mapping):
        args = llm.get("args")
        return str(llm.get("kind", "pairwise")), dict(args) if isinstance(args, Mapping) else {}
    return "pairwise", {}


def judge_of_kind(kind: str, run_judge: ComponentSpec) -> Judge:
    """The judge of `kind` as the run would have it: the run's own judge when it is that
    kind; an LLM kind takes the args of the run's LLM judge (a hybrid's decider too); hybrid
    takes the run's LLM judge as its decider; anything else its defaults. LLM judges judge
    both orders here whatever the run's `orders`: the check measures position bias."""
    llm_kind, llm_args = _llm_args(run_judge)
    both = {**llm_args, "orders": 2}
    if kind in LLM_KINDS:
        return build_judge(ComponentSpec(kind=kind, args=both))
    if kind == "hybrid":
        base = dict(run_judge.args) if run_judge.kind == "hybrid" else {}
        spec = {**base, "llm": {"kind": llm_kind, "args": both}}
        return build_judge(ComponentSpec(kind="hybrid", args=spec))
    if kind == run_judge.kind:
        return build_judge(run_judge)
    return build_judge(ComponentSpec(kind=kind))


@dataclasses.dataclass(frozen=True, slots=True)
class CheckTask(Record):
    index: int
    tree: str
    node: str
    target_urls: tuple[str, ...]
    question: str
    leaks: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class MadeTask:
    """One generated task with what its pairs are built from."""

    check: CheckTask
    task: Task
    shown: list[TreePage]
    distractor: TreePage


def _seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _tree_page(doc: Doc) -> TreePage:
    return TreePage(doc.id, doc.url, doc.title, doc.contents, 0, "distractor", "")


def _distractor(pages: Mapping[str, Doc], exclude: set[str], rng: random.Random) -> TreePage:
    pool = sorted(
        d.id
        for d in pages.values()
        if d.chars >= CONTENT_RICH and d.url not in exclude and not d.duplicate_of
    )
    if not pool:
        raise DrarenaError("examiner-check: the snapshot has no other content page to use")
    return _tree_page(pages[rng.choice(pool)])


def _reads_terms(taskgen: TaskGenerator) -> bool:
    return taskgen.spec.kind == "extractive" or bool(taskgen.spec.args.get("ground"))


async def make_tasks(
    run: CheckRun,
    settings: CheckSettings,
    on_task: Callable[[int, int], None] | None = None,
) -> tuple[list[MadeTask], list[str]]:
    """Up to `settings.pairs` valid tasks, at distinct nodes drawn tree by tree (in id order)
    with a generator seeded by (seed, tree, draw); each with its pages and a distractor.
    Returns the tasks and the reasons of the draws that gave none. `on_task(made, wanted)`
    is told after each draw (progress)."""
    if not run.trees:
        raise DrarenaError("examiner-check: the snapshot has no Information Trees")
    ids = sorted(run.trees)
    site = site_segments([d.title for d in run.pages.values()])
    out: list[MadeTask] = []
    failures: list[str] = []
    used: set[tuple[str, str]] = set()
    rules = dataclasses.replace(
        run.rules,
        page_budget_chars=settings.page_budget_chars,
        max_attempts=settings.task_attempts,
    )
    for draw in range(settings.pairs * 3):
        if len(out) >= settings.pairs:
            break
        tree = run.trees[ids[draw % len(ids)]]
        rng = random.Random(_seed(settings.seed, tree.id, draw))
        walker = TreeWalker(tree=tree, pages=run.pages, rng=rng, expander=run.expander)
        try:
            path = walker.start(1)
            for _ in range(rng.randrange(3)):  # 0 to 2 levels deeper, as the tree allows
                with contextlib.suppress(CannotExpand):
                    path = walker.descend(path)
            if (tree.id, path[-1]) in used:  # drawn before: one level deeper, if any
                with contextlib.suppress(CannotExpand):
                    path = walker.descend(path)
            if (tree.id, path[-1]) in used:
                failures.append(f"{tree.id}: node {path[-1]} drawn again")
                continue
            used.add((tree.id, path[-1]))
            targets = walker.targets(path, 2)
            chain = walker.chain(path)
            root = walker.page(tree.root)
        except CannotExpand as exc:
            failures.append(f"{tree.id}: {exc}")
            continue
        request = TaskRequest(
            root,
            chain,
            targets,
            len(path) - 1,
            tuple(m.task.question for m in out),
            tuple(n.url for n in walker.tree.nodes),
            revisits=0,  # each task at a node not drawn before
        )
        terms = run.terms() if _reads_terms(run.taskgen) else UNIFORM
        outcome = await run.taskgen.generate(
            TaskCall(run.client, run.taskgen_role, terms), request, rules
        )
        if on_task is not None:
            on_task(len(out) + (outcome.task is not None), settings.pairs)
        if outcome.task is None:
            failures.append(f"{tree.id}: {outcome.error}")
            continue
        task = outcome.task
        shown = [*chain, *targets]
        distractor = _distractor(run.pages, {p.url for p in shown}, rng)
        leaks = question_leaks(task.question, targets, site)
        check = CheckTask(
            len(out), tree.id, path[-1], tuple(t.url for t in targets), task.question, tuple(leaks)
        )
        out.append(MadeTask(check, task, shown, distractor))
    return out, failures


def _failure(j: Judgment) -> str:
    return j.loser_failure_type.value


async def judge_known_pair(
    judge: Judge, call: JudgeCall, task: Task, pair: Pair, kind: str
) -> PairOutcome:
    """One pair in both orders, from the reference's side; a judge failure is recorded."""
    try:
        first, second, reconciled = await _judge(judge, call, task, pair.reference, pair.other)
    except DrarenaError as exc:
        return PairOutcome(pair.task_index, pair.kind, kind, None, None, None, error=str(exc)[:300])
    return PairOutcome(
        pair.task_index,
        pair.kind,
        kind,
        first.verdict.signed,
        second.verdict.signed,
        reconciled.verdict.signed,
        _failure(reconciled),
    )


async def _judge(
    judge: Judge, call: JudgeCall, task: Task, ref: AnswerForJudge, other: AnswerForJudge
) -> tuple[Judgment, Judgment, Judgment]:
    """(reference-as-A judgment, reference-as-B judgment mapped back, reconciled).

    A judge that judged both orders itself (a pairwise LLM judge: its `ab` and `ba`) is
    asked once; any other judges (reference, other) and (other, reference), the second
    mapped back, reconciled as two orders are (pointwise and evidence grading see each
    answer alone, so their orders agree unless a tie-break follows the position)."""
    one = await judge.judge(call, task, ref, other)
    if one.ab is not None and one.ba is not None:
        return one.ab.raw.judgment, one.ba.raw.judgment.swapped(), one.reconciled
    two = await judge.judge(call, task, other, ref)
    first, second = one.reconciled, two.reconciled.swapped()
    return first, second, reconcile(first, second)


async def paraphrase_pair(
    run: CheckRun, index: int, reference: AnswerForJudge
) -> tuple[Pair | None, str]:
    """The paraphrased pair of task `index`: the task model rewrites the reference's body
    (one call); (None, the reason) when the call fails."""
    messages = [{"role": "user", "content": paraphrase_prompt(reference)}]
    try:
        value, _ = await complete_json(
            run.client, run.taskgen_role, messages, PARAPHRASE_SCHEMA, name="paraphrase"
        )
    except DrarenaError as exc:
        return None, f"task {index}: paraphrase failed: {one_line(exc)}"
    rewritten = paraphrased(reference, str(value["answer"]))
    return Pair(index, Kind.PARAPHRASED, reference, rewritten), ""


@dataclasses.dataclass(frozen=True, slots=True)
class HumanPair(Record):
    """A round of an earlier run that people labelled (drarena run audit) as a known-answer
    pair: `reference` is the answer they preferred (the run's A answer when they called it a
    tie, `tie` True), `other` the other. Only rounds whose people all gave one direction are
    pairs: where they disagree, the right verdict is not known."""

    match_id: str
    round: int
    task: Task
    reference: AnswerForJudge
    other: AnswerForJudge
    tie: bool
    labels: int


@dataclasses.dataclass(frozen=True, slots=True)
class HumanOutcome(Record):
    """A labelled pair judged in both orders, from the reference's side (as PairOutcome)."""

    match_id: str
    round: int
    mode: str
    tie: bool
    reconciled: int | None
    error: str = ""


async def judge_human_pair(
    judge: Judge, call: JudgeCall, pair: HumanPair, mode: str
) -> HumanOutcome:
    """One labelled pair in both orders; a judge failure is recorded, not raised."""
    try:
        _, _, reconciled = await _judge(judge, call, pair.task, pair.reference, pair.other)
    except DrarenaError as exc:
        return HumanOutcome(pair.match_id, pair.round, mode, pair.tie, None, str(exc)[:300])
    return HumanOutcome(pair.match_id, pair.round, mode, pair.tie, reconciled.verdict.signed)


def human_figures(outcomes: Sequence[HumanOutcome], resamples: int, seed: int) -> dict[str, Any]:
    """The share of people-decided pairs the judge gives to the people's choice, and of
    people's ties it calls a tie, each with its bootstrap interval."""
    ok = [o for o in outcomes if o.reconciled is not None]
    wins = [int((o.reconciled or 0) > 0) for o in ok if not o.tie]
    ties = [int(o.reconciled == 0) for o in ok if o.tie]
    return {
        "human_agreement": figure(wins, resamples, seed).to_dict(),
        "human_tie_rate": figure(ties, resamples, seed + 1).to_dict(),
    }


def grounding_for_pages(
    judge: Judge,
    pages: Sequence[TreePage],
    terms: Callable[[], TermStats],
    page_text: Callable[[str], str | None] | None,
) -> Grounding:
    """The evidence judge's grounding for one task's pairs (its chain and target pages);
    nothing for a judge that reads none."""
    if not reads_evidence(judge):
        return Grounding()
    return Grounding(terms(), {p.url: p.text for p in pages}, page_text)


async def examiner_check(
    run: CheckRun,
    settings: CheckSettings,
    on_progress: Callable[[str], None] | None = None,
    human: Sequence[HumanPair] = (),
) -> dict[str, Any]:
    """Run the check; returns the report (JSON-ready, deterministic given seed and cache).

    Every kind of `settings.judges` judges the same pairs (`judge_of_kind`), each pair in
    both orders. `on_progress(line)`: told what is done (tasks made, judges finished).
    `human`: rounds people labelled in an earlier run, judged as known-answer pairs too
    (their figures HUMAN_ROWS; the report then lists them under `human_pairs`)."""
    check_judges(settings.judges)

    def say(line: str) -> None:
        if on_progress is not None:
            on_progress(line)

    tasks, failures = await make_tasks(
        run, settings, lambda made, wanted: say(f"examiner-check: {made} of {wanted} task(s)")
    )
    pairs = await _known_pairs(run, settings, tasks, failures, say)
    results: dict[str, Any] = {}
    outcomes_all: list[PairOutcome] = []
    human_all: list[HumanOutcome] = []
    for kind in settings.judges:
        results[kind], outcomes, judged = await _judge_kind(
            run, settings, kind, tasks, pairs, human
        )
        outcomes_all += outcomes
        human_all += judged
        say(f"examiner-check: {kind} judged {len(outcomes)} pair(s)")
    leak = figure([int(bool(m.check.leaks)) for m in tasks], settings.resamples, settings.seed)
    first = results[settings.judges[0]]
    # a check without labels keeps its bytes
    extra = _human_block(human, human_all) if human else {}
    return extra | {
        "schema_version": SCHEMA_VERSION,
        "settings": settings.to_dict(),
        "taskgen_role": run.taskgen_role,
        "judge_role": run.judge_role,
        "examiner_model": run.client.role(run.judge_role).model,
        "taskgen": run.taskgen.spec.model_dump(mode="json"),
        "thresholds": {
            "min_accuracy": MIN_ACCURACY,
            "min_accuracy_low": MIN_ACCURACY_LOW,
            "min_consistency": MIN_CONSISTENCY,
        },
        "tasks": [m.check.to_dict() for m in tasks],
        "task_failures": failures,
        "leak_rate": leak.to_dict(),
        "results": results,
        "can_rank": first["can_rank"],
        "verdict": first["verdict"],
        "outcomes": [o.to_dict() for o in outcomes_all],
    }


async def _known_pairs(
    run: CheckRun,
    settings: CheckSettings,
    tasks: list[MadeTask],
    failures: list[str],
    say: Callable[[str], None],
) -> list[tuple[MadeTask, Pair]]:
    """Every task's known-preference pairs, with its paraphrased pair when asked (a failed
    paraphrase goes to `failures`), sorted by task, then kind: every judge kind is then
    judged, and reported, in one order."""
    pages = run.pages.values()
    known = {d.url for d in pages} | {a for d in pages for a in d.aliases}
    weights = run.terms()
    pairs: list[tuple[MadeTask, Pair]] = [
        (m, pair)
        for m in tasks
        for pair in build_pairs(m.check.index, m.task, m.shown, m.distractor, known, weights)
    ]
    if settings.paraphrase and tasks:
        refs = [(m, p.reference) for m, p in pairs if p.kind == Kind.EQUAL]
        made = await gather_settled(*(paraphrase_pair(run, m.check.index, r) for m, r in refs))
        for (m, _), (pair, error) in zip(refs, made, strict=True):
            if pair is None:
                failures.append(error)
            else:
                pairs.append((m, pair))
        say(f"examiner-check: {sum(p is not None for p, _ in made)} paraphrase(s) written")
    order = list(Kind)
    pairs.sort(key=lambda mp: (mp[1].task_index, order.index(mp[1].kind)))
    return pairs


async def _judge_kind(
    run: CheckRun,
    settings: CheckSettings,
    kind: str,
    tasks: list[MadeTask],
    pairs: list[tuple[MadeTask, Pair]],
    human: Sequence[HumanPair],
) -> tuple[dict[str, Any], list[PairOutcome], list[HumanOutcome]]:
    """One judge kind on every pair, and on the labelled ones: its block of the report's
    `results`, its outcomes and its labelled outcomes (the report lists them all)."""
    judge = judge_of_kind(kind, run.judge)
    calls = {
        m.check.index: JudgeCall(
            run.client,
            run.judge_role,
            False,
            grounding_for_pages(judge, m.shown, run.terms, run.page_text),
        )
        for m in tasks
    }
    outcomes = list(
        await gather_settled(
            *(
                judge_known_pair(judge, calls[m.check.index], m.task, pair, kind)
                for m, pair in pairs
            )
        )
    )
    figs = figures(outcomes, settings.resamples, settings.seed)
    ok, line = can_rank(figs)
    shown = {k: v.to_dict() for k, v in figs.items()}
    judged: list[HumanOutcome] = []
    if human:
        judged = await _judge_human_pairs(run, judge, kind, human)
        shown |= human_figures(judged, settings.resamples, settings.seed)
    result: dict[str, Any] = {
        "judge": judge.spec.model_dump(mode="json"),
        "figures": shown,
        "can_rank": ok,
        "verdict": line,
        "judged": sum(o.reconciled is not None for o in outcomes),
        "failed": sum(o.reconciled is None for o in outcomes),
    }
    return result, outcomes, judged


async def _judge_human_pairs(
    run: CheckRun, judge: Judge, kind: str, human: Sequence[HumanPair]
) -> list[HumanOutcome]:
    """The labelled pairs judged by `judge`, all with one call: they hold no pages drawn
    here, so an evidence judge looks its pages up in the snapshot (`run.page_text`)."""
    call = JudgeCall(
        run.client,
        run.judge_role,
        False,
        Grounding(run.terms(), {}, run.page_text) if reads_evidence(judge) else Grounding(),
    )
    return list(await gather_settled(*(judge_human_pair(judge, call, p, kind) for p in human)))


def _human_block(human: Sequence[HumanPair], outcomes: list[HumanOutcome]) -> dict[str, Any]:
    """The report's labelled pairs and their outcomes (only a check with labels has them)."""
    return {
        "human_pairs": [
            {"match_id": p.match_id, "round": p.round, "tie": p.tie, "labels": p.labels}
            for p in human
        ],
        "human_outcomes": [o.to_dict() for o in outcomes],
    }


def figure_parts(figure: Any) -> tuple[float, float, float, Any] | None:
    """(value, low, high, n) of a figure as the check writes it ({value, low, high, n}), or
    None: no value, or a figure in a stored report or run.json edited into another shape,
    which the printouts then show as n/a rather than fail on."""
    if not isinstance(figure, Mapping):
        return None
    parts: list[float] = []
    for key in ("value", "low", "high"):
        part = figure.get(key)
        if not isinstance(part, int | float) or isinstance(part, bool):
            return None
        try:
            parts.append(float(part))
        except OverflowError:  # an integer no float holds (10**400 written out)
            return None
    return parts[0], parts[1], parts[2], figure.get("n")


def mode_figures(block: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{judge mode: its figures} of a check's block, leaving out what is not of that shape
    (a run.json edited by hand): the printouts show what is there, never fail on it."""
    results = block.get("results")
    if not isinstance(results, Mapping):
        return {}
    out = {}
    for mode, result in results.items():
        figures = result.get("figures") if isinstance(result, Mapping) else None
        out[str(mode)] = figures if isinstance(figures, Mapping) else {}
    return out


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """The figures a run header keeps (no per-pair outcomes)."""
    dropped = ("outcomes", "tasks", "human_pairs", "human_outcomes")
    return {k: v for k, v in report.items() if k not in dropped}


FIGURE_ROWS = (
    ("accuracy", "decisive accuracy"),
    ("accuracy.wrong_subject", "  wrong subject"),
    ("accuracy.missing_width", "  missing width"),
    ("accuracy.fabricated_citation", "  fabricated citation"),
    ("accuracy.refusal", "  refusal"),
    ("accuracy.injected", "  injected verdict"),
    ("position_consistency", "position consistency"),
    ("failure_type_accuracy", "failure type (DEPTH/WIDTH)"),
    ("length_bias", "length bias (padded wins)"),
    ("tie_rate_equal", "tie rate on equal pairs"),
    ("injection_success", "injection success"),
    ("stuffed_wins", "keyword stuffing wins"),
    ("copied_wins", "pasted pages win"),
    ("paraphrase_tie_rate", "tie rate on paraphrases"),
    ("paraphrase_loses", "paraphrase loses"),
)


def table(report: Mapping[str, Any]) -> str:
    """The terminal table: one column per judge mode, value [95% interval] (n)."""
    modes = list(report["results"])
    rows = [["figure", *modes]]
    human = any("human_agreement" in report["results"][m]["figures"] for m in modes)
    for key, label in FIGURE_ROWS + (HUMAN_ROWS if human else ()):
        cells = []
        for mode in modes:
            f = report["results"][mode]["figures"].get(key)
            cells.append(_cell(f))
        rows.append([label, *cells])
    rows.append(["leak rate (questions)", _cell(report["leak_rate"]), *[""] * (len(modes) - 1)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(
        f"tasks: {len(report['tasks'])}, draws without a task: {len(report['task_failures'])}"
    )
    for mode in modes:
        lines.append(f"{mode}: {report['results'][mode]['verdict']}")
    return "\n".join(lines)


def _cell(f: Mapping[str, Any] | None) -> str:
    parts = figure_parts(f)
    if parts is None:
        return "n/a"
    value, low, high, n = parts
    return f"{value:.2f} [{low:.2f}, {high:.2f}] ({n})"
