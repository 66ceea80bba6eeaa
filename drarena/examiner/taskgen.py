"""Task generation: the Examiner writes a question and its checklists from a tree path.

Thin I/O over pure parts: the prompt is rendered from a template, page texts are quoted as
data and cut evenly to the context budget, the JSON answer is schema-checked by the model
layer and then validated here (de-contextualization, traceable checklist URLs, no repeats).
A failed validation is fed back as the reason for one more try; after the last try the node
is skipped with the reasons logged, never asked half-valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from drarena.corpus.records import TreePage
from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.evolve import word_limit
from drarena.examiner.taskcheck import Task, check_task, forbidden_names, task_schema
from drarena.models.client import ModelClient
from drarena.models.structured import complete_json
from drarena.quoting import fit_evenly, quote_block
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


def _render_pages(
    pages: Sequence[TreePage], budget_chars: int, first: int
) -> tuple[str, list[str]]:
    """Pages as quoted blocks numbered SOURCE first, first+1, ... (checklists cite them)."""
    fitted = fit_evenly([p.text for p in pages], budget_chars)
    blocks, cut = [], []
    for i, (page, fit) in enumerate(zip(pages, fitted, strict=True), first):
        header = f"title: {page.title}\nurl: {page.url}\nrelation: {page.relation}"
        if fit.cut:
            cut.append(page.url)
            header += f"\n(text cut to {len(fit.text)} of {fit.original_chars} characters)"
        blocks.append(quote_block(f"SOURCE {i}", f"{header}\n\n{fit.text}"))
    return "\n\n".join(blocks) or "(none)", cut


async def generate_task(
    client: ModelClient,
    role: str,
    *,
    root: TreePage,
    chain: Sequence[TreePage],
    targets: Sequence[TreePage],
    depth: int,
    earlier_questions: Sequence[str],
    tree_urls: Sequence[str],
    page_budget_chars: int,
    max_attempts: int = 2,
) -> TaskOutcome:
    if not targets:
        raise DrarenaError("generate_task: no target pages")
    width = len(targets)
    limits = word_limit(width, depth)
    instruction = word_limit_instruction(limits)
    # the chain gets a third of the budget: it sets the logic, the targets hold the facts
    chain_text, cut_chain = _render_pages(chain, page_budget_chars // 3, 1)
    target_text, cut_targets = _render_pages(
        targets, page_budget_chars - page_budget_chars // 3, len(chain) + 1
    )
    sources = [p.url for p in (*chain, *targets)]
    prompt = templates.render(
        "taskgen",
        root_topic=root.title or root.url,
        reasoning_chain=chain_text,
        target_pages=target_text,
        width=width,
        n_sources=len(sources),
        earlier_questions="\n".join(f"- {q}" for q in earlier_questions) or "(none)",
    )
    schema = task_schema(len(sources), len(targets))
    forbidden = forbidden_names(
        [root.title, *(t.title for t in targets)], [root.url, *(t.url for t in targets)]
    )
    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    attempts: list[TaskAttempt] = []
    cut = tuple(cut_chain + cut_targets)
    for _ in range(max_attempts):
        try:
            raw, completion = await complete_json(client, role, messages, schema, name="task")
        except DrarenaError as exc:
            return TaskOutcome(None, tuple(attempts), cut, error=str(exc))
        task, reasons = check_task(
            raw,
            sources=sources,
            forbidden=forbidden,
            tree_urls=tree_urls,
            earlier_questions=earlier_questions,
            word_limit=limits,
            word_limit_instruction=instruction,
        )
        attempts.append(TaskAttempt(completion.key, tuple(reasons)))
        if task is not None:
            return TaskOutcome(task, tuple(attempts), cut)
        messages += [
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": "That task is invalid: "
                + "; ".join(reasons)
                + ". Write a corrected task as JSON only.",
            },
        ]
    last = "; ".join(attempts[-1].reasons) if attempts else "no attempt"
    return TaskOutcome(
        None, tuple(attempts), cut, error=f"task rejected after {len(attempts)} tries: {last}"
    )
