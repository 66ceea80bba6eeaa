"""The evidence judge: each answer graded by code against the pages' own words (pure).

Why: a generative judge on a CPU model cannot rank (issue 33: Qwen2.5-Coder-1.5B put
closed_book above the oracle), and on a GPU nothing said how far an LLM judge agrees with what
the frozen pages say. Every checklist item carries a passage of its cited page (`evidence`,
drarena.examiner.grounding); this judge decides, for each answer and item, whether the answer
states that passage's facts, with no generative call, and derives the round's verdict with the
same rule as pointwise grading (`derive`: depth first, then width).

An item is satisfied by an answer when, in the answer's best window of one or two sentences:
- the weighted recall of the item's key terms is at least `recall_min`. Key terms are the
  item's content stems that its evidence also holds (what the page proves), minus every stem
  of the question: an answer that echoes the question's words gains nothing (issue 33's
  "security considerations" item was won that way). Weights are the snapshot's term
  statistics (rare words count, "python" on the Python docs does not);
- and its hard tokens are right: the numbers, versions, dates and identifiers among the key
  terms occur in the answer exactly (all of them when there are one or two, at least half
  when more). "RFC 4684" is not "RFC 4648", however many words it shares.

Guards, per answer, before any item counts (each measured in docs/validity.md):
- stuffed: at least GUARD_MIN_WORDS words and a function-word share under
  `function_ratio_min` times the round's pages' own (prose is about 0.4, code-heavy pages
  less; 27 rare words of the evidence are 0);
- copied: at least `copy_share_max` of its 8-word runs occur in the round's pages and a run
  of at least `copy_run_words` copied words in a row (a page pasted, whole or cut to the
  limit; an answer quoting the sentences it needs is not one run);
- too long: over `length_factor` times the word limit's upper bound.
A guarded answer satisfies no item.

Citations: a satisfied item is `cited` when one of the answer's cited pages holds the item's
evidence. On equal items, the answer with more cited items wins by BETTER, its opponent's
failure NONE (a fabricated citation then loses to the real one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from drarena.corpus.terms import (
    UNIFORM,
    TermStats,
    content_stems,
    function_share,
    hard_tokens,
    normalised,
    sentences,
    shingles,
    words,
)
from drarena.examiner.grounding import at_least, occurs, ratio, weighted_share, windows
from drarena.examiner.pointwise import derive
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.examiner.verdicts import FailureType, Judgment, Verdict
from drarena.records import Record

GUARD_MIN_WORDS = 8  # shorter answers are too short to call stuffed or copied
SHINGLE = 8
DEFAULT_FUNCTION_SHARE = 0.4  # English prose, when the round's pages are not known
SENTENCE_CHARS = 300  # the best window as kept in the record


class EvidenceArgs(BaseModel):
    """The evidence judge's thresholds: calibrated constants (docs/validity.md, "The
    evidence judge"), recorded in run.json with the judge's kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recall_min: float = Field(
        0.5, gt=0, le=1, description="weighted recall of an item's key terms in one window"
    )
    hard_min: float = Field(
        0.5,
        ge=0,
        le=1,
        description="share of an item's numbers and identifiers the answer must hold when "
        "it has more than two (one or two: all)",
    )
    function_ratio_min: float = Field(
        0.5,
        ge=0,
        le=1,
        description="stuffing guard: an answer's share of function words must reach this "
        "times the round's pages' own share (prose about 0.4, code-heavy pages less)",
    )
    copy_share_max: float = Field(
        0.9, gt=0, le=1, description="copy guard: share of 8-word runs found in the round's pages"
    )
    copy_run_words: int = Field(
        50, ge=SHINGLE, description="copy guard: the longest copied run must reach this"
    )
    length_factor: float = Field(
        2.0, ge=1, description="length guard: words over this times the limit's upper bound"
    )
    cite_tiebreak: bool = Field(
        True, description="equal items: more items cited to a page that holds them wins"
    )
    nuance_min: float | None = Field(
        None,
        gt=0,
        description="equal items and citations: the answer holding at least this much more "
        "of its missed items' key terms (summed recall) wins, the paper's 'nuance winner'; "
        "None: off",
    )


@dataclasses.dataclass(frozen=True)
class Grounding:
    """What the evidence judge reads besides the task and the answers: the snapshot's term
    statistics, the round's pages (URL -> text: the copy guard's source) and a lookup of any
    snapshot page by URL (citation support; None: citations are not checked)."""

    terms: TermStats = UNIFORM
    pages: Mapping[str, str] = dataclasses.field(default_factory=dict)
    page_text: Callable[[str], str | None] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class EvidenceItem(Record):
    """One item of one answer: the best window's recall of the key terms, the hard tokens
    found of those wanted, the window itself (cut), whether it counts, and whether a cited
    page holds the evidence (None: not satisfied, or nothing could be checked)."""

    _omit_if_none: ClassVar[tuple[str, ...]] = ("cited",)

    item: str
    kind: str  # "depth" or "width"
    recall: float
    hard_found: int
    hard_wanted: int
    sentence: str
    verified: bool
    cited: bool | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerEvidence(Record):
    """All items of one answer, and the guards' measures. `guard`: "" or the guard that
    voided every item (stuffed, copied, too_long)."""

    items: tuple[EvidenceItem, ...]
    words: int
    function_share: float
    copied_share: float
    copied_run: int
    guard: str

    def satisfied(self, kind: str) -> int:
        return sum(1 for i in self.items if i.kind == kind and i.verified)

    def cited(self) -> int:
        return sum(1 for i in self.items if i.verified and i.cited)

    def nuance(self) -> float:
        """How much of the facts it missed an answer still holds: the summed recall of its
        unsatisfied items' key terms (0 for a guarded answer, whose items all count for
        nothing). The paper's judge prefers, between two answers that both fail an item,
        the one whose failure is "less catastrophic" and that "synthesised related useful
        information" (appendix A, the pairwise prompt); this is that, read off the page
        evidence instead of asked of a model."""
        if self.guard:
            return 0.0
        return round(sum(i.recall for i in self.items if not i.verified), 4)


@dataclasses.dataclass(frozen=True, slots=True)
class EvidenceJudgment(Record):
    """Both answers' grades, in the match's A/B order, and the verdict derived from them."""

    a: AnswerEvidence
    b: AnswerEvidence
    derived: Judgment


@dataclasses.dataclass(frozen=True, slots=True)
class Keys:
    """What an item asks of an answer: its key stems and its hard tokens."""

    stems: tuple[str, ...]
    hard: frozenset[str]


def item_keys(item: ChecklistItem, question: str, page: str | None = None) -> Keys:
    """The item's content stems that its cited page holds (`page`; else its evidence; all
    of them for an item with neither), minus the question's; its hard tokens likewise.
    The page, not only the evidence passage: a passage often says "this variable" where
    the item names it, two sentences after the name."""
    asked = set(content_stems(question))
    proof = page or item.evidence
    proved = set(content_stems(proof)) if proof else None
    stems = tuple(
        s
        for s in dict.fromkeys(content_stems(item.item))
        if s not in asked and (proved is None or s in proved)
    )
    hard = hard_tokens(item.item)
    if proof:
        hard &= hard_tokens(proof) | set(normalised(proof).split())
    return Keys(stems, frozenset(hard - hard_tokens(question)))


NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}


def answer_hard_tokens(report: str) -> set[str]:
    """The answer's hard tokens, its plain words (a number written alone) and the digits of
    number words ("zero" is 0)."""
    plain = normalised(report).split()
    return hard_tokens(report) | set(plain) | {NUMBER_WORDS[w] for w in plain if w in NUMBER_WORDS}


def hard_found_in(token: str, answer_hard: set[str]) -> bool:
    """The hard token is in the answer whole, or, for a dotted name, by its last part
    ("LargeZipFile" for "zipfile.LargeZipFile": an answer need not spell the module)."""
    if token in answer_hard:
        return True
    tail = token.rsplit(".", 1)[-1]
    return "." in token and not tail.isdigit() and len(tail) >= 3 and tail in answer_hard


def hard_ok(found: int, wanted: int, share: float) -> bool:
    """All hard tokens when there are one or two, else at least `share` of them."""
    if wanted <= 2:
        return found == wanted
    return at_least(found, wanted, share)


def copy_measures(answer: str, pages: Sequence[str]) -> tuple[float, int]:
    """(share of the answer's 8-word runs that occur in `pages`, the longest run of words
    copied in a row), 0 for an answer shorter than one run."""
    runs = shingles(answer, SHINGLE)
    if not runs:
        return 0.0, 0
    known = {s for p in pages for s in shingles(p, SHINGLE)}
    hits = [r in known for r in runs]
    longest = current = 0
    for hit in hits:
        current = current + 1 if hit else 0
        longest = max(longest, current)
    return round(sum(hits) / len(hits), 4), longest + SHINGLE - 1 if longest else 0


def guard(
    answer: str, word_limit: tuple[int, int], pages: Sequence[str], args: EvidenceArgs
) -> tuple[str, int, float, float, int]:
    """(the guard that trips or "", words, function share, copied share, longest copied
    run)."""
    n = len(words(answer))
    share = round(function_share(answer), 4)
    copied, run = copy_measures(answer, pages)
    prose = function_share(" ".join(pages)) if pages else DEFAULT_FUNCTION_SHARE
    if n > args.length_factor * word_limit[1]:
        return "too_long", n, share, copied, run
    if n >= GUARD_MIN_WORDS and share < args.function_ratio_min * prose:
        return "stuffed", n, share, copied, run
    if n >= GUARD_MIN_WORDS and copied >= args.copy_share_max and run >= args.copy_run_words:
        return "copied", n, share, copied, run
    return "", n, share, copied, run


def grade_item(
    item: ChecklistItem,
    kind: str,
    keys: Keys,
    answer_windows: Sequence[tuple[str, set[str]]],
    answer_hard: set[str],
    terms: TermStats,
    args: EvidenceArgs,
) -> EvidenceItem:
    """One item against one answer's windows (each with its stems)."""
    best, best_found, total = "", -1, 0
    for text, stems in answer_windows:
        found, total = weighted_share(keys.stems, stems, terms)
        if found > best_found:
            best, best_found = text, found
    best_found = max(best_found, 0)
    hard_found = sum(1 for t in keys.hard if hard_found_in(t, answer_hard))
    verified = (
        bool(keys.stems)
        and at_least(best_found, total, args.recall_min)
        and hard_ok(hard_found, len(keys.hard), args.hard_min)
    )
    return EvidenceItem(
        item.item,
        kind,
        ratio(best_found, total),
        hard_found,
        len(keys.hard),
        best[:SENTENCE_CHARS],
        verified,
    )


def grade_answer(
    task: Task,
    report: str,
    urls: Sequence[str],
    grounding: Grounding,
    args: EvidenceArgs,
) -> AnswerEvidence:
    """Every item of `task` against one answer (its report and cited URLs)."""
    tripped, n, share, copied, run = guard(
        report, task.word_limit, list(grounding.pages.values()), args
    )
    parts = sentences(report, min_words=1)
    answer_windows = [(w, set(content_stems(w))) for w in windows(parts)]
    answer_hard = answer_hard_tokens(report)
    cited_pages = [t for t in (_page(grounding, u) for u in urls) if t]
    items = []
    for kind, checklist in (("depth", task.checklist_depth), ("width", task.checklist_width)):
        for item in checklist:
            keys = item_keys(item, task.question, grounding.pages.get(item.source_url))
            graded = grade_item(
                item, kind, keys, answer_windows, answer_hard, grounding.terms, args
            )
            if tripped:
                graded = dataclasses.replace(graded, verified=False)
            elif graded.verified and grounding.page_text is not None:
                proof = item.evidence or item.item
                graded = dataclasses.replace(
                    graded, cited=any(occurs(proof, page) for page in cited_pages)
                )
            items.append(graded)
    return AnswerEvidence(tuple(items), n, share, copied, run, tripped)


def _page(grounding: Grounding, url: str) -> str | None:
    if grounding.page_text is None:
        return None
    return grounding.pages.get(url) or grounding.page_text(url)


def decide(a: AnswerEvidence, b: AnswerEvidence, args: EvidenceArgs | None = None) -> Judgment:
    """`derive`'s verdict from the satisfied items. Equal items go to the answer with more
    items cited to a page that holds them (`cite_tiebreak`), then, with `nuance_min` set, to
    the answer that holds clearly more of the facts both missed (`AnswerEvidence.nuance`);
    either way BETTER, the loser's failure NONE (it failed no item the winner satisfied)."""
    opts = args or EvidenceArgs()
    judged = derive(a, b)
    if judged.verdict != Verdict.TIE:
        return judged
    if opts.cite_tiebreak and a.cited() != b.cited():
        return _better(a.cited() > b.cited())
    if opts.nuance_min is not None:
        gap = a.nuance() - b.nuance()
        if abs(gap) >= opts.nuance_min:
            return _better(gap > 0)
    return judged


def _better(a_wins: bool) -> Judgment:
    return Judgment(Verdict.A_BETTER if a_wins else Verdict.B_BETTER, None, FailureType.NONE)


def judge_evidence(
    task: Task,
    a: tuple[str, Sequence[str]],
    b: tuple[str, Sequence[str]],
    grounding: Grounding,
    args: EvidenceArgs | None = None,
) -> EvidenceJudgment:
    """Grade answers `a` and `b` (each a report and its cited URLs) and decide."""
    opts = args or EvidenceArgs()
    ga = grade_answer(task, a[0], a[1], grounding, opts)
    gb = grade_answer(task, b[0], b[1], grounding, opts)
    return EvidenceJudgment(ga, gb, decide(ga, gb, opts))
