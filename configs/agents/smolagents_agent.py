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

from adapter_common import cite, with_history

# ToolCallingAgent's system prompt, shortened (SMOLAGENTS_PROMPT=short, the default): its own is
# about 3,800 characters of worked examples that a 1.5B model on 2 CPU cores reads at every
# step. This keeps its rules; the tools' JSON schemas travel in the request's `tools`, which the
# model's chat template (llama.cpp --jinja) renders into the system message.
SHORT_SYSTEM_PROMPT = """You are a research assistant. Answer the task with the tools.
Each step, call exactly one tool, as one JSON object {"name": ..., "arguments": {...}}:
- web_search to find pages (a short keyword query);
- visit_webpage to read a page from the search results (give its full URL);
- final_answer when you have read enough: the answer in plain prose, and in sources the URL of
  each page you used.
Search first, then read one page from the results, then give the final answer.
{%- if custom_instructions %}
{{custom_instructions}}
{%- endif %}
"""
# Where the tool agent's model stops: smolagents' own stop words, and the end of the fenced JSON
# tool call followed by a blank line (Qwen2.5-Coder-1.5B writes ```json {...} ``` and then
# newlines up to max_tokens; the opening ```json does not match).
TOOL_STOP = ["Observation:", "Calling tools:", "```\n\n", "\n\n\n\n"]


def tool_call_schema(tools: list[object], seen: list[str] | None = None) -> dict[str, object]:
    """A JSON schema for one call of one of `tools`: {"name": <tool>, "arguments": {...}}.

    llama.cpp's server takes it as `json_schema` (a grammar on the output). Qwen2.5-Coder-1.5B
    ignores the tool-call format its chat template asks for (`<tool_call>`), and llama.cpp does
    not hold it to `tool_choice: required`: it answers in prose, which smolagents cannot parse.
    smolagents reads a JSON blob with these two keys from the message text as the tool call.
    `seen`: the URLs this run's tools returned or opened; when there are any, the cited
    answer's sources are chosen from them (input_schema)."""
    calls = []
    for tool in tools:
        inputs: dict[str, dict[str, str]] = tool.inputs  # type: ignore[attr-defined]
        name: str = tool.name  # type: ignore[attr-defined]
        arguments = {
            "type": "object",
            "properties": {
                key: input_schema(name, key, spec, seen) for key, spec in inputs.items()
            },
            "required": list(inputs),
        }
        calls.append(
            {
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": arguments},
                "required": ["name", "arguments"],
            }
        )
    return {"anyOf": calls}


# How long the answer may be in the grammar, in characters: the JSON call closes before
# max_tokens runs out. Why: on the 1.5B model, 2 of 5 final answers repeated one sentence until
# max_tokens cut the JSON, which smolagents could not parse (6 Dec 2026).
ANSWER_CHARS = 1200
SOURCES_MAX = 5


def input_schema(
    tool: str, key: str, spec: dict[str, str], seen: list[str] | None = None
) -> dict[str, object]:
    """The JSON schema of one tool input: a string, except the cited answer's `sources`, a
    list of 1 to SOURCES_MAX URLs (of `seen` when the run has seen any: SMOLAGENTS_SOURCES=seen,
    the default), and its `answer`, at most ANSWER_CHARS long. Why `seen`: with free strings the
    1.5B model cited docs.python.org URLs from memory, none of the snapshot's, after opening a
    snapshot page (6 Dec 2026); it still chooses which of its results and pages to cite."""
    if spec.get("type") == "array":
        items: dict[str, object] = {"type": "string", "minLength": 8, "maxLength": 300}
        if seen:
            items = {"enum": list(seen)}
        return {
            "type": "array",
            "items": items,
            "minItems": 1,
            "maxItems": min(SOURCES_MAX, len(seen)) if seen else SOURCES_MAX,
        }
    if tool == "final_answer" and key == "answer":
        return {"type": "string", "maxLength": ANSWER_CHARS}
    return {"type": "string"}


def cited_answer_tool() -> object:
    """A final_answer tool that takes the answer and the URLs of the pages used, as two
    arguments (SMOLAGENTS_CITED_ANSWER=1, the default for the tool agent). smolagents keeps a
    tool the user names final_answer in place of its own (agents.py: tools.setdefault); this
    one returns the answer with its sources listed after it. Why: asked for "the URL of each
    page you used" in the prose, the 1.5B model left them out of 4 of 5 answers (6 Dec 2026);
    a sources argument the grammar requires is a documented tool input, not a change to the
    agent."""
    from smolagents import Tool

    class CitedAnswerTool(Tool):  # type: ignore[misc]
        name = "final_answer"
        description = "Gives the final answer and the URLs of the pages it is based on."
        inputs = {  # noqa: RUF012 (smolagents reads the class attribute)
            "answer": {"type": "string", "description": "The answer, in plain prose"},
            "sources": {
                "type": "array",
                "description": "The URLs of the pages you read and used (from the results)",
            },
        }
        output_type = "string"

        def forward(self, answer: str, sources: list[str]) -> str:
            listed = "\n".join(str(url) for url in sources)
            return f"{answer}\n\nSources:\n{listed}" if listed else answer

    return CitedAnswerTool()


def next_tools(called: set[str], steps_done: int, max_steps: int) -> list[str]:
    """The tools the next step may call (SMOLAGENTS_TOOL_ORDER=1, the default): a search
    first, then a page, then the answer; the answer at the last step whatever came before.
    Why: on the 1.5B model, with every tool allowed, the agent answered after its search
    without opening a page (5 Dec 2026: 2 of 2 questions, 0 pages, 0 citations); the OpenAI
    Agents SDK adapter enables its tools in the same order (its documented `is_enabled`)."""
    if steps_done >= max_steps - 1 or "visit_webpage" in called:
        return ["final_answer"]
    return ["visit_webpage"] if "web_search" in called else ["web_search"]


def everything(tools: list[object], final: object) -> list[object]:
    """The tools the agent has, final_answer last and once."""
    return [*(t for t in tools if t is not final), final]


RESULT_LINK = re.compile(r"^\[[^\]\n]*\]\((https?://[^)\s]+)\)", re.MULTILINE)
SEEN_MAX = 12


def seen_urls(calls: list[object], observations: str) -> list[str]:
    """The URLs one step saw: the pages it opened (visit_webpage's url), then the results
    its search listed (WebSearchTool's "[title](url)" lines), at most SEEN_MAX."""
    urls: list[str] = []
    for call in calls:
        arguments = getattr(call, "arguments", None)
        if getattr(call, "name", "") == "visit_webpage" and isinstance(arguments, dict):
            urls.append(str(arguments.get("url", "")))
        elif getattr(call, "name", "") == "web_search":
            urls += RESULT_LINK.findall(observations)
    return [u for u in urls if u.startswith(("http://", "https://"))][:SEEN_MAX]


def main() -> int:
    request = json.load(sys.stdin)
    from smolagents import (
        CodeAgent,
        FinalAnswerTool,
        OpenAIServerModel,
        ToolCallingAgent,
        VisitWebpageTool,
        WebSearchTool,
    )

    kind = os.environ.get("SMOLAGENTS_AGENT", "tool")
    tools = [
        WebSearchTool(max_results=int(os.environ.get("SMOLAGENTS_MAX_RESULTS", "5"))),
        VisitWebpageTool(max_output_length=int(os.environ.get("SMOLAGENTS_PAGE_CHARS", "4000"))),
    ]
    settings: dict[str, object] = {}
    final = FinalAnswerTool()
    if kind == "tool" and os.environ.get("SMOLAGENTS_CITED_ANSWER", "1") == "1":
        final = cited_answer_tool()
        tools.append(final)  # named final_answer: smolagents keeps it in place of its own
    if kind == "tool":
        settings["stop"] = TOOL_STOP
        if os.environ.get("SMOLAGENTS_JSON_SCHEMA", "1") == "1":
            settings["extra_body"] = {"json_schema": tool_call_schema(everything(tools, final))}
    model_name = os.environ.get("DRARENA_MODEL", "served").removeprefix("openai/")
    model = OpenAIServerModel(
        model_id=model_name,
        api_base=os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "none"),
        max_tokens=int(os.environ.get("SMOLAGENTS_MAX_TOKENS", "384")),
        temperature=0.0,
        **settings,
    )
    agent_class = {"code": CodeAgent, "tool": ToolCallingAgent}[kind]
    options: dict[str, object] = {}
    if kind == "tool" and os.environ.get("SMOLAGENTS_PROMPT", "short") == "short":
        import importlib.resources

        import yaml

        templates = yaml.safe_load(
            importlib.resources.files("smolagents.prompts")
            .joinpath("toolcalling_agent.yaml")
            .read_text(encoding="utf-8")
        )
        templates["system_prompt"] = SHORT_SYSTEM_PROMPT
        options["prompt_templates"] = templates
    callbacks: list[object] = []
    max_steps = int(os.environ.get("SMOLAGENTS_MAX_STEPS", "3"))
    every = everything(tools, final)
    ordered = "extra_body" in settings and os.environ.get("SMOLAGENTS_TOOL_ORDER", "1") == "1"
    if ordered:  # the json_schema of each next call allows only the next tool (next_tools)
        called: set[str] = set()
        steps = [0]

        seen: list[str] = []
        keep_seen = os.environ.get("SMOLAGENTS_SOURCES", "seen") == "seen"

        def allow(names: list[str]) -> None:
            chosen = [tool for tool in every if tool.name in names]
            schema = tool_call_schema(chosen, seen if keep_seen else None)
            model.kwargs["extra_body"] = {"json_schema": schema}

        def advance(step: object, **_: object) -> None:
            calls = getattr(step, "tool_calls", None) or []
            called.update(str(getattr(call, "name", "")) for call in calls)
            for url in seen_urls(calls, str(getattr(step, "observations", "") or "")):
                if url not in seen:
                    seen.append(url)
            steps[0] += 1
            allow(next_tools(called, steps[0], max_steps))

        allow(next_tools(called, 0, max_steps))
        callbacks.append(advance)
    trace = os.environ.get("SMOLAGENTS_TRACE")
    if trace:  # each step as it ends: what the model said, the tool calls, what they returned

        def record(step: object, **_: object) -> None:
            with open(trace, "a", encoding="utf-8") as out:
                out.write(json.dumps(step.dict(), default=str) + "\n")  # type: ignore[attr-defined]

        callbacks.append(record)
    if callbacks:
        options["step_callbacks"] = callbacks
    agent = agent_class(
        tools=tools,
        model=model,
        max_steps=max_steps,
        verbosity_level=0,
        **options,
    )
    low, high = request.get("word_limit") or (150, 250)
    task = (
        f"{request['question']}\n\nSearch the web, read pages, and answer in {low} to {high} "
        "words. Give the URL of each page you used."
    )
    answer = str(agent.run(with_history(task, request.get("history") or [])))
    report, citations = cite(answer)
    json.dump({"report": report, "citations": citations}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
