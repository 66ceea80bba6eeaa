"""drarena command exchange (protocol 1) -> LangChain's Open Deep Research, unmodified.

Runs inside .venv-agents/open-deep-research (scripts/setup_agents.sh). Open Deep Research is a
LangGraph graph (`open_deep_research.deep_researcher.deep_researcher`): it writes a research
brief, a supervisor hands topics to researcher sub-agents (a tool-calling loop over its
search tool), each researcher's findings are compressed, and a final model call writes the
report with a `### Sources` list. It is driven through its documented entry point only: the
graph's `ainvoke` with `configurable` settings (open_deep_research/configuration.py).

- Search: `search_api: tavily`, its default and its only search engine (the others are model
  vendors' own search tools). It asks Tavily for `include_raw_content=True`, so each result
  comes with its page's text and the researcher reads pages through the search call: it
  fetches no page itself. drarena's frozen-web proxy answers api.tavily.com from the
  snapshot's index and fills raw_content from the snapshot's page (capped at 20,000
  characters); the proxy's log counts those as searches, and the pages they carry as the
  results they name (docs/real-agents.md says how the table counts them).
- Models: every role (research, summarization, compression, final report) is
  `openai:<DRARENA_MODEL>` on the local OpenAI-compatible server (OPENAI_BASE_URL, which the
  OpenAI client it builds reads), with completion budgets cut for a CPU model (ODR_*_TOKENS;
  its defaults are 8,192-10,000 tokens a call). ODR_TOOL_REQUIRED=1 gives the research role
  the relay's `+tool-required` model variant (see `configure`).
- Cost: no clarifying question (`allow_clarification: false`: there is no user to answer
  it), one research unit at a time, ODR_ITERATIONS supervisor calls (2: one to hand out the
  research, one to close it), ODR_TOOL_CALLS researcher tool calls. ODR_TRACE=<file> appends
  each model reply (text, tool calls) as a JSON line.

Citations: the report's `### Sources` list ("[n] Title: URL") gives the URLs; the body's [n]
markers are renumbered to their URL's place in the citation list. An entry with a title and
no URL (the 1.5B wrote such lists) is the page of that title among those its search handed
the researcher (the graph's raw_notes); an entry matching none is dropped. A report without
that list falls back to its inline URLs (adapter_common.cite).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys

from adapter_common import URL, cite, with_history

# "### Sources" (any heading level, "Sources" or "References") and everything after it
SOURCES_HEADING = re.compile(r"^\s*#{1,6}\s*(?:sources|references)\b.*$", re.I | re.M)
# one entry of that list: "[n] Title: URL" (also "n. ..." and "- [n] ..."); the URL may be
# missing (the 1.5B listed titles only), then the title names a page the research read
SOURCE_LINE = re.compile(r"^\s*(?:[-*]\s*)?\[?(\d{1,3})[\].:)]\s*(.*)$", re.M)
# how its search tool lists each page for the researcher (utils.tavily_search); the graph
# keeps those tool outputs in its state's raw_notes
NOTE_SOURCE = re.compile(r"^--- SOURCE \d+: (.*?) ---\s*\nURL: (\S+)", re.M)
MARKER = re.compile(r"\[(\d{1,3})\]")


def configure() -> dict[str, object]:
    """The environment the graph's clients read, and its `configurable` settings."""
    served = os.environ.get("DRARENA_MODEL", "served").removeprefix("openai/")
    defaults = {
        "OPENAI_BASE_URL": os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        "OPENAI_API_KEY": "none",
        "TAVILY_API_KEY": "frozen-web",
        # LangSmith tracing would post runs to api.smith.langchain.com: off
        "LANGSMITH_TRACING": "false",
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    model = f"openai:{served}"
    # its supervisor and researchers bind tools with no tool_choice and stop at a reply without
    # a call; the 1.5B replied in prose. ODR_TOOL_REQUIRED=1 names drarena's llama.cpp relay's
    # model variant that always calls (scripts/llamacpp_tools.py, REQUIRED_SUFFIX); a server
    # without the relay (vLLM) does not know that name: leave it 0 there
    research = model + ("+tool-required" if os.environ.get("ODR_TOOL_REQUIRED") == "1" else "")
    tokens = int(os.environ.get("ODR_TOKENS", "512"))
    return {
        "search_api": "tavily",
        "allow_clarification": False,
        "max_concurrent_research_units": 1,
        # the supervisor counts its own calls: at 1 it stops after planning, before any
        # research (supervisor_tools ends at research_iterations >= max); 2 is one round
        "max_researcher_iterations": int(os.environ.get("ODR_ITERATIONS", "2")),
        "max_react_tool_calls": int(os.environ.get("ODR_TOOL_CALLS", "2")),
        # its default, 3: the 1.5B's research brief ran to the 512-token budget on both of 2
        # tries once (LengthFinishReasonError, exit 1; 6 Dec 2026), and its sampling is the
        # server's default (the graph passes no temperature), so a retry can differ
        "max_structured_output_retries": 3,
        "research_model": research,
        "research_model_max_tokens": tokens,
        "summarization_model": model,
        "summarization_model_max_tokens": int(os.environ.get("ODR_SUMMARY_TOKENS", "384")),
        "compression_model": model,
        "compression_model_max_tokens": tokens,
        "final_report_model": model,
        # 640 cut its report (481 words) before the Sources list: 0 citations (6 Dec 2026)
        "final_report_model_max_tokens": int(os.environ.get("ODR_REPORT_TOKENS", "1024")),
    }


def _title(text: str) -> str:
    return " ".join(text.split()).strip(" :-").lower()


def pages_read(raw_notes: str) -> dict[str, str]:
    """title -> URL of each page its search tool handed the researcher (from the graph's
    raw_notes: the tool outputs it kept)."""
    return {_title(title): url for title, url in NOTE_SOURCE.findall(raw_notes)}


def source_url(entry: str, read: dict[str, str]) -> str | None:
    """The URL of one Sources entry: written in it, or else the page the research read whose
    title the entry gives (the whole title, or the entry starting with it)."""
    if found := URL.search(entry):
        return found.group(0).rstrip(".,;:")
    title = _title(entry)
    for known, url in read.items():
        if known and (title == known or title.startswith(known)):
            return url
    return None


def split_sources(report: str, read: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The report without its Sources list, and the list's URLs as citations; the body's [n]
    markers renumbered to each URL's 1-based place in that list (a marker the list does not
    name is left as written: drarena scores it as a citation it cannot resolve). An entry
    with no URL is resolved by title against `read` (pages_read), never guessed."""
    headings = list(SOURCES_HEADING.finditer(report))
    if not headings:
        return cite(report)
    heading = headings[-1]  # the last: a section title may also say "sources"
    body, listing = report[: heading.start()].rstrip(), report[heading.end() :]
    citations: list[str] = []
    renumber: dict[str, int] = {}
    for number, entry in SOURCE_LINE.findall(listing):
        url = source_url(entry, read or {})
        if url is None:
            continue
        if url not in citations:
            citations.append(url)
        renumber.setdefault(number, citations.index(url) + 1)
    if not citations:
        return cite(report)

    def mark(match: re.Match[str]) -> str:
        new = renumber.get(match.group(1))
        return match.group(0) if new is None else f"[{new}]"

    return MARKER.sub(mark, body), citations


def tracer(path: str) -> object:
    """A LangChain callback (RunnableConfig `callbacks`, its documented hook) appending each
    model reply to `path` as a JSON line: its text and the tool calls it made. ODR_TRACE=<file>
    turns it on; it is how one sees why a run did not search."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Trace(BaseCallbackHandler):
        def on_llm_end(self, response: object, **kwargs: object) -> None:
            for generations in getattr(response, "generations", []):
                for generation in generations:
                    message = getattr(generation, "message", None)
                    line = {
                        "text": str(getattr(generation, "text", ""))[:4000],
                        "tool_calls": getattr(message, "tool_calls", None) or [],
                    }
                    with open(path, "a", encoding="utf-8") as out:
                        out.write(json.dumps(line, default=str) + "\n")

    return Trace()


async def research(task: str, settings: dict[str, object]) -> tuple[str, str]:
    from langchain_core.messages import HumanMessage
    from open_deep_research.deep_researcher import deep_researcher

    config: dict[str, object] = {"configurable": settings}
    if trace := os.environ.get("ODR_TRACE"):
        config["callbacks"] = [tracer(trace)]
    state = await deep_researcher.ainvoke({"messages": [HumanMessage(content=task)]}, config)
    notes = "\n".join(str(n) for n in state.get("raw_notes") or [])
    return str(state.get("final_report") or ""), notes


def main() -> int:
    request = json.load(sys.stdin)
    settings = configure()
    low, high = request.get("word_limit") or (150, 250)
    task = with_history(
        f"{request['question']}\n\nAnswer in {low} to {high} words.", request.get("history") or []
    )
    report, notes = asyncio.run(research(task, settings))
    report, citations = split_sources(report, pages_read(notes))
    json.dump({"report": report, "citations": citations}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
