"""drarena command exchange (protocol 1) -> a research agent on the OpenAI Agents SDK, unmodified.

Runs inside .venv-agents/openai-agents (scripts/setup_agents.sh). The agent is the SDK's own
`Agent` run by its own `Runner` over Chat Completions (`OpenAIChatCompletionsModel`, the SDK's
documented way to use any OpenAI-compatible server), with two function tools, the way the SDK's
examples build a research agent:
- `web_search`: Tavily's official client (`tavily-python`, `TavilyClient.search`), which POSTs
  https://api.tavily.com/search;
- `open_page`: an HTTP GET of a result URL with `requests`, its text cut to
  OPENAI_AGENTS_PAGE_CHARS;
- `final_answer` (OPENAI_AGENTS_FINISH_TOOL=1, the default): the answer as a call, so that every
  turn is a tool call under `tool_choice: "required"` and the run ends at this one (the SDK's
  `StopAtTools` and `reset_tool_choice=False`), its `sources` (the URLs the agent used) listed
  under the answer. Why: the 1.5B CPU model, left to choose, wrote prose after its first search
  and never opened a page; answering in prose after reading four pages, it wrote no URL.
Nothing here answers for the web: drarena's frozen-web proxy, set through HTTP(S)_PROXY and
REQUESTS_CA_BUNDLE in this process's environment, answers Tavily from the snapshot's index and
every page from the snapshot.

Settings (config `env:`): OPENAI_AGENTS_MAX_TURNS (default 6), OPENAI_AGENTS_MAX_RESULTS (5),
OPENAI_AGENTS_PAGE_CHARS (2000), OPENAI_AGENTS_MAX_TOKENS (448), OPENAI_AGENTS_FORCE_SEARCH (1:
the first turn must call a tool, `ModelSettings(tool_choice="required")`; the SDK resets it to
auto after that call, so the agent can still finish). Tracing is off (its exporter would call
api.openai.com). URLs in the final answer become the [n] citations (only those: the pages it
opened are not added, so a citation is the agent's own).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

from adapter_common import page_text, serve, with_history
from pydantic import Field

INSTRUCTIONS = """You answer research questions from web pages.
1. Call web_search once with a short keyword query.
2. Call open_page with the URL of the most relevant result.
3. Answer in plain prose from what the page says, and give the URL of each page you used."""
FINISH_INSTRUCTIONS = INSTRUCTIONS.replace("3. Answer", "3. Call final_answer with your answer,")


# the answer's cap, in the tool's JSON schema (the relay's grammar holds the model to it): an
# uncapped answer ran past max_tokens mid-call on 1 of 5 questions (6 Dec 2026: 379 words, the
# call cut before `sources`, 0 citations), as smolagents' did before its cap
ANSWER_CHARS = 1200


async def research(question: str, low: int, high: int, history: list[dict[str, str]]) -> str:
    import requests
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        StopAtTools,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI
    from tavily import TavilyClient

    set_tracing_disabled(True)
    max_results = int(os.environ.get("OPENAI_AGENTS_MAX_RESULTS", "5"))
    page_chars = int(os.environ.get("OPENAI_AGENTS_PAGE_CHARS", "2000"))
    tavily = TavilyClient(api_key=os.environ.get("TAVILY_API_KEY", "tvly-frozen-web"))

    max_turns = int(os.environ.get("OPENAI_AGENTS_MAX_TURNS", "6"))
    # what the run has done so far, for the tools' `is_enabled` (the SDK's documented switch):
    # under tool_choice "required" a tool that is not yet enabled cannot be called, so the
    # 1.5B model searches first, opens a page next and answers last
    done = {"calls": 0, "searches": 0, "pages": 0}

    def can_search(ctx: object, agent: object) -> bool:
        return done["calls"] < max_turns - 1

    def can_open(ctx: object, agent: object) -> bool:
        return done["searches"] > 0 and done["calls"] < max_turns - 1

    def can_answer(ctx: object, agent: object) -> bool:
        return done["pages"] > 0 or done["calls"] >= max_turns - 1

    @function_tool(is_enabled=can_search)
    def web_search(query: str) -> str:
        """Search the web. Returns the title, URL and a snippet of each result."""
        done["calls"] += 1
        done["searches"] += 1
        found = tavily.search(query, max_results=max_results)
        return "\n\n".join(
            f"{hit['title']}\n{hit['url']}\n{hit.get('content', '')[:300]}"
            for hit in found.get("results", [])
        )

    @function_tool(is_enabled=can_open)
    def open_page(url: str) -> str:
        """Read a web page. Returns its text."""
        done["calls"] += 1
        response = requests.get(url, timeout=60)
        if response.status_code != 200:
            return f"HTTP {response.status_code}: open a URL from the search results"
        done["pages"] += 1
        return page_text(response.text, page_chars)

    @function_tool(is_enabled=can_answer)
    def final_answer(
        answer: Annotated[str, Field(max_length=ANSWER_CHARS)],
        sources: Annotated[list[str], Field(min_length=1, max_length=5)],
    ) -> str:
        """Give your final answer and the URLs of the pages you used."""
        listed = "\n".join(f"- {url}" for url in sources if isinstance(url, str))
        return f"{answer}\n\nSources:\n{listed}" if listed else answer

    served = os.environ.get("DRARENA_MODEL", "served").removeprefix("openai/")
    client = AsyncOpenAI(
        base_url=os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "none"),
    )
    force = os.environ.get("OPENAI_AGENTS_FORCE_SEARCH", "1") == "1"
    finish = os.environ.get("OPENAI_AGENTS_FINISH_TOOL", "1") == "1"
    settings = ModelSettings(
        temperature=0.0,
        max_tokens=int(os.environ.get("OPENAI_AGENTS_MAX_TOKENS", "448")),
        tool_choice="required" if force or finish else None,
    )
    model = OpenAIChatCompletionsModel(model=served, openai_client=client)
    if finish:
        # every turn a tool call, the last one `final_answer`, whose argument is the answer:
        # the SDK's documented way to end a run under tool_choice "required"
        # (tool_use_behavior StopAtTools, reset_tool_choice False)
        agent = Agent(
            name="researcher",
            instructions=FINISH_INSTRUCTIONS,
            tools=[web_search, open_page, final_answer],
            model=model,
            model_settings=settings,
            tool_use_behavior=StopAtTools(stop_at_tool_names=["final_answer"]),
            reset_tool_choice=False,
        )
    else:
        agent = Agent(
            name="researcher",
            instructions=INSTRUCTIONS,
            tools=[web_search, open_page],
            model=model,
            model_settings=settings,
        )
    task = f"{question}\n\nAnswer in {low} to {high} words."
    result = await Runner.run(agent, with_history(task, history), max_turns=max_turns)
    return str(result.final_output or "")


def main() -> int:
    return serve(research)


if __name__ == "__main__":
    sys.exit(main())
