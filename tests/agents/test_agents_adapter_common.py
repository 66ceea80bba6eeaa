"""configs/agents/adapter_common.py: the history block and the URL -> [n] citations that the
smolagents and Agents SDK adapters share (both adapters import it, so both are loaded here)."""

from __future__ import annotations

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


def test_both_prose_adapters_use_the_shared_helpers() -> None:
    """The adapters import the shared functions rather than keeping copies of them."""
    for script in ("smolagents_agent.py", "openai_agents_agent.py"):
        adapter = load_adapter(script)
        assert adapter.cite.__module__ == "adapter_common", script
        assert adapter.with_history.__module__ == "adapter_common", script
        assert "def mark" not in (ADAPTERS / script).read_text(encoding="utf-8"), script
