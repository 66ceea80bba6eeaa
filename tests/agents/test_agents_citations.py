"""Citation parsing (pure) and the check against the committed snapshot (real WARC lookup)."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.agents import citations as cite
from drarena.agents.base import (
    Answer,
    Citation,
    CitationCheck,
    Conversation,
    ModelCall,
    SourcePage,
    Step,
    ToolEvent,
    Trajectory,
    Turn,
)

SNAPSHOT = Path(__file__).resolve().parents[2] / "snapshots" / "pydocs"


def test_markers_and_clean_urls() -> None:
    assert cite.markers("a [2] b [1] c [2] [0] [x]") == [2, 1]
    assert cite.clean_url("[3] <http://a.test/p>.") == "http://a.test/p"
    assert cite.clean_url("  http://a.test/q?x=1, ") == "http://a.test/q?x=1"
    assert cite.clean_url("doc-17") == "doc-17"


def test_split_references_from_plain_text() -> None:
    body, urls = cite.split_references(
        "Text [1] and [3].\n\n[1]: http://a.test/one\n[3] <http://a.test/three>\n"
    )
    assert body == "Text [1] and [3]."
    assert urls == ["http://a.test/one", "", "http://a.test/three"]
    assert cite.split_references("no refs [1]") == ("no refs [1]", [])


def test_resolve_counts_unresolved_markers() -> None:
    citations, unresolved = cite.resolve("A [1], B [4].", ["http://a.test/1", "http://a.test/2"])
    assert citations == (
        Citation(1, "http://a.test/1", True),
        Citation(2, "http://a.test/2", False),
    )
    assert unresolved == 1


def test_check_flags_unknown_urls_and_counts_distinct() -> None:
    citations, _ = cite.resolve(
        "[1][2][3]", ["http://a.test/ok", "http://b.test/made-up", "http://a.test/ok"]
    )
    marked, counts = cite.check(citations, 0, {"http://a.test/ok"}.__contains__)
    assert [c.valid for c in marked] == [True, False, True]
    assert counts == CitationCheck(
        cited=2,
        valid=1,
        fabricated=1,
        unresolved=0,
        checked=True,
        fabricated_urls=("http://b.test/made-up",),
    )
    _, unchecked = cite.check(citations, 0, None)
    assert unchecked.checked is False and unchecked.cited == 2 and unchecked.fabricated == 0


def test_snapshot_checker_on_the_committed_snapshot() -> None:
    if not (SNAPSHOT / "manifest.json").is_file():
        pytest.fail(f"fixture snapshot missing at {SNAPSHOT}")
    checker = cite.SnapshotUrlChecker(SNAPSHOT)
    try:
        assert checker("http://127.0.0.1:8765/howto/curses.html")
        # canonicalization: default-insensitive host case, fragment dropped
        assert checker("HTTP://127.0.0.1:8765/howto/curses.html#what-is-curses")
        # the other scheme: the page the proxy serves for it (smolagents wrote https://)
        assert checker("https://127.0.0.1:8765/howto/curses.html")
        assert not checker("https://127.0.0.1:8765/howto/made-up-page.html")
        # planted fabrications: a page never captured, another host, a 404, not a URL
        assert not checker("http://127.0.0.1:8765/howto/made-up-page.html")
        assert not checker("https://docs.python.org/3/howto/curses.html")
        assert not checker("http://127.0.0.1:8765/robots.txt")
        assert not checker("doc-123")
    finally:
        checker.close()


def test_answer_round_trips_through_json() -> None:
    answer = Answer(
        agent="react",
        report="r [1]",
        citations=(Citation(1, "http://a.test/", True, True),),
        check=CitationCheck(1, 1, 0, 0, True, ()),
        trajectory=Trajectory(
            (
                Step(
                    0,
                    ModelCall("k" * 64, 10, 5, 0.5, False, "tool_calls"),
                    (ToolEvent("c1", "search", '{"query": "q"}', ("d1",), ("http://a.test/",)),),
                ),
                Step(1, None, (), error="no tool call", note="x"),
            )
        ),
        wall_s=1.0,
        model_s=0.5,
        prompt_tokens=10,
        completion_tokens=5,
        limit_hit="steps",
    )
    again = Answer.from_json(answer.to_json())
    assert again == answer and again.to_json() == answer.to_json()
    assert again.trajectory.errors() == ["no tool call"]
    conversation = Conversation("q2", (Turn("q1", "a1"),), (SourcePage("u", "t", "x"),))
    assert Conversation.from_json(conversation.to_json()) == conversation
    with pytest.raises(ValueError, match="unknown fields"):
        Answer.from_dict({**answer.to_dict(), "extra": 1})


def test_deeply_nested_answer_arguments_are_a_value_error_not_a_crash() -> None:
    """A model's `[[[[...` deeper than json's recursion limit (found by fuzzing the examiner's
    parsers; the agents' answer tool had the same gap)."""
    import pytest

    from drarena.agents.common import parse_answer_arguments

    with pytest.raises(ValueError, match="nested too deeply"):
        parse_answer_arguments("[" * 200_000 + "]" * 200_000)


def test_shown_by_marker_maps_only_the_numbers_of_pages_shown() -> None:
    from drarena.agents.citations import shown_by_marker

    shown = ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    assert shown_by_marker("No markers.", shown) == []
    assert shown_by_marker("x [3] y [1] z [9]", shown) == [shown[0], "", shown[2]]
    assert shown_by_marker("x [2]", []) == []
