"""drarena command exchange (protocol 1) -> GPT Researcher, unmodified.

Runs inside .venv-agents/gpt-researcher (scripts/setup_agents.sh). GPT Researcher is
configured only through its documented environment variables (set in the tournament config's
`env:`): RETRIEVER=tavily with any TAVILY_API_KEY (drarena's frozen-web proxy answers
api.tavily.com from the snapshot's index), SCRAPER=bs (its requests + BeautifulSoup scraper;
pages come from the snapshot through the same proxy), FAST_LLM / SMART_LLM / STRATEGIC_LLM /
EMBEDDING naming the local OpenAI-compatible server's model, OPENAI_BASE_URL pointing at it.

Glue only: OPENAI_BASE_URL and the model names default to what drarena passes
(DRARENA_MODEL_API_BASE, DRARENA_MODEL) when the config leaves them unset; the report's
source URLs become the citations, in the order GPT Researcher lists them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys


def configure() -> None:
    served = os.environ.get("DRARENA_MODEL", "openai/served").removeprefix("openai/")
    defaults = {
        "OPENAI_BASE_URL": os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        "OPENAI_API_KEY": "none",
        "FAST_LLM": f"openai:{served}",
        "SMART_LLM": f"openai:{served}",
        "STRATEGIC_LLM": f"openai:{served}",
        "EMBEDDING": f"custom:{served}",
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    # tiktoken downloads its BPE files (o200k_base, cl100k_base) on first use; on the frozen
    # web that URL is "not in the snapshot" (a 404, and the agent exited). litellm, which GPT
    # Researcher installs, ships them in tiktoken's cache layout: tiktoken's own documented
    # TIKTOKEN_CACHE_DIR points there, so nothing is fetched.
    # litellm also fetches its model price map from GitHub at import; its documented switch
    # keeps the copy it ships
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm.litellm_core_utils.tokenizers as bundled

        os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.dirname(bundled.__file__))
    except ImportError:
        pass


async def research(question: str, low: int, high: int) -> tuple[str, list[str]]:
    from gpt_researcher import GPTResearcher

    researcher = GPTResearcher(query=question, report_type="research_report")
    await researcher.conduct_research()
    report = await researcher.write_report(
        custom_prompt=f"Answer '{question}' in {low} to {high} words, citing sources as [n]."
    )
    return report, source_urls(researcher)


def source_urls(researcher: object) -> list[str]:
    """The URLs GPT Researcher drew on, through its public API: the pages it scraped
    (`get_source_urls`), then the sources it kept without scraping (`get_research_sources`).
    Why both: GPT Researcher 0.15.1 takes a search result whose text is over 100 characters as
    already fetched (skills/researcher.py, `_search_relevant_source_urls`) and scrapes only
    the rest, so with Tavily's snippets it opened 0 pages and `get_source_urls` was empty on
    2 of 2 questions (6 Dec 2026) while its report was written from those results."""
    urls: list[str] = []
    scraped = researcher.get_source_urls()  # type: ignore[attr-defined]
    kept = researcher.get_research_sources()  # type: ignore[attr-defined]
    for url in [*scraped, *(s.get("url") for s in kept if isinstance(s, dict))]:
        if isinstance(url, str) and url.startswith(("http://", "https://")) and url not in urls:
            urls.append(url)
    return urls


def main() -> int:
    request = json.load(sys.stdin)
    configure()
    low, high = request.get("word_limit") or (150, 250)
    report, sources = asyncio.run(research(request["question"], low, high))
    cited = [u for u in sources if isinstance(u, str) and u.startswith(("http://", "https://"))]
    # GPT Researcher writes markdown links; its markers [n] refer to the source list order
    report = re.sub(r"\]\((https?://[^)\s]+)\)", "]", report)
    json.dump({"report": report, "citations": cited}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
