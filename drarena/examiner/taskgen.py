"""Task generation: the Examiner writes a question and its checklists from a tree path.

Thin I/O over pure parts: the prompt is rendered from a template, page texts are quoted as
data and cut to a per-page budget (the reference shows each page whole up to its crawler's
cap, about 15k characters; an optional total cap shares a budget evenly, the older rule),
the JSON answer is schema-checked by the model
layer and then validated here (de-contextualization, traceable checklist URLs, no repeats).
A failed validation is fed back as the reason for one more try; after the last try the node
is skipped with the reasons logged, never asked half-valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from drarena.corpus.records import TreePage
from drarena.corpus.terms import UNIFORM, TermStats
from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.evolve import word_limit
from drarena.examiner.grounding import ground_task
from drarena.examiner.taskcheck import (
    Task,
    check_task,
    entity_names,
    forbidden_names,
    task_schema,
)
from drarena.models.client import ModelClient
from drarena.models.structured import complete_json
from drarena.quoting import Fitted, defang, fit_evenly, quote_block
from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class TaskAttempt(Record):
    """One try: the model call's cache key and why the task was rejected (empty if not)."""

    key: str
    reasons: tuple[str, ...]

    _tuple_fields = ("reasons",)


@dataclasses.dataclass(frozen=True, slots=True)
class TaskOutcome(Record):
    task: Task | None
    attempts: tuple[TaskAttempt, ...]
    pages_cut: tuple[str, ...]  # urls whose text was shortened to fit the prompt budget
    error: str = ""


def word_limit_instruction(limits: tuple[int, int]) -> str:
    return f"Answer in {limits[0]} to {limits[1]} words."


def fit_pages(texts: list[str], page_chars: int | None, budget_chars: int | None) -> list[Fitted]:
    """Each text cut to `page_chars` (None: whole, as the reference gives it); with a total
    budget, first shared evenly within it (water-filling, as before per-page budgets
    existed). The original length is kept."""
    shared = (
        fit_evenly(texts, budget_chars)
        if budget_chars is not None
        else [Fitted(t, len(t), False) for t in texts]
    )
    if page_chars is None:
        return shared
    return [
        Fitted(f.text[:page_chars], f.original_chars, f.cut or len(f.text) > page_chars)
        for f in shared
    ]


TITLE_CHARS = 300  # a page title in a prompt; longer ones are cut (a title is page data)


def _title(text: str) -> str:
    """A page title as prompts quote it: one line, cut to TITLE_CHARS. Why: titles are page
    data; one <title> of 50 KB would fill the prompt, and one with line breaks could add
    header lines (url:, relation:) of its own."""
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "\u2026"


def topic_line(root: TreePage) -> str:
    """The root page's title (else URL) for the prompt's OVERALL TOPIC line, which stands
    outside the quoted sources: a title line as in a source's header, and defanged as a
    quoted block is, so it cannot close a block marker."""
    return defang(_title(root.title or root.url))


def _render_pages(
    pages: Sequence[TreePage],
    page_chars: int | None,
    budget_chars: int | None,
    first: int,
    *,
    relations: bool = True,
) -> tuple[str, list[str]]:
    """Pages as quoted blocks numbered SOURCE first, first+1, ... (checklists cite them);
    without `relations` (the flat-context ablation) no page says how it links to another."""
    fitted = fit_pages([p.text for p in pages], page_chars, budget_chars)
    blocks, cut = [], []
    for i, (page, fit) in enumerate(zip(pages, fitted, strict=True), first):
        header = f"title: {_title(page.title)}\nurl: {page.url}"
        if relations:
            header += f"\nrelation: {page.relation}"
        if fit.cut:
            cut.append(page.url)
            header += f"\n(text cut to {len(fit.text)} of {fit.original_chars} characters)"
        blocks.append(quote_block(f"SOURCE {i}", f"{header}\n\n{fit.text}"))
    return "\n\n".join(blocks) or "(none)", cut


@dataclasses.dataclass(frozen=True)
class TaskRequest:
    """One round's material: the tree's root, the reasoning chain shown, the target pages,
    the node's depth (root 0), the match's earlier questions (a repeat is refused) and every
    URL of the tree. `revisits`: how many earlier questions were asked at this node (the
    extractive kind then takes later facts; a match counts its rounds at the node,
    examiner-check draws each task at a new one and says 0); None: all of them."""

    root: TreePage
    chain: tuple[TreePage, ...]
    targets: tuple[TreePage, ...]
    depth: int
    earlier_questions: tuple[str, ...] = ()
    tree_urls: tuple[str, ...] = ()
    revisits: int | None = None


@dataclasses.dataclass(frozen=True)
class TaskRules:
    """The match's rules for tasks (MatchSettings' fields of the same meaning).

    `page_chars`: each page's text cap; `page_budget_chars`: an optional cap on all of it (a
    third to the chain: it sets the logic, the targets hold the facts). `max_attempts`: tries
    before the node is skipped. `checklist_max_items`: a ceiling on each checklist (None:
    depth items <= W, width items <= 2W). `text_caps`: the length caps on the question, items
    and rationale (taskcheck.task_schema). `relations`: False for the flat-context ablation
    (the caller also passes no chain). `root_counted`: see evolve.word_limit.
    `forbid_entity_names`: a question may not name a target's entity either (its module or
    file name), not only its whole title, URL or host (taskcheck.entity_names)."""

    page_chars: int | None = 15000
    page_budget_chars: int | None = None
    max_attempts: int = 2
    checklist_max_items: int | None = None
    text_caps: bool = True
    relations: bool = True
    root_counted: bool = True
    forbid_entity_names: bool = True


@dataclasses.dataclass(frozen=True)
class TaskCall:
    """The model client and role that write tasks, and the snapshot's term statistics."""

    client: ModelClient
    role: str
    terms: TermStats = UNIFORM


@dataclasses.dataclass(frozen=True)
class _TaskPrompt:
    """A task prompt as rendered, with what checking its answer needs: the sources in the
    order the prompt numbers them, the pages whose text was cut, each source's text."""

    text: str
    sources: list[str]
    cut: tuple[str, ...]
    pages: dict[str, str]


def _task_prompt(request: TaskRequest, rules: TaskRules, prompt: str) -> _TaskPrompt:
    """The rendered template: the chain's pages numbered first, then the targets', the
    budget split a third to the chain (it sets the logic; the targets hold the facts)."""
    chain, targets = request.chain, request.targets
    budget = rules.page_budget_chars
    chain_budget = None if budget is None else budget // 3
    target_budget = None if budget is None else budget - budget // 3
    chain_text, cut_chain = _render_pages(
        chain, rules.page_chars, chain_budget, 1, relations=rules.relations
    )
    target_text, cut_targets = _render_pages(
        targets, rules.page_chars, target_budget, len(chain) + 1, relations=rules.relations
    )
    sources = [p.url for p in (*chain, *targets)]
    text = templates.render(
        prompt,
        root_topic=topic_line(request.root),
        reasoning_chain=chain_text,
        target_pages=target_text,
        width=len(targets),
        n_sources=len(sources),
        earlier_questions="\n".join(f"- {q}" for q in request.earlier_questions) or "(none)",
    )
    pages = {p.url: p.text for p in (*chain, *targets)}
    return _TaskPrompt(text, sources, tuple(cut_chain + cut_targets), pages)


def _forbidden(request: TaskRequest, rules: TaskRules) -> list[str]:
    """What a question may not name: the root's and targets' titles, URLs and hosts, and
    with `forbid_entity_names` each target's entity name too."""
    root, targets = request.root, request.targets
    forbidden = forbidden_names(
        [root.title, *(t.title for t in targets)], [root.url, *(t.url for t in targets)]
    )
    if rules.forbid_entity_names:
        forbidden += entity_names([t.title for t in targets], [t.url for t in targets])
    return forbidden


async def generate_task(
    call: TaskCall,
    request: TaskRequest,
    rules: TaskRules,
    *,
    prompt: str = "taskgen",
    ground: TermStats | None = None,
) -> TaskOutcome:
    """A task for `request` written by `call`'s model under `rules` (TaskRules says what
    each rule means). `prompt`: the template, a shipped name or a file path
    (match.taskgen_prompt). `ground`: the snapshot's term statistics to ground the checklist
    with (each item gets the passage of its page that supports it; unsupported items are
    dropped, and a list left empty fails the try with the reason:
    drarena.examiner.grounding); None: items are kept as the model wrote them (runs recorded
    before grounding). `call.terms` is not read: grounding is the caller's choice."""
    if not request.targets:
        raise DrarenaError("generate_task: no target pages")
    limits = word_limit(len(request.targets), request.depth, root_counted=rules.root_counted)
    instruction = word_limit_instruction(limits)
    rendered = _task_prompt(request, rules, prompt)
    schema = task_schema(
        len(rendered.sources),
        len(request.targets),
        max_items=rules.checklist_max_items,
        text_caps=rules.text_caps,
    )
    forbidden = _forbidden(request, rules)

    def check(raw: dict[str, Any]) -> tuple[Task | None, list[str]]:
        task, reasons = check_task(
            raw,
            sources=rendered.sources,
            forbidden=forbidden,
            tree_urls=request.tree_urls,
            earlier_questions=request.earlier_questions,
            word_limit=limits,
            word_limit_instruction=instruction,
        )
        if task is not None and ground is not None:
            return ground_task(task, rendered.pages, ground)
        return task, reasons

    task, attempts, error = await ask_until_valid(
        call.client, call.role, rendered.text, schema, "task", check, rules.max_attempts
    )
    return TaskOutcome(task, tuple(attempts), rendered.cut, error=error)


T = TypeVar("T")


async def ask_until_valid(
    client: ModelClient,
    role: str,
    prompt: str,
    schema: dict[str, Any],
    what: str,
    check: Callable[[dict[str, Any]], tuple[T | None, list[str]]],
    max_attempts: int,
) -> tuple[T | None, list[TaskAttempt], str]:
    """Ask for schema-valid JSON and check it by code; a refused reply is fed back with its
    reasons ("That task is invalid: ... Write a corrected task as JSON only.") for the next
    of `max_attempts` tries. Returns what `check` made (None when every try was refused or
    the call failed), every try with its reasons, and the error ("" on success)."""
    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    attempts: list[TaskAttempt] = []
    for _ in range(max_attempts):
        try:
            raw, completion = await complete_json(client, role, messages, schema, name=what)
        except DrarenaError as exc:
            return None, attempts, str(exc)
        made, reasons = check(raw)
        attempts.append(TaskAttempt(completion.key, tuple(reasons)))
        if made is not None:
            return made, attempts, ""
        messages += [
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": f"That {what} is invalid: "
                + "; ".join(reasons)
                + f". Write a corrected {what} as JSON only.",
            },
        ]
    last = "; ".join(attempts[-1].reasons) if attempts else "no attempt"
    return None, attempts, f"{what} rejected after {len(attempts)} tries: {last}"
