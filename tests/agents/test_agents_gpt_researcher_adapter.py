"""The GPT Researcher adapter's citations (configs/agents/gpt_researcher_agent.py): the pages
it scraped, then the search results it kept unscraped. Pure logic; the adapter itself runs in
its own venv."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from agent_helpers import load_adapter


def _adapter() -> ModuleType:
    return load_adapter("gpt_researcher_agent.py")


class Researcher:
    """GPTResearcher's two public source lists, as the adapter reads them."""

    def __init__(self, scraped: list[Any], kept: list[Any]) -> None:
        self.scraped, self.kept = scraped, kept

    def get_source_urls(self) -> list[Any]:
        return self.scraped

    def get_research_sources(self) -> list[Any]:
        return self.kept


def test_scraped_pages_then_kept_results_once_each() -> None:
    source_urls = _adapter().source_urls
    researcher = Researcher(
        ["https://h/a.html"],
        [{"url": "https://h/b.html"}, {"url": "https://h/a.html"}, {"title": "no url"}],
    )
    assert source_urls(researcher) == ["https://h/a.html", "https://h/b.html"]


def test_only_web_urls_are_cited() -> None:
    researcher = Researcher([None, "file:///etc/passwd"], ["x", {"url": "javascript:1"}])
    assert _adapter().source_urls(researcher) == []
