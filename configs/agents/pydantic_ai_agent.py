"""drarena command exchange (protocol 1) -> a research agent on Pydantic AI, unmodified.

Runs inside .venv-agents/pydantic-ai (scripts/setup_agents.sh). The agent is Pydantic AI's own
`Agent` over Chat Completions (`OpenAIChatModel` with an `OpenAIProvider` at drarena's model
endpoint, its documented way to use any OpenAI-compatible server), built as its docs build a
research agent:
- `tavily_search`: Pydantic AI's own Tavily tool (`pydantic_ai.common_tools.tavily`, Tavily's
  official `AsyncTavilyClient`, which POSTs https://api.tavily.com/search), its optional
  arguments fixed through its factory so the model writes only the query;
- `open_page`: an HTTP GET of a result URL with `requests`, its text cut to
  PYDANTIC_AI_PAGE_CHARS. Not Pydantic AI's `web_fetch_tool`: its SSRF guard resolves each
  host itself and connects to the address it found, past any proxy, and the frozen web has
  no DNS (the proxy is the only way out of the agent's network namespace);
- the answer as structured output (`output_type`, an output tool: the answer and the URLs it
  used), so every turn is a tool call (Pydantic AI then sends `tool_choice: "required"`).
The steps are ordered with Pydantic AI's documented capabilities `PrepareTools` and
`PrepareOutputTools` (a tool left out of a step cannot be called): search first, a page next,
the answer last. Why: the 1.5B CPU model, free to choose, answers before it reads (as it did
with the Agents SDK, configs/agents/openai_agents_agent.py).
Nothing here answers for the web: drarena's frozen-web proxy, set through HTTP(S)_PROXY,
SSL_CERT_FILE and REQUESTS_CA_BUNDLE in this process's environment, answers Tavily from the
snapshot's index and every page from the snapshot.

Settings (config `env:`): PYDANTIC_AI_MAX_TURNS (default 5 model requests),
PYDANTIC_AI_MAX_RESULTS (5), PYDANTIC_AI_PAGE_CHARS (2000), PYDANTIC_AI_MAX_TOKENS (448).
URLs in the answer's `sources` become the [n] citations (the pages it opened are not added, so
a citation is the agent's own).
"""

from __future__ import annotations

import os
import sys

from adapter_common import page_text, serve, with_history
from pydantic import BaseModel, Field

INSTRUCTIONS = """You answer research questions from web pages.
1. Call tavily_search once with a short keyword query.
2. Call open_page with the URL of the most relevant result.
3. Give your answer from what the page says, with the URL of each page you used."""
ANSWER_CHARS = 1200  # as the Agents SDK adapter: an uncapped answer ran past max_tokens


class Answer(BaseModel):
    """The final answer and the URLs of the pages it rests on."""

    answer: str = Field(max_length=ANSWER_CHARS)
    sources: list[str] = Field(min_length=1, max_length=5)


def allowed(searched: bool, pages: int, requests: int, max_turns: int) -> tuple[str | None, bool]:
    """(the function tool this step offers, whether it offers the answer): a search first,
    then a page, and the answer once a page was read; the last turn offers the answer alone."""
    if requests >= max_turns - 1:
        return None, True
    return ("open_page" if searched else "tavily_search"), pages > 0


async def research(question: str, low: int, high: int, history: list[dict[str, str]]) -> str:
    import requests
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.capabilities import PrepareOutputTools, PrepareTools
    from pydantic_ai.common_tools.tavily import tavily_search_tool
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.usage import UsageLimits

    max_turns = int(os.environ.get("PYDANTIC_AI_MAX_TURNS", "5"))
    page_chars = int(os.environ.get("PYDANTIC_AI_PAGE_CHARS", "2000"))
    done = {"pages": 0}
    search = tavily_search_tool(  # its optional arguments fixed: the model writes the query
        os.environ.get("TAVILY_API_KEY", "tvly-frozen-web"),
        max_results=int(os.environ.get("PYDANTIC_AI_MAX_RESULTS", "5")),
        search_depth="basic",
        topic="general",
        time_range=None,
        include_domains=None,
        exclude_domains=None,
    )

    def searched(ctx: RunContext[None]) -> bool:  # a search has returned in this run
        return any(
            getattr(part, "part_kind", "") == "tool-return" and part.tool_name == search.name
            for message in ctx.messages
            for part in message.parts
        )

    def open_page(url: str) -> str:
        """Read a web page. Returns its text."""
        response = requests.get(url, timeout=60)
        if response.status_code != 200:
            return f"HTTP {response.status_code}: open a URL from the search results"
        done["pages"] += 1
        return page_text(response.text, page_chars)

    def step(ctx: RunContext[None]) -> tuple[str | None, bool]:
        return allowed(searched(ctx), done["pages"], ctx.usage.requests, max_turns)

    async def steps(ctx: RunContext[None], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [d for d in defs if d.name == step(ctx)[0]]

    async def answer_when_read(
        ctx: RunContext[None], defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        return defs if step(ctx)[1] else []

    served = os.environ.get("DRARENA_MODEL", "served").removeprefix("openai/")
    provider = OpenAIProvider(
        base_url=os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "none"),
    )
    agent = Agent(
        OpenAIChatModel(served, provider=provider),
        output_type=Answer,
        instructions=INSTRUCTIONS,
        tools=[search, open_page],
        model_settings=ModelSettings(
            temperature=0.0, max_tokens=int(os.environ.get("PYDANTIC_AI_MAX_TOKENS", "448"))
        ),
        capabilities=[PrepareTools(steps), PrepareOutputTools(answer_when_read)],
    )
    task = f"{question}\n\nAnswer in {low} to {high} words."
    result = await agent.run(
        with_history(task, history), usage_limits=UsageLimits(request_limit=max_turns)
    )
    listed = "\n".join(f"- {url}" for url in result.output.sources)
    return f"{result.output.answer}\n\nSources:\n{listed}"


def main() -> int:
    return serve(research)


if __name__ == "__main__":
    sys.exit(main())
