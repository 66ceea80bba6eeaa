"""The evidence judge pinned on hand-written answers (pure: no model, no encoder).

Each case is one way an answer can look right or wrong to a judge that counts words: a
paraphrase, keyword stuffing, a pasted page, a number off by one digit, the question's own
words echoed, a right fact cited to a page that lacks it. The page is a real-looking one (the
cgi module's docs, cut), the statistics a small hand-made corpus.
"""

from __future__ import annotations

import pytest

from drarena.corpus.terms import TermStats
from drarena.examiner.evidence import (
    EvidenceArgs,
    Grounding,
    decide,
    grade_answer,
    item_keys,
    judge_evidence,
)
from drarena.examiner.grounding import best_evidence
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.examiner.verdicts import FailureType, Verdict

CGI = "http://docs.test/library/cgi.html"
OTHER = "http://docs.test/library/json.html"
PAGE = (
    "cgi — Common Gateway Interface support\n"
    "Source code: Lib/cgi.py\n"
    "Deprecated since version 3.11, will be removed in version 3.13: The cgi module is "
    "deprecated\n(see PEP 594 for details and alternatives).\n"
    "The global variable maxlen can be set to an integer indicating the maximum\n"
    "size of a POST request. POST requests larger than this size will result in a\n"
    "ValueError being raised during parsing. The default value of this\n"
    "variable is 0, meaning the request size is unlimited.\n"
    "A CGI script is invoked by an HTTP server, usually to process user input\n"
    "submitted through an HTML form.\n"
)
JSON_PAGE = (
    "json — JSON encoder and decoder\n"
    "JSON is a lightweight data interchange format inspired by JavaScript object literal "
    "syntax. The json module exposes an API familiar to users of the marshal and pickle "
    "modules.\n"
)
CORPUS = [
    PAGE,
    JSON_PAGE,
    "The os module provides a portable way of using operating system dependent "
    "functionality. The default value is used when the variable is unset.",
    "The request object holds the value of the size field and the default timeout.",
    "A module is a file containing Python definitions and statements. The value of a "
    "variable can be set at run time.",
]
TERMS = TermStats.build(CORPUS)
QUESTION = "How large may a POST request be by default in the deprecated gateway interface module?"
ITEM_TEXT = "The maxlen variable defaults to 0, meaning the request size is unlimited."
ITEM = ChecklistItem(ITEM_TEXT, CGI, best_evidence(ITEM_TEXT, PAGE, TERMS).text, None)
WIDTH = ChecklistItem(
    "The cgi module is deprecated since version 3.11 and will be removed in 3.13.",
    CGI,
    "Deprecated since version 3.11, will be removed in version 3.13: The cgi module is "
    "deprecated (see PEP 594 for details and alternatives).",
    None,
)
TASK = Task(QUESTION, "Answer in 50 to 100 words.", (50, 100), (ITEM,), (WIDTH,), "r")
PAGES = {CGI: PAGE}
GROUNDING = Grounding(TERMS, PAGES, {CGI: PAGE, OTHER: JSON_PAGE}.get)
ARGS = EvidenceArgs()

RIGHT = (
    "The cgi module caps POST requests with the global variable maxlen. By default maxlen is "
    "0, which means the request size is unlimited [1]. The module is deprecated since "
    "version 3.11 and will be removed in 3.13 [1]."
)


def grade(report: str, urls: tuple[str, ...] = (CGI,)) -> tuple[bool, ...]:
    return tuple(i.verified for i in grade_answer(TASK, report, urls, GROUNDING, ARGS).items)


def test_the_evidence_is_the_pages_own_sentence() -> None:
    assert (
        ITEM.evidence
        == "The default value of this variable is 0, meaning the request size is unlimited."
    )


def test_a_right_answer_satisfies_both_items() -> None:
    assert grade(RIGHT) == (True, True)


def test_a_paraphrase_that_keeps_the_facts_terms_is_credited() -> None:
    paraphrase = (
        "Out of the box there is no cap: maxlen starts at 0, so a request of any size is "
        "unlimited. The cgi module has been deprecated in 3.11 and is slated for removal in "
        "3.13."
    )
    assert grade(paraphrase) == (True, True)


def test_a_paraphrase_sharing_no_key_word_is_not_credited() -> None:
    """The lexical judge's known limit (docs/validity.md measures how often it matters): a
    faithful rewording with none of the fact's terms scores nothing."""
    reworded = (
        "Out of the box there is no ceiling on how big an upload can be; that setting starts "
        "at zero. The whole library is on its way out after a couple of releases."
    )
    assert grade(reworded) == (False, False)


def test_keyword_stuffing_satisfies_nothing() -> None:
    stuffed = (
        "maxlen default value 0 request size unlimited POST ValueError integer global "
        "variable parsing deprecated version 3.11 removed 3.13 PEP 594 cgi module"
    )
    graded = grade_answer(TASK, stuffed, (CGI,), GROUNDING, ARGS)
    assert graded.guard == "stuffed"
    assert [i.verified for i in graded.items] == [False, False]
    assert max(i.recall for i in graded.items) >= 0.8  # it holds the words: the guard decides


def test_a_pasted_page_satisfies_nothing() -> None:
    graded = grade_answer(TASK, PAGE, (CGI,), GROUNDING, ARGS)
    assert graded.guard == "copied" and graded.copied_share >= 0.9
    assert not any(i.verified for i in graded.items)


def test_an_answer_quoting_the_sentences_it_needs_is_no_paste() -> None:
    quoted = (
        "The default value of this variable is 0, meaning the request size is unlimited. "
        "Deprecated since version 3.11, will be removed in version 3.13: The cgi module is "
        "deprecated (see PEP 594 for details and alternatives). So maxlen sets the cap."
    )
    graded = grade_answer(TASK, quoted, (CGI,), GROUNDING, ARGS)
    assert graded.guard == "" and graded.copied_run < ARGS.copy_run_words
    assert [i.verified for i in graded.items] == [True, True]


def test_a_number_changed_by_one_digit_fails_the_item() -> None:
    wrong = RIGHT.replace("3.13", "3.12")
    graded = grade_answer(TASK, wrong, (CGI,), GROUNDING, ARGS)
    width = graded.items[1]
    assert width.recall >= ARGS.recall_min  # the words are there
    assert (width.hard_found, width.hard_wanted, width.verified) == (1, 2, False)
    assert graded.items[0].verified  # the other item is untouched


def test_the_questions_own_words_echoed_earn_nothing() -> None:
    echo = (
        "A POST request to the deprecated gateway interface module may be large by default, "
        "depending on how large the request is and on the module."
    )
    assert grade(echo) == (False, False)
    keys = item_keys(ITEM, QUESTION, PAGE)
    assert "request" not in keys.stems and "maxlen" in keys.stems


def test_a_right_fact_cited_to_a_page_that_lacks_it_is_not_cited() -> None:
    here = grade_answer(TASK, RIGHT, (CGI,), GROUNDING, ARGS)
    elsewhere = grade_answer(TASK, RIGHT, (OTHER,), GROUNDING, ARGS)
    nowhere = grade_answer(TASK, RIGHT, ("http://docs.test/made-up.html",), GROUNDING, ARGS)
    assert [i.verified for i in elsewhere.items] == [True, True]  # the fact still counts
    assert [i.cited for i in here.items] == [True, True]
    assert [i.cited for i in elsewhere.items] == [False, False]
    assert [i.cited for i in nowhere.items] == [False, False]
    # equal items: the answer whose citations hold the evidence wins, loser failure NONE
    judged = decide(here, elsewhere)
    assert (judged.verdict, judged.loser_failure_type) == (Verdict.A_BETTER, FailureType.NONE)
    assert decide(here, elsewhere, EvidenceArgs(cite_tiebreak=False)).verdict == Verdict.TIE


def test_too_long_an_answer_satisfies_nothing() -> None:
    long = " ".join([RIGHT] * 8)  # over twice the limit's upper bound of 100 words
    graded = grade_answer(TASK, long, (CGI,), GROUNDING, ARGS)
    assert graded.guard == "too_long" and graded.words > 200


def test_the_verdict_is_derived_depth_first() -> None:
    only_width = "The cgi module is deprecated since version 3.11 and goes away in 3.13 [1]."
    judged = judge_evidence(TASK, (RIGHT, (CGI,)), (only_width, (CGI,)), GROUNDING, ARGS)
    assert judged.derived.verdict == Verdict.A_MUCH_BETTER
    assert judged.derived.loser_failure_type == FailureType.DEPTH
    null = judge_evidence(TASK, ("I don't know.", ()), (RIGHT, (CGI,)), GROUNDING, ARGS)
    assert null.derived.verdict == Verdict.B_MUCH_BETTER


def test_grades_are_the_same_in_either_order() -> None:
    other = "The cgi module is deprecated since 3.11 [1]."
    ab = judge_evidence(TASK, (RIGHT, (CGI,)), (other, (CGI,)), GROUNDING, ARGS)
    ba = judge_evidence(TASK, (other, (CGI,)), (RIGHT, (CGI,)), GROUNDING, ARGS)
    assert ab.a == ba.b and ab.b == ba.a
    assert ab.derived.verdict == ba.derived.verdict.swapped()


@pytest.mark.parametrize("threshold", [0.3, 0.9])
def test_the_recall_threshold_is_an_argument(threshold: float) -> None:
    partial = "By default maxlen is 0 [1]."
    got = grade_answer(TASK, partial, (CGI,), GROUNDING, EvidenceArgs(recall_min=threshold))
    assert got.items[0].verified == (got.items[0].recall >= threshold)


NEAR_MISS = (
    "There is a global setting for this in the cgi module, and the old module is expected "
    "to be deprecated at some point."
)


def test_a_near_miss_beats_a_refusal_only_with_nuance_on() -> None:
    """Both fail every item; the answer holding part of the facts' terms wins when
    `nuance_min` is set (the paper's 'nuance winner'), BETTER, the loser's failure NONE."""
    near = grade_answer(TASK, NEAR_MISS, (), GROUNDING, ARGS)
    refusal = grade_answer(TASK, "I don't know.", (), GROUNDING, ARGS)
    assert not any(i.verified for i in (*near.items, *refusal.items))
    assert near.nuance() > 0 and refusal.nuance() == 0
    assert decide(near, refusal).verdict == Verdict.TIE  # off by default
    on = EvidenceArgs(nuance_min=near.nuance())
    judged = decide(refusal, near, on)
    assert (judged.verdict, judged.loser_failure_type) == (Verdict.B_BETTER, FailureType.NONE)
    assert decide(near, refusal, EvidenceArgs(nuance_min=near.nuance() + 0.01)).verdict == (
        Verdict.TIE
    )


def test_a_guarded_answer_holds_no_nuance() -> None:
    stuffed = grade_answer(
        TASK, "maxlen global variable default deprecated cgi " * 3, (), GROUNDING, ARGS
    )
    assert stuffed.guard == "stuffed" and max(i.recall for i in stuffed.items) > 0
    assert stuffed.nuance() == 0
    refusal = grade_answer(TASK, "I don't know.", (), GROUNDING, ARGS)
    assert decide(stuffed, refusal, EvidenceArgs(nuance_min=0.01)).verdict == Verdict.TIE


def test_nuance_counts_only_the_items_an_answer_missed() -> None:
    """Equal satisfied items: the missed ones decide, not how well the met ones are met."""
    right = grade_answer(TASK, RIGHT, (), GROUNDING, ARGS)
    assert right.nuance() == 0 and all(i.recall > 0 for i in right.items)
    assert decide(right, right, EvidenceArgs(nuance_min=0.01)).verdict == Verdict.TIE
