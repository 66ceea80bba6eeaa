"""configs/agents/adapter_common.py: the history block, the URL -> [n] citations, the visible
page text and the stdin -> stdout protocol that the prose adapters share (the adapters import
it, so they are loaded here)."""

from __future__ import annotations

import io
import json

import pytest

from tests.agents.agent_helpers import ADAPTERS, load_adapter


def test_cite_numbers_distinct_urls_in_first_seen_order_and_strips_punctuation() -> None:
    common = load_adapter("adapter_common.py")
    answer = (
        "Founded in 1901 (see https://a.example/x). Later, https://b.example/y, and again "
        "https://a.example/x; also <https://c.example/z>."
    )
    report, citations = common.cite(answer)
    assert citations == ["https://a.example/x", "https://b.example/y", "https://c.example/z"]
    assert report == "Founded in 1901 (see [1]). Later, [2], and again [1]; also <[3]>."


def test_cite_without_urls_leaves_the_answer_and_cites_nothing() -> None:
    common = load_adapter("adapter_common.py")
    assert common.cite("No sources here.") == ("No sources here.", [])


def test_with_history_puts_earlier_rounds_before_the_task() -> None:
    common = load_adapter("adapter_common.py")
    assert common.with_history("Q2?", []) == "Q2?"
    task = common.with_history("Q2?", [{"question": "Q1?", "answer": "A1."}])
    assert task == "Earlier questions and your answers:\nQ: Q1?\nA: A1.\n\nQ2?"


def test_the_prose_adapters_use_the_shared_helpers() -> None:
    """The adapters import the shared functions rather than keeping copies of them."""
    for script in ("smolagents_agent.py", "openai_agents_agent.py", "pydantic_ai_agent.py"):
        adapter = load_adapter(script)
        assert adapter.with_history.__module__ == "adapter_common", script
        assert "def mark" not in (ADAPTERS / script).read_text(encoding="utf-8"), script
    for script in ("openai_agents_agent.py", "pydantic_ai_agent.py"):
        adapter = load_adapter(script)
        assert adapter.page_text.__module__ == "adapter_common", script
        assert adapter.serve.__module__ == "adapter_common", script
        assert "def page_text" not in (ADAPTERS / script).read_text(encoding="utf-8"), script


def test_page_text_drops_tags_scripts_and_styles() -> None:
    common = load_adapter("adapter_common.py")
    body = "<style>p{}</style><p>a &amp; b</p><SCRIPT>x()</SCRIPT>\n<b>c</b>"
    assert common.page_text(body, 100) == "a & b c"
    assert common.page_text("<p>abcdef</p>", 3) == "abc"


def test_serve_reads_the_request_and_writes_the_cited_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    common = load_adapter("adapter_common.py")
    seen: list[tuple[str, int, int, list[dict[str, str]]]] = []

    async def research(question: str, low: int, high: int, history: list[dict[str, str]]) -> str:
        seen.append((question, low, high, history))
        return "It is 42 (https://a.example/x)."

    request = {
        "question": "Q?",
        "word_limit": [10, 20],
        "history": [{"question": "P?", "answer": "A."}],
    }
    out = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(request)))
    monkeypatch.setattr("sys.stdout", out)
    assert common.serve(research) == 0
    assert seen == [("Q?", 10, 20, [{"question": "P?", "answer": "A."}])]
    assert json.loads(out.getvalue()) == {
        "report": "It is 42 ([1]).",
        "citations": ["https://a.example/x"],
    }


def test_serve_defaults_the_word_limit_and_history(monkeypatch: pytest.MonkeyPatch) -> None:
    common = load_adapter("adapter_common.py")
    seen: list[tuple[int, int, int]] = []

    async def research(question: str, low: int, high: int, history: list[dict[str, str]]) -> str:
        seen.append((low, high, len(history)))
        return "No sources."

    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"question": "Q?"})))
    monkeypatch.setattr("sys.stdout", io.StringIO())
    common.serve(research)
    assert seen == [(150, 250, 0)]
