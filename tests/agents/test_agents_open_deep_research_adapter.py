"""configs/agents/open_deep_research_agent.py's pure parts: the settings it passes the graph
and how the report's Sources list becomes drarena's citations. The harness itself runs in its
own venv (bench/bench_real_agents.py, make bench-agents), never imported here."""

from __future__ import annotations

import os

import pytest

from tests.agents.agent_helpers import load_adapter


def test_sources_list_becomes_the_citations_and_markers_follow_it() -> None:
    adapter = load_adapter("open_deep_research_agent.py")
    report = (
        "# Answer\n\nThe club was founded in 1901 [2] and moved in 1950 [1][2]. See [7].\n\n"
        "### Sources\n"
        "[1] History page: https://a.example/history\n"
        "[2] Club site: https://b.example/about.\n"
        "[3] Duplicate: https://a.example/history\n"
    )
    body, citations = adapter.split_sources(report)
    assert citations == ["https://a.example/history", "https://b.example/about"]
    # [3] named the same URL as [1]; [7] is in no list and stays as written
    assert body == "# Answer\n\nThe club was founded in 1901 [2] and moved in 1950 [1][2]. See [7]."


def test_list_numbered_out_of_order_is_renumbered_to_citation_order() -> None:
    adapter = load_adapter("open_deep_research_agent.py")
    report = (
        "A fact [4], another [2].\n\n## References\n4. https://x.example/\n2. https://y.example/\n"
    )
    body, citations = adapter.split_sources(report)
    assert citations == ["https://x.example/", "https://y.example/"]
    assert body == "A fact [1], another [2]."


def test_a_sources_entry_without_url_is_the_read_page_of_that_title() -> None:
    """The 1.5B listed sources by title only; the titles are those of pages its search tool
    handed the researcher, which the graph keeps in raw_notes: resolved there, never guessed."""
    adapter = load_adapter("open_deep_research_agent.py")
    notes = (
        "Search results: \n\n\n\n--- SOURCE 1: json \u2014 JSON encoder and decoder ---\n"
        "URL: http://127.0.0.1:8000/library/json.html\n\nSUMMARY:\n...\n"
        "--- SOURCE 2: io \u2014 Core tools for working with streams ---\n"
        "URL: http://127.0.0.1:8000/library/io.html\n\nSUMMARY:\n..."
    )
    read = adapter.pages_read(notes)
    assert read == {
        "json \u2014 json encoder and decoder": "http://127.0.0.1:8000/library/json.html",
        "io \u2014 core tools for working with streams": "http://127.0.0.1:8000/library/io.html",
    }
    report = (
        "Use json.dump [2]; files come from io [1].\n\n### Sources\n"
        "[1] io \u2014 Core tools for working with streams\n"
        "[2] json \u2014 JSON encoder and decoder \u2014 Python 3.11 documentation\n"
        "[3] A page it never read\n"
    )
    body, citations = adapter.split_sources(report, read)
    assert citations == [
        "http://127.0.0.1:8000/library/io.html",
        "http://127.0.0.1:8000/library/json.html",
    ]
    assert body == "Use json.dump [2]; files come from io [1]."
    # without the notes nothing resolves, and the inline fallback finds no URL either
    assert adapter.split_sources(report)[1] == []


@pytest.mark.parametrize(
    "report",
    [
        "No list; inline https://z.example/page, then text.",
        "Text.\n\n### Sources\n(none found)\n\nAlso https://z.example/page, here.",
    ],
)
def test_without_a_usable_list_inline_urls_are_cited(report: str) -> None:
    adapter = load_adapter("open_deep_research_agent.py")
    body, citations = adapter.split_sources(report)
    assert citations == ["https://z.example/page"]
    assert "[1]," in body and "https://" not in body


def test_settings_name_the_served_model_for_every_role_and_tavily(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every name configure() sets is delenv-ed first, so the test restores the environment."""
    adapter = load_adapter("open_deep_research_agent.py")
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "TAVILY_API_KEY",
        "LANGSMITH_TRACING",
        "ODR_TOKENS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DRARENA_MODEL", "openai/qwen-test")
    monkeypatch.setenv("DRARENA_MODEL_API_BASE", "http://127.0.0.1:9/v1")
    settings = adapter.configure()
    roles = ("research", "summarization", "compression", "final_report")
    assert {settings[f"{role}_model"] for role in roles} == {"openai:qwen-test"}
    assert settings["search_api"] == "tavily" and settings["allow_clarification"] is False
    monkeypatch.setenv("ODR_TOOL_REQUIRED", "1")  # the relay's variant, for the research role
    settings = adapter.configure()
    assert settings["research_model"] == "openai:qwen-test+tool-required"
    assert settings["final_report_model"] == "openai:qwen-test"
    assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert os.environ["TAVILY_API_KEY"] == "frozen-web"
