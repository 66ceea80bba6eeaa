"""drarena command exchange (protocol 1) -> smolagents' CodeAgent, unmodified.

Runs inside .venv-agents/smolagents (scripts/setup_agents.sh). The agent is smolagents'
own CodeAgent with its own WebSearchTool (engine "duckduckgo": it GETs
https://lite.duckduckgo.com/lite/ with requests) and VisitWebpageTool (requests + markdownify).
Nothing here changes what they do: drarena's frozen-web proxy, set through HTTP(S)_PROXY and
REQUESTS_CA_BUNDLE in this process's environment, answers DuckDuckGo from the snapshot's index
and every page from the snapshot. The model is smolagents' OpenAIServerModel pointed at the
local OpenAI-compatible server drarena names in DRARENA_MODEL_API_BASE / DRARENA_MODEL.

This file is glue only: it reads the question from stdin, builds the agent from documented
constructor arguments (SMOLAGENTS_MAX_STEPS, SMOLAGENTS_MAX_RESULTS override the defaults),
and prints {"report", "citations"}; URLs in the answer become [n] markers.
"""

from __future__ import annotations

import json
import os
import re
import sys

URL = re.compile(r"https?://[^\s<>\"')\]]+")


def main() -> int:
    request = json.load(sys.stdin)
    from smolagents import CodeAgent, OpenAIServerModel, VisitWebpageTool, WebSearchTool

    model_name = os.environ.get("DRARENA_MODEL", "served").removeprefix("openai/")
    model = OpenAIServerModel(
        model_id=model_name,
        api_base=os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "none"),
        max_tokens=int(os.environ.get("SMOLAGENTS_MAX_TOKENS", "384")),
        temperature=0.0,
    )
    agent = CodeAgent(
        tools=[
            WebSearchTool(max_results=int(os.environ.get("SMOLAGENTS_MAX_RESULTS", "5"))),
            VisitWebpageTool(
                max_output_length=int(os.environ.get("SMOLAGENTS_PAGE_CHARS", "4000"))
            ),
        ],
        model=model,
        max_steps=int(os.environ.get("SMOLAGENTS_MAX_STEPS", "3")),
        verbosity_level=0,
    )
    low, high = request.get("word_limit") or (150, 250)
    task = (
        f"{request['question']}\n\nSearch the web, read pages, and answer in {low} to {high} "
        "words. Give the URL of each page you used."
    )
    history = request.get("history") or []
    if history:
        earlier = "\n\n".join(f"Q: {h['question']}\nA: {h['answer']}" for h in history)
        task = f"Earlier questions and your answers:\n{earlier}\n\n{task}"
    answer = str(agent.run(task))
    citations: list[str] = []

    def mark(match: re.Match[str]) -> str:
        url = match.group(0).rstrip(".,;:")
        if url not in citations:
            citations.append(url)
        return f"[{citations.index(url) + 1}]"

    report = URL.sub(mark, answer)
    json.dump({"report": report, "citations": citations}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
