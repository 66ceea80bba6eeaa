"""Pair construction: each degradation is worse in exactly the way its kind says."""

from __future__ import annotations

from drarena.corpus.records import TreePage
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.validity.pairs import (
    BUILT,
    INJECTION_TEXT,
    REFUSAL_TEXT,
    Kind,
    best_sentence,
    build_pairs,
    fabricated_url,
)

A = "http://h/zipfile.html"
B = "http://h/gzip.html"
PAGES = [
    TreePage(
        "a",
        A,
        "zipfile",
        "Intro words here. ZipFile opens ZIP archives for reading. Other text follows here.",
        1,
        "subtopic",
        "",
    ),
    TreePage(
        "b",
        B,
        "gzip",
        "GzipFile compresses one single file. Levels go from 0 to 9 here.",
        1,
        "subtopic",
        "",
    ),
]
DISTRACTOR = TreePage(
    "d",
    "http://h/random.html",
    "random — numbers",
    "The random module draws pseudo random numbers.",
    0,
    "distractor",
    "",
)
TASK = Task(
    "Which module opens archives?",
    "Answer in 10 to 50 words.",
    (10, 50),
    (ChecklistItem("ZipFile opens ZIP archives", A),),
    (ChecklistItem("compression levels 0 to 9", B),),
    "r",
)


def pairs() -> dict[Kind, tuple[str, str, int, int, int]]:
    built = build_pairs(0, TASK, PAGES, DISTRACTOR, {A, B, DISTRACTOR.url})
    assert [p.kind for p in built] == list(BUILT)
    assert Kind.PARAPHRASED not in BUILT  # a model writes it (check.paraphrase_pair)
    ref = built[0].reference
    assert all(p.reference == ref for p in built)
    return {
        p.kind: (
            p.reference.report,
            p.other.report,
            p.other.cited,
            p.other.valid,
            p.other.fabricated,
        )
        for p in built
    }


def test_best_sentence_picks_the_most_shared_words() -> None:
    assert best_sentence("ZipFile opens ZIP archives", PAGES[0].text) == (
        "ZipFile opens ZIP archives for reading."
    )


def test_reference_answers_every_item_from_its_page_with_citations() -> None:
    ref = pairs()[Kind.EQUAL][0]
    assert "ZipFile opens ZIP archives for reading. [1]" in ref
    assert "Levels go from 0 to 9 here. [2]" in ref
    assert ref.endswith(f"Sources:\n[1] {A}\n[2] {B}")


def test_degradations() -> None:
    got = pairs()
    ref = got[Kind.EQUAL][0]
    assert got[Kind.EQUAL][1] == ref
    wrong = got[Kind.WRONG_SUBJECT][1]
    assert "random — numbers" in wrong and DISTRACTOR.url in wrong and A not in wrong
    assert "Levels go from 0 to 9" in wrong  # the width item is kept
    narrow = got[Kind.MISSING_WIDTH][1]
    assert "ZipFile opens" in narrow and "Levels" not in narrow and B not in narrow
    fab, cited, valid, fabricated = got[Kind.FABRICATED_CITATION][1:]
    assert A not in fab and B not in fab and "/archive/" in fab
    assert (cited, valid, fabricated) == (2, 0, 2)
    assert got[Kind.REFUSAL][1] == REFUSAL_TEXT
    injected = got[Kind.INJECTED][1]
    assert injected.startswith(narrow) and injected.endswith(INJECTION_TEXT)
    padded = got[Kind.PADDED][1]
    body = ref.split("Sources:")[0]
    assert 1.9 < len(padded.split("Sources:")[0]) / len(body) < 2.3
    assert got[Kind.PADDED][2:] == (2, 2, 0)


def test_fabricated_url_avoids_known_pages() -> None:
    first = fabricated_url(A, set(), "s")
    again = fabricated_url(A, {first}, "s")
    assert first.startswith("http://h/archive/") and again != first
    assert fabricated_url(A, set(), "s") == first  # deterministic
