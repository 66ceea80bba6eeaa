"""The smolagents adapter's tool order (configs/agents/smolagents_agent.py): which tools each
step's json_schema allows. Pure logic; the adapter itself runs in its own venv."""

from __future__ import annotations

from types import ModuleType

from agent_helpers import load_adapter


def _adapter() -> ModuleType:
    return load_adapter("smolagents_agent.py")


def test_search_then_page_then_answer() -> None:
    next_tools = _adapter().next_tools
    assert next_tools(set(), 0, 4) == ["web_search"]
    assert next_tools({"web_search"}, 1, 4) == ["visit_webpage"]
    assert next_tools({"web_search", "visit_webpage"}, 2, 4) == ["final_answer"]
    # a search that failed to move on (the model searched again): still a page next
    assert next_tools({"web_search"}, 2, 4) == ["visit_webpage"]


def test_the_last_step_answers_whatever_came_before() -> None:
    next_tools = _adapter().next_tools
    assert next_tools(set(), 2, 3) == ["final_answer"]
    assert next_tools({"web_search"}, 3, 4) == ["final_answer"]


def test_the_schema_allows_only_the_chosen_tools() -> None:
    class Tool:
        def __init__(self, name: str) -> None:
            self.name = name
            self.inputs = {"query": {"type": "string"}}

    schema = _adapter().tool_call_schema([Tool("web_search")])
    branches = schema["anyOf"]
    assert [b["properties"]["name"]["const"] for b in branches] == ["web_search"]
    assert branches[0]["properties"]["arguments"]["required"] == ["query"]


def test_the_final_answer_needs_sources_and_closes_in_time() -> None:
    """The cited final_answer's schema: `sources` 1 to 5 URL strings, and an `answer` the
    grammar cuts at ANSWER_CHARS so the JSON call closes before max_tokens."""
    adapter = _adapter()

    class Final:  # the adapter's CitedAnswerTool, as far as the schema reads it
        def __init__(self) -> None:
            self.name = "final_answer"
            self.inputs = {
                "answer": {"type": "string", "description": "a"},
                "sources": {"type": "array", "description": "s"},
            }

    (branch,) = adapter.tool_call_schema([Final()])["anyOf"]
    arguments = branch["properties"]["arguments"]
    assert arguments["required"] == ["answer", "sources"]
    assert arguments["properties"]["answer"] == {
        "type": "string",
        "maxLength": adapter.ANSWER_CHARS,
    }
    sources = arguments["properties"]["sources"]
    assert sources["type"] == "array" and sources["items"]["type"] == "string"
    assert (sources["minItems"], sources["maxItems"]) == (1, adapter.SOURCES_MAX)
    # a search's query is not capped: only the final answer's text is
    assert adapter.input_schema("web_search", "query", {"type": "string"}) == {"type": "string"}


def test_final_answer_comes_last_and_once() -> None:
    everything = _adapter().everything
    search, final = object(), object()
    assert everything([search, final], final) == [search, final]
    assert everything([search], final) == [search, final]


def test_sources_are_chosen_from_what_the_run_saw() -> None:
    adapter = _adapter()
    seen = ["https://127.0.0.1:8765/library/json.html", "https://127.0.0.1:8765/x.html"]
    sources = adapter.input_schema("final_answer", "sources", {"type": "array"}, seen)
    assert sources["items"] == {"enum": seen}
    assert (sources["minItems"], sources["maxItems"]) == (1, 2)
    # nothing seen yet (no search ran): any URL-length strings, as before
    free = adapter.input_schema("final_answer", "sources", {"type": "array"}, [])
    assert free["items"]["type"] == "string" and free["maxItems"] == adapter.SOURCES_MAX


def test_seen_urls_reads_opened_pages_and_listed_results() -> None:
    class Call:
        def __init__(self, name: str, arguments: object) -> None:
            self.name, self.arguments = name, arguments

    results = (
        "## Search Results\n\n[json — JSON encoder](https://h/library/json.html)\nthe json "
        "module [inline](https://h/not-a-result.html)\n\n[File Formats](https://h/ff.html)\n"
    )
    seen_urls = _adapter().seen_urls
    assert seen_urls([Call("web_search", {"query": "json"})], results) == [
        "https://h/library/json.html",
        "https://h/ff.html",
    ]
    opened = [Call("visit_webpage", {"url": "https://h/library/json.html"})]
    assert seen_urls(opened, "# page text [a](https://elsewhere/)") == [
        "https://h/library/json.html"
    ]
    assert seen_urls([Call("visit_webpage", "not a dict")], "") == []
