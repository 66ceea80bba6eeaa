"""Tree and task impact (pure): which nodes drifted, which checklist items went stale."""

from __future__ import annotations

from drarena.corpus.records import Tree, TreeNode
from drarena.drift.pages import NewVersion, PageDiff, Verdict, judge_page
from drarena.drift.stale import support, task_impacts, tree_impacts
from drarena.examiner.evolve import MatchScore, Outcome
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.examiner.taskgen import TaskOutcome
from drarena.ledger.records import SCHEMA_VERSION, MatchRecord, RoundRecord

A = "http://site.test/a.html"
B = "http://site.test/b.html"
C = "http://site.test/c.html"
TEXT_A = (
    "The cache holds 128 entries by default. Entries expire after one hour.\n"
    "The cache is thread safe. Old entries are removed first."
)


def changed_a() -> PageDiff:
    new = TEXT_A.replace("128", "256").replace(" Old entries are removed first.", "")
    diff = judge_page(A, "a", "A", TEXT_A, NewVersion(A, A, 200, (f"200 {A}",), text=new))
    assert diff.verdict == Verdict.CHANGED
    return diff


def test_support_prefers_coverage_then_page_order() -> None:
    page = (
        "The cache is thread safe.",
        "The cache holds 128 entries by default.",
        "Entries held in the cache expire.",
    )
    assert support("cache holds 128 entries", page) == ("The cache holds 128 entries by default.",)
    assert support("the cache", page) == page  # all tie at full coverage: page order, top 3
    assert support("unrelated words entirely", page) == ()
    assert support("the of and", page) == ()  # stopwords only: nothing to match


def task_match(items: list[tuple[str, str]]) -> MatchRecord:
    task = Task("q", "w", (1, 2), tuple(ChecklistItem(i, u) for i, u in items), (), "r")
    rnd = RoundRecord(
        0, "n", 1, 2, (), TaskOutcome(task, (), ()), None, None, None, MatchScore(0, 0, 0, 0), None
    )
    return MatchRecord(
        SCHEMA_VERSION, "m", 1, "x", "y", "t", 0, (rnd,), MatchScore(0, 0, 0, 0), Outcome.TIE
    )


def test_only_items_on_moved_sentences_are_stale() -> None:
    gone = PageDiff(B, "b", "B", Verdict.GONE, "HTTP 410", status=410)
    unchecked = PageDiff(C, "c", "C", Verdict.UNCHECKED, "robots: no")
    diffs = {A: changed_a(), B: gone, C: unchecked}
    match = task_match(
        [
            ("the cache holds 128 entries", A),  # number changed: stale
            ("entries expire after one hour", A),  # untouched sentence: fine
            ("old entries are removed first", A),  # sentence removed: stale
            ("zebras and giraffes", A),  # no support found: unlocated
            ("anything at all", B),  # page gone: stale
            ("anything", C),  # robots: unchecked
            ("anything", "http://site.test/elsewhere"),  # not compared: unchecked
        ]
    )
    impact = task_impacts("run1", [match], diffs, {A: TEXT_A})
    assert [(s.index, s.reason) for s in impact.stale] == [
        (0, "source sentence changed: 128 -> 256"),
        (2, "source sentence removed"),
        (4, "source page gone (HTTP 410)"),
    ]
    assert impact.stale[0].support == ("The cache holds 128 entries by default.",)
    assert impact.stale[0].now == ("The cache holds 256 entries by default.",)
    assert (impact.items, impact.unlocated, impact.unchecked) == (7, 1, 2)


def test_tree_impacts_list_drifted_nodes_sorted() -> None:
    nodes = tuple(
        TreeNode(n, u, n, "d", depth, 10)
        for n, u, depth in (("b", B, 0), ("a", A, 1), ("c", C, 1), ("z", "http://site.test/z", 2))
    )
    trees = [Tree("t2", "b", nodes, ()), Tree("t1", "b", nodes[2:], ())]
    diffs = {
        A: changed_a(),
        B: PageDiff(B, "b", "B", Verdict.GONE, "HTTP 404"),
        C: PageDiff(C, "c", "C", Verdict.UNCHANGED, "same bytes"),
        "http://site.test/z": PageDiff(
            "http://site.test/z", "z", "Z", Verdict.UNCHECKED, "robots: no"
        ),
    }
    t1, t2 = tree_impacts(trees, diffs)
    assert (t1.tree, t1.affected, t1.unchecked) == ("t1", (), 1)
    assert [(n.node, n.verdict) for n in t2.affected] == [
        ("a", Verdict.CHANGED),
        ("b", Verdict.GONE),
    ]
    assert (t2.nodes, t2.changed, t2.gone, t2.redirected) == (4, 1, 1, 0)
