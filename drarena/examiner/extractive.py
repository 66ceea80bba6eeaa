"""The extractive task generator: code picks the facts, the model only asks for them.

Why (issue 33): the checklist is the weak link. A model that writes both the question and its
grading key from pages writes items no page supports (3 of 11 on Qwen2.5-Coder-1.5B; all 25
on SmolLM2). Here code picks the nuggets first, each a sentence of a target page, so every
item is supported by construction (its evidence is itself), and the model only writes a
question whose full answer needs them, checked as every task is (no page named, no repeat)
and for one more leak: a question that states a nugget's key words gives that item away.

Nuggets: sentences of 8 to 45 words that read as prose (a function-word share of at least
0.2; code lines have none), scored by the weights of their rarest content words in the
snapshot plus a bonus for numbers, versions and identifiers: what a closed-book model cannot
guess and a searching agent can find. Depth: the best sentence of the current node's page
(its identity); width: the best remaining sentence of every target page, so the answer must
combine all of them. Later questions of a match at the same pages take the next-best
sentences (`skip`), so a match does not ask one fact twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from drarena.corpus.records import TreePage
from drarena.corpus.terms import TermStats, content_stems, function_share, hard_tokens, sentences
from drarena.examiner import templates
from drarena.examiner.grounding import weighted_share
from drarena.examiner.taskcheck import ChecklistItem, Task, leaked_names
from drarena.quoting import defang, quote_block

NUGGET_MIN_WORDS = 8
NUGGET_MAX_WORDS = 45
NUGGET_MIN_FUNCTION = 0.2
RARE_TERMS = 5  # a sentence's score sums its rarest content stems' weights
HARD_BONUS = 1500  # per number or identifier, up to two
KEY_LEFT_MIN = 0.5  # weighted share of a nugget's key words the question must leave unsaid
QUESTION_MAX_WORDS = 70


@dataclasses.dataclass(frozen=True, slots=True)
class Nugget:
    """One fact to ask for: the sentence, the page it is from, depth or width, its score."""

    text: str
    url: str
    kind: str
    score: int


def score(sentence: str, terms: TermStats) -> int:
    weights = sorted({terms.weight(s) for s in content_stems(sentence)}, reverse=True)
    return sum(weights[:RARE_TERMS]) + HARD_BONUS * min(2, len(hard_tokens(sentence)))


def candidates(page: TreePage, terms: TermStats) -> list[Nugget]:
    """The page's nugget sentences, best first (the earlier on equal scores)."""
    out = []
    seen: set[str] = set()
    for text in sentences(page.text):
        n = len(text.split())
        if not NUGGET_MIN_WORDS <= n <= NUGGET_MAX_WORDS or text in seen:
            continue
        seen.add(text)
        if function_share(text) < NUGGET_MIN_FUNCTION:
            continue
        out.append(Nugget(text, page.url, "", score(text, terms)))
    return sorted(out, key=lambda g: -g.score)


def pick_nuggets(targets: Sequence[TreePage], terms: TermStats, skip: int = 0) -> list[Nugget]:
    """The depth nugget of the current node (targets[0]) and one width nugget per target,
    each the (skip+1)-th best sentence still free (fewer when a page has too few)."""
    pools = [candidates(page, terms) for page in targets]
    used: set[str] = set()
    out: list[Nugget] = []

    def take(pool: list[Nugget], kind: str) -> None:
        free = [g for g in pool if g.text not in used]
        if free:
            chosen = free[min(skip, len(free) - 1)]
            used.add(chosen.text)
            out.append(dataclasses.replace(chosen, kind=kind))

    if pools:
        take(pools[0], "depth")
    for pool in pools:
        take(pool, "width")
    return out


def prompt_text(
    template: str,
    root_topic: str,
    chain: Sequence[TreePage],
    nuggets: Sequence[Nugget],
    forbidden: Sequence[str],
    earlier: Sequence[str],
) -> str:
    facts = "\n\n".join(
        quote_block(f"FACT {i}", f"({g.kind}) {g.text}") for i, g in enumerate(nuggets, 1)
    )
    context = " > ".join(defang(" ".join(p.title.split())[:120]) for p in chain) or "(none)"
    names = ", ".join(sorted({defang(" ".join(n.split())[:80]) for n in forbidden if n}))
    return templates.render(
        template,
        root_topic=root_topic,
        context=context,
        facts=facts,
        n_facts=len(nuggets),
        forbidden=names or "(none)",
        earlier_questions="\n".join(f"- {q}" for q in earlier) or "(none)",
        max_words=QUESTION_MAX_WORDS,
    )


def question_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": 500},
            "rationale": {"type": "string", "maxLength": 300},
        },
        "required": ["question", "rationale"],
        "additionalProperties": False,
    }


def given_away(question: str, nugget: Nugget, terms: TermStats) -> bool:
    """The question states most of the nugget's key words (weighted): the item is then
    answered by echoing the question, so the question gives the fact away."""
    stems = content_stems(nugget.text)
    asked = set(content_stems(question))
    said, total = weighted_share(stems, asked, terms)
    return total == 0 or (total - said) * 10000 < round(KEY_LEFT_MIN * 10000) * total


def check_question(
    raw: dict[str, Any],
    nuggets: Sequence[Nugget],
    *,
    forbidden: Sequence[str],
    earlier: Sequence[str],
    terms: TermStats,
    word_limit: tuple[int, int],
    word_limit_instruction: str,
) -> tuple[Task | None, list[str]]:
    """The task (the nuggets as its checklist, each its own evidence), or None with the
    reasons fed back to the model."""
    question = " ".join(str(raw.get("question", "")).split())
    reasons = []
    if not question:
        reasons.append("the question is empty")
    elif len(question.split()) > QUESTION_MAX_WORDS:
        reasons.append(f"the question is over {QUESTION_MAX_WORDS} words")
    leaks = leaked_names(question, forbidden)
    if leaks:
        reasons.append(f"the question names its sources: {', '.join(leaks)}")
    if any(
        " ".join(question.casefold().split()) == " ".join(q.casefold().split()) for q in earlier
    ):
        reasons.append("the question repeats an earlier question of this match")
    for i, g in enumerate(nuggets, 1):
        if question and given_away(question, g, terms):
            reasons.append(
                f"the question states FACT {i} itself: ask for it in other words, so the "
                "agent must find it"
            )
    if reasons:
        return None, reasons
    item = {
        kind: tuple(ChecklistItem(g.text, g.url, g.text, 1.0) for g in nuggets if g.kind == kind)
        for kind in ("depth", "width")
    }
    return (
        Task(
            question,
            word_limit_instruction,
            word_limit,
            item["depth"],
            item["width"],
            str(raw.get("rationale", ""))[:300],
        ),
        [],
    )
