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
from collections.abc import Mapping
from typing import Any

from drarena.corpus.records import Doc, Tree, TreePage
from drarena.corpus.treewalk import CannotExpand, Expander, TreeWalker
from drarena.errors import DrarenaError
from drarena.examiner.judge import AnswerForJudge, JudgeMode, JudgeOptions, judge_answers
from drarena.examiner.taskcheck import Task
from drarena.examiner.taskgen import generate_task
from drarena.examiner.verdicts import Judgment, reconcile
from drarena.models.client import ModelClient
from drarena.records import Record
from drarena.settle import gather_settled
from drarena.validity.leaks import question_leaks, site_segments
from drarena.validity.pairs import Pair, build_pairs
from drarena.validity.stats import (
    MIN_ACCURACY,
    MIN_ACCURACY_LOW,
    MIN_CONSISTENCY,
    PairOutcome,
    can_rank,
    figure,
    figures,
)

SCHEMA_VERSION = 1
MODES = tuple(m.value for m in JudgeMode)
CONTENT_RICH = 500


@dataclasses.dataclass(frozen=True, slots=True)
class CheckSettings(Record):
    """`pairs`: tasks to generate, each giving one pair of every kind."""

    pairs: int = 3
    seed: int = 0
    modes: tuple[str, ...] = ("pairwise",)
    page_budget_chars: int = 4000
    task_attempts: int = 2
    resamples: int = 1000


def check_modes(modes: tuple[str, ...]) -> None:
    """DrarenaError (one line) unless `modes` names judge modes, each once. The command calls
    it before it starts a model, so a typo costs nothing."""
    if not modes:
        raise DrarenaError("--modes: name at least one judge mode")
    for i, mode in enumerate(modes):
        if mode not in MODES:
            raise DrarenaError(f"--modes: unknown judge mode {mode!r} (one of {', '.join(MODES)})")
        if mode in modes[:i]:
            raise DrarenaError(f"--modes: {mode!r} is named twice")


@dataclasses.dataclass(frozen=True, slots=True)
class CheckTask(Record):
    index: int
    tree: str
    node: str
    target_urls: tuple[str, ...]
    question: str
    leaks: tuple[str, ...]


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


async def make_tasks(
    client: ModelClient,
    role: str,
    trees: Mapping[str, Tree],
    pages: Mapping[str, Doc],
    settings: CheckSettings,
    expander: Expander | None = None,
) -> tuple[list[tuple[CheckTask, Task, list[TreePage], TreePage]], list[str]]:
    """Up to `settings.pairs` valid tasks, at distinct nodes drawn tree by tree (in id order)
    with a generator seeded by (seed, tree, draw); each with its pages and a distractor.
    Returns the tasks and the reasons of the draws that gave none."""
    if not trees:
        raise DrarenaError("examiner-check: the snapshot has no Information Trees")
    ids = sorted(trees)
    site = site_segments([d.title for d in pages.values()])
    out: list[tuple[CheckTask, Task, list[TreePage], TreePage]] = []
    failures: list[str] = []
    used: set[tuple[str, str]] = set()
    for draw in range(settings.pairs * 3):
        if len(out) >= settings.pairs:
            break
        tree = trees[ids[draw % len(ids)]]
        rng = random.Random(_seed(settings.seed, tree.id, draw))
        walker = TreeWalker(tree=tree, pages=pages, rng=rng, expander=expander)
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
        outcome = await generate_task(
            client,
            role,
            root=root,
            chain=chain,
            targets=targets,
            depth=len(path) - 1,
            earlier_questions=[c.question for c, *_ in out],
            tree_urls=[n.url for n in walker.tree.nodes],
            page_budget_chars=settings.page_budget_chars,
            max_attempts=settings.task_attempts,
        )
        if outcome.task is None:
            failures.append(f"{tree.id}: {outcome.error}")
            continue
        task = outcome.task
        shown = [*chain, *targets]
        distractor = _distractor(pages, {p.url for p in shown}, rng)
        leaks = question_leaks(task.question, targets, site)
        check = CheckTask(
            len(out), tree.id, path[-1], tuple(t.url for t in targets), task.question, tuple(leaks)
        )
        out.append((check, task, shown, distractor))
    return out, failures


def _failure(j: Judgment) -> str:
    return j.loser_failure_type.value


async def judge_known_pair(
    client: ModelClient, role: str, task: Task, pair: Pair, options: JudgeOptions
) -> PairOutcome:
    """One pair in both orders, from the reference's side; a judge failure is recorded."""
    try:
        first, second, reconciled = await _judge(
            client, role, task, pair.reference, pair.other, options
        )
    except DrarenaError as exc:
        mode = options.mode.value
        return PairOutcome(pair.task_index, pair.kind, mode, None, None, None, error=str(exc)[:300])
    return PairOutcome(
        pair.task_index,
        pair.kind,
        options.mode.value,
        first.verdict.signed,
        second.verdict.signed,
        reconciled.verdict.signed,
        _failure(reconciled),
    )


async def _judge(
    client: ModelClient,
    role: str,
    task: Task,
    ref: AnswerForJudge,
    other: AnswerForJudge,
    options: JudgeOptions,
) -> tuple[Judgment, Judgment, Judgment]:
    """(reference-as-A judgment, reference-as-B judgment mapped back, reconciled).

    Pairwise: one judge_answers call judges both orders. Pointwise and both: the verdict of
    (reference, other) and of (other, reference) mapped back, reconciled as the pairwise
    orders are (pointwise grades each answer alone, so the second call's grades come from
    the cache; the two agree unless a tie-break in `both` mode follows the position)."""
    opts = dataclasses.replace(options, orders=2, swap=False)
    if opts.mode == JudgeMode.PAIRWISE:
        pj = await judge_answers(client, role, task, ref, other, opts)
        assert pj.ab is not None and pj.ba is not None  # orders: 2
        return pj.ab.raw.judgment, pj.ba.raw.judgment.swapped(), pj.reconciled
    one, two = await gather_settled(
        judge_answers(client, role, task, ref, other, opts),
        judge_answers(client, role, task, other, ref, opts),
    )
    first, second = one.reconciled, two.reconciled.swapped()
    return first, second, reconcile(first, second)


async def examiner_check(
    client: ModelClient,
    role: str,
    trees: Mapping[str, Tree],
    pages: Mapping[str, Doc],
    settings: CheckSettings,
    expander: Expander | None = None,
    *,
    judge_role: str | None = None,
    options: JudgeOptions | None = None,
) -> dict[str, Any]:
    """Run the check; returns the report (JSON-ready, deterministic given seed and cache).

    `role` writes the tasks, `judge_role` (default: `role`) judges; `options`: the judging
    a tournament uses (its prompt, checklist switch); each of `settings.modes` replaces its
    mode, and every pair is judged in both orders whatever its `orders` says."""
    judge = judge_role or role
    base = options or JudgeOptions()
    check_modes(settings.modes)
    tasks, failures = await make_tasks(client, role, trees, pages, settings, expander)
    known = {d.url for d in pages.values()} | {a for d in pages.values() for a in d.aliases}
    pairs = [
        (task, pair)
        for check, task, shown, distractor in tasks
        for pair in build_pairs(check.index, task, shown, distractor, known)
    ]
    results: dict[str, Any] = {}
    outcomes_all: list[PairOutcome] = []
    for mode in settings.modes:
        outcomes = list(
            await gather_settled(
                *(
                    judge_known_pair(
                        client, judge, task, pair, dataclasses.replace(base, mode=JudgeMode(mode))
                    )
                    for task, pair in pairs
                )
            )
        )
        outcomes_all += outcomes
        figs = figures(outcomes, settings.resamples, settings.seed)
        ok, line = can_rank(figs)
        results[mode] = {
            "figures": {k: v.to_dict() for k, v in figs.items()},
            "can_rank": ok,
            "verdict": line,
            "judged": sum(o.reconciled is not None for o in outcomes),
            "failed": sum(o.reconciled is None for o in outcomes),
        }
    leak = figure([int(bool(c.leaks)) for c, *_ in tasks], settings.resamples, settings.seed)
    first = results[settings.modes[0]]
    return {
        "schema_version": SCHEMA_VERSION,
        "settings": settings.to_dict(),
        "taskgen_role": role,
        "judge_role": judge,
        "examiner_model": client.role(judge).model,
        "judge_prompt": base.prompt,
        "thresholds": {
            "min_accuracy": MIN_ACCURACY,
            "min_accuracy_low": MIN_ACCURACY_LOW,
            "min_consistency": MIN_CONSISTENCY,
        },
        "tasks": [c.to_dict() for c, *_ in tasks],
        "task_failures": failures,
        "leak_rate": leak.to_dict(),
        "results": results,
        "can_rank": first["can_rank"],
        "verdict": first["verdict"],
        "outcomes": [o.to_dict() for o in outcomes_all],
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
    return {k: v for k, v in report.items() if k not in ("outcomes", "tasks")}


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
)


def table(report: Mapping[str, Any]) -> str:
    """The terminal table: one column per judge mode, value [95% interval] (n)."""
    modes = list(report["results"])
    rows = [["figure", *modes]]
    for key, label in FIGURE_ROWS:
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
