"""Control flow of closed_book, rag and oracle with the scripted backend (no model judged)."""

from __future__ import annotations

import pytest
from agent_helpers import MemoryRetrieverForTests, scripted_context, tool

from drarena.agents.base import Conversation, SourcePage
from drarena.agents.common import CUT_NOTE
from drarena.agents.registry import AgentContext, build_agent
from drarena.errors import DrarenaError
from drarena.models.backend import BackendReply
from drarena.models.scripted import reply

ASYNCIO = "http://site.test/asyncio"
ANSWER = {"report": "asyncio runs coroutines [1].", "citations": [ASYNCIO]}
NAMED = {"type": "function", "function": {"name": "answer"}}


async def test_closed_book_one_named_answer_call_no_evidence() -> None:
    context, backend = scripted_context([tool("answer", ANSWER)])
    answer = await build_agent({"kind": "closed_book"}, context).answer(
        Conversation("What is asyncio?"), (10, 50)
    )
    assert answer.agent == "closed_book" and answer.check.valid == 1
    (request,) = backend.requests
    assert request["tool_choice"] == NAMED
    assert "no access to the web" in request["messages"][0]["content"]
    assert "<<<BEGIN" not in request["messages"][-1]["content"]
    assert "10 to 50 words" in request["messages"][-1]["content"]


async def test_rag_retrieves_once_and_puts_pages_in_context() -> None:
    retriever = MemoryRetrieverForTests()
    context, backend = scripted_context([tool("answer", ANSWER)], retriever=retriever)
    answer = await build_agent(
        {"kind": "rag", "args": {"k": 2, "context_chars": 1000}}, context
    ).answer(Conversation("asyncio json"), (10, 50))
    assert retriever.queries == ["asyncio json"]
    first = answer.trajectory.steps[0]
    assert first.model is None
    assert [t.name for t in first.tools] == ["search", "open", "open"]
    assert first.tools[0].urls == (ASYNCIO, "http://site.test/json")
    assert first.note == "1 of 2 pages cut to fit"
    prompt = backend.requests[0]["messages"][-1]["content"]
    assert prompt.count("<<<BEGIN page") == 2 and prompt.index("<<<BEGIN") < prompt.index(
        "Question: asyncio json"
    )
    assert answer.trajectory.steps[1].model is not None


async def test_rag_with_a_failing_search_still_answers() -> None:
    context, backend = scripted_context(
        [tool("answer", ANSWER)], retriever=MemoryRetrieverForTests(fail_search=True)
    )
    answer = await build_agent({"kind": "rag"}, context).answer(Conversation("q"), (1, 5))
    assert answer.trajectory.steps[0].tools[0].error == (
        "search failed: bm25: the index is unreadable"
    )
    assert "(the search found no pages)" in backend.requests[0]["messages"][-1]["content"]
    assert answer.report.startswith("asyncio")


async def test_oracle_reads_the_target_pages() -> None:
    context, backend = scripted_context([tool("answer", ANSWER)])
    targets = (SourcePage(ASYNCIO, "asyncio", "TARGET TEXT about the event loop"),)
    answer = await build_agent({"kind": "oracle"}, context).answer(
        Conversation("What is asyncio?", targets=targets), (10, 50)
    )
    assert "TARGET TEXT about the event loop" in backend.requests[0]["messages"][-1]["content"]
    assert answer.trajectory.steps[0].tools[0].urls == (ASYNCIO,)
    assert answer.error is None


async def test_oracle_without_targets_says_so() -> None:
    context, _ = scripted_context([tool("answer", ANSWER)])
    answer = await build_agent({"kind": "oracle"}, context).answer(Conversation("q"), (1, 5))
    assert answer.error == "the oracle was given no target pages"
    assert answer.trajectory.steps[0].error == answer.error


async def test_invalid_answer_is_repaired_once_then_plain_text_is_kept() -> None:
    context, backend = scripted_context([tool("answer", '{"report": 3}'), tool("answer", ANSWER)])
    answer = await build_agent({"kind": "closed_book"}, context).answer(Conversation("q"), (1, 5))
    assert answer.trajectory.steps[0].tools[0].error == "'report' must be a non-empty string"
    assert answer.error is None and len(backend.requests) == 2

    context, _ = scripted_context(
        [
            reply("Plain words [1].\n\n[1]: http://x.test/a"),
            reply("Still plain [1].\n[1]: http://x.test/a"),
        ]
    )
    answer = await build_agent({"kind": "closed_book"}, context).answer(Conversation("q"), (1, 5))
    assert answer.error == (
        "no answer call in the reply (reply: 'Still plain [1]. [1]: http://x.test/a')"
    )
    assert answer.report == "Still plain [1]."
    assert answer.check.fabricated_urls == ("http://x.test/a",)


async def test_model_failure_is_an_answer_with_the_error() -> None:
    context, _ = scripted_context([ValueError("400 bad request")])
    answer = await build_agent({"kind": "closed_book"}, context).answer(Conversation("q"), (1, 5))
    assert answer.report == "" and answer.error is not None
    assert "400 bad request" in answer.error


async def test_a_failed_repair_call_marks_the_salvaged_text_as_an_outage() -> None:
    """The first reply had text but no call; the repair call then failed for good. The text
    is kept as the report, and the answer says a model call failed (the arena voids it)."""
    context, _ = scripted_context([reply("Plain text, no call."), ValueError("503 gone")])
    answer = await build_agent({"kind": "closed_book"}, context).answer(Conversation("q"), (1, 5))
    assert answer.report == "Plain text, no call."
    assert answer.model_call_failed and "503 gone" in (answer.error or "")
    assert (answer.error or "").count("model call failed") == 1


def test_bad_agent_config_is_one_clear_line() -> None:
    context = AgentContext()
    with pytest.raises(DrarenaError, match="unknown agent kind 'smart'"):
        build_agent({"kind": "smart"}, context)
    with pytest.raises(DrarenaError, match=r"agent rag: args.k: Input should be less"):
        build_agent({"kind": "rag", "args": {"k": 99}}, scripted_context([])[0])
    with pytest.raises(DrarenaError, match=r"agent react: args.max_step: Extra inputs"):
        build_agent({"kind": "react", "args": {"max_step": 2}}, scripted_context([])[0])
    with pytest.raises(DrarenaError, match="agent closed_book: no model client"):
        build_agent({"kind": "closed_book"}, context)
    with pytest.raises(DrarenaError, match=r"agent rag: args.name: set by drarena, not in"):
        build_agent({"kind": "rag", "args": {"name": "x"}}, context)  # a TypeError before


async def test_word_limit_is_checked() -> None:
    context, _ = scripted_context([])
    with pytest.raises(DrarenaError, match="word_limit"):
        await build_agent({"kind": "closed_book"}, context).answer(Conversation("q"), (50, 10))


async def test_answer_call_cut_into_text_by_the_token_limit_is_kept() -> None:
    cut = BackendReply(
        model="scripted",
        finish_reason="length",
        prompt_tokens=5,
        completion_tokens=160,
        cost_usd=None,
        tool_calls=(),
        text='<tool_call>\n{"name": "answer", "arguments": {"report": "Sorted '
        "takes a key [1] and so on and on",
    )
    context, backend = scripted_context([cut])
    answer = await build_agent({"kind": "closed_book"}, context).answer(Conversation("q"), (1, 5))
    assert answer.error is None and len(backend.requests) == 1
    assert answer.report == "Sorted takes a key [1] and so on and on"
    assert answer.trajectory.steps[0].note == CUT_NOTE


async def test_the_oracle_numbers_its_pages_and_a_text_report_cites_by_marker() -> None:
    """Issue 33: the 1.5B oracle wrote its report as plain text, cut at its token limit
    before any reference list, and so cited nothing though it held the target pages. The
    pages are numbered Source [1], [2]; the [n] markers of a text report name them."""
    json_url = "http://site.test/json"
    context, backend = scripted_context([reply("The loop runs coroutines [2]. Also [7].")])
    targets = (
        SourcePage(ASYNCIO, "asyncio", "about the event loop"),
        SourcePage(json_url, "json", "about coroutines"),
    )
    answer = await build_agent({"kind": "oracle"}, context).answer(
        Conversation("What runs coroutines?", targets=targets), (10, 50)
    )
    prompt = backend.requests[0]["messages"][-1]["content"]
    assert "Source [1]" in prompt and "Source [2]" in prompt
    assert prompt.index("about the event loop") < prompt.index("about coroutines")
    assert "numbered Source [1]" in backend.requests[0]["messages"][0]["content"]
    assert answer.cited_urls() == [json_url]  # [1] unused, [7] names no page shown
    assert answer.check.valid == 1 and answer.error is None


async def test_without_cite_shown_pages_are_not_numbered_and_markers_cite_nothing() -> None:
    context, backend = scripted_context([reply("Runs coroutines [1]."), reply("Again [1].")])
    targets = (SourcePage(ASYNCIO, "asyncio", "about the event loop"),)
    answer = await build_agent({"kind": "oracle", "args": {"cite_shown": False}}, context).answer(
        Conversation("q", targets=targets), (1, 50)
    )
    assert "Source [1]" not in backend.requests[0]["messages"][-1]["content"]
    assert answer.cited_urls() == []


PARTS_Q = "Answer each part: (1) What runs coroutines? (2) What encodes JSON documents?"


def test_question_parts_only_splits_numbered_questions() -> None:
    from drarena.agents.baselines import question_parts

    assert question_parts(PARTS_Q) == ["What runs coroutines?", "What encodes JSON documents?"]
    assert question_parts("What does f(2) return?") == []
    assert question_parts("(1) one (3) three") == []  # not numbered 1, 2, ...
    assert question_parts("(1) only one part") == []


def test_a_rambling_part_is_cut_after_a_sentence() -> None:
    from drarena.agents.baselines import short_part

    text = "The loop runs coroutines. " + "It also does more and more things " * 40
    assert short_part(text, 200) == "The loop runs coroutines."
    assert short_part("  short   answer ") == "short answer"


async def test_answer_parts_asks_one_call_a_part_and_cites_each_part() -> None:
    """Issue 33: the 1.5B oracle pasted its first page and was cut before the last part; with
    answer_parts each part is its own call over the same pages (the pages first, the part
    last), and each part cites the page sharing most of its words, whatever the model
    wrote (here [2] for a sentence of page 1)."""
    json_url = "http://site.test/json"
    context, backend = scripted_context(
        [reply("The event loop runs coroutines [2]."), reply("The json module encodes them.")]
    )
    targets = (
        SourcePage(ASYNCIO, "asyncio", "The event loop runs coroutines and callbacks."),
        SourcePage(json_url, "json", "The json module encodes and decodes JSON documents."),
    )
    agent = build_agent({"kind": "oracle", "args": {"answer_parts": True}}, context)
    answer = await agent.answer(Conversation(PARTS_Q, targets=targets), (10, 50))
    assert len(backend.requests) == 2
    first, second = (r["messages"] for r in backend.requests)
    assert first[-1]["content"].endswith("Question: What runs coroutines?")
    assert second[-1]["content"].endswith("Question: What encodes JSON documents?")
    # the same pages lead both prompts: llama.cpp reuses the prefix
    assert first[-1]["content"].split("Question:")[0] == second[-1]["content"].split("Question:")[0]
    assert answer.report == (
        "(1) The event loop runs coroutines. [1]\n\n(2) The json module encodes them. [2]"
    )
    assert answer.cited_urls() == [ASYNCIO, json_url]
    assert f"cites {json_url}" in answer.trajectory.steps[-1].note
    assert answer.error is None


async def test_oracle_page_per_part_reads_each_part_over_its_own_target() -> None:
    """page_per_part: each part's prompt holds only the target sharing the most words with
    it (run Q: the 1.5B oracle answered a part worse with every target in its context);
    a part sharing no word with any target reads them all."""
    json_url = "http://site.test/json"
    context, backend = scripted_context(
        [reply("The event loop."), reply("The json module."), reply("No idea.")]
    )
    targets = (
        SourcePage(ASYNCIO, "asyncio", "The event loop runs coroutines and callbacks."),
        SourcePage(json_url, "json", "The json module encodes and decodes JSON documents."),
    )
    question = (
        "Answer each part: (1) What runs coroutines? (2) What encodes JSON documents? "
        "(3) Why zebras?"
    )
    args = {"answer_parts": True, "page_per_part": True}
    agent = build_agent({"kind": "oracle", "args": args}, context)
    answer = await agent.answer(Conversation(question, targets=targets), (10, 50))
    first, second, third = (r["messages"][-1]["content"] for r in backend.requests)
    assert ASYNCIO in first and json_url not in first
    assert json_url in second and ASYNCIO not in second
    assert ASYNCIO in third and json_url in third
    assert answer.cited_urls() == [ASYNCIO, json_url]
    assert answer.error is None


async def test_oracle_part_chars_caps_what_a_part_reads_of_its_page() -> None:
    """part_chars: a part reads that many characters of its page, not the whole budget."""
    text = "The event loop runs coroutines. " + "x" * 1500 + " TAIL-MARK"
    targets = (SourcePage(ASYNCIO, "asyncio", text),)
    question = "Answer each part: (1) What runs coroutines? (2) What is the event loop?"
    for part_chars, tail in ((None, True), (600, False)):
        args = {"answer_parts": True, "page_per_part": True, "context_chars": 4000}
        if part_chars:
            args["part_chars"] = part_chars
        context, backend = scripted_context([reply("The event loop."), reply("More.")])
        agent = build_agent({"kind": "oracle", "args": args}, context)
        await agent.answer(Conversation(question, targets=targets), (10, 50))
        prompts = [r["messages"][-1]["content"] for r in backend.requests]
        assert all(("TAIL-MARK" in p) is tail for p in prompts)
        assert all("runs coroutines" in p for p in prompts)


async def test_answer_parts_falls_back_to_one_call_for_an_unnumbered_question() -> None:
    context, backend = scripted_context([tool("answer", ANSWER)])
    targets = (SourcePage(ASYNCIO, "asyncio", "about the event loop"),)
    agent = build_agent({"kind": "rag", "args": {"answer_parts": True}}, context)
    await agent.answer(Conversation("What is asyncio?", targets=targets), (10, 50))
    assert len(backend.requests) == 1 and backend.requests[0].get("tools")


async def test_a_failed_part_call_is_the_answer_error_not_a_score() -> None:
    steps = [reply("The loop runs coroutines [1]."), ValueError("503 gone")]
    context, _ = scripted_context(steps)
    targets = (SourcePage(ASYNCIO, "asyncio", "The event loop runs coroutines."),)
    agent = build_agent({"kind": "oracle", "args": {"answer_parts": True}}, context)
    answer = await agent.answer(Conversation(PARTS_Q, targets=targets), (10, 50))
    assert answer.model_call_failed and answer.report == "(1) The loop runs coroutines. [1]"
    assert "part 2" in (answer.trajectory.steps[-1].error or "")


async def test_closed_book_answer_parts_asks_each_part_without_pages() -> None:
    context, backend = scripted_context([reply("Coroutines [3]."), reply("The json module.")])
    agent = build_agent({"kind": "closed_book", "args": {"answer_parts": True}}, context)
    answer = await agent.answer(Conversation(PARTS_Q), (10, 50))
    assert [r["messages"][-1]["content"] for r in backend.requests] == [
        "Question: What runs coroutines?",
        "Question: What encodes JSON documents?",
    ]
    assert "own knowledge" in backend.requests[0]["messages"][0]["content"]
    assert answer.report == "(1) Coroutines.\n\n(2) The json module."
    assert answer.cited_urls() == [] and answer.error is None


async def test_rag_answer_parts_searches_each_part() -> None:
    """Issue 33: one search for a three-part question on three pages found none of them;
    with answer_parts each part is its own search, its own pages and its own call, and the
    citations are numbered across the parts in the order first cited."""
    json_url = "http://site.test/json"
    retriever = MemoryRetrieverForTests()
    context, backend = scripted_context(
        [reply("JSON documents are encoded."), reply("asyncio writes concurrent code.")],
        retriever=retriever,
    )
    agent = build_agent({"kind": "rag", "args": {"answer_parts": True, "k": 1}}, context)
    question = "Answer each part: (1) What encodes JSON documents? (2) What is asyncio for?"
    answer = await agent.answer(Conversation(question), (10, 50))
    assert retriever.queries == ["What encodes JSON documents?", "What is asyncio for?"]
    first, second = (r["messages"][-1]["content"] for r in backend.requests)
    assert "json encodes and decodes" in first and "json encodes and decodes" not in second
    assert answer.report == (
        "(1) JSON documents are encoded. [1]\n\n(2) asyncio writes concurrent code. [2]"
    )
    assert answer.cited_urls() == [json_url, ASYNCIO]
    tools = [t.id for step in answer.trajectory.steps for t in step.tools]
    assert tools == ["rag-p1-search", "rag-p1-open-0", "rag-p2-search", "rag-p2-open-0"]


async def test_rag_search_question_reads_one_search_for_every_part() -> None:
    """`search: question` (the demo's one-shot RAG): one search for the whole question, its
    k pages read for every part, so a part whose page that search did not rank goes
    unread; the parts are still one call each."""
    retriever = MemoryRetrieverForTests()
    context, backend = scripted_context(
        [reply("JSON documents are encoded."), reply("I do not know.")], retriever=retriever
    )
    args = {"answer_parts": True, "k": 1, "search": "question"}
    agent = build_agent({"kind": "rag", "args": args}, context)
    question = "Answer each part: (1) What encodes JSON documents? (2) What is asyncio for?"
    answer = await agent.answer(Conversation(question), (10, 50))
    assert retriever.queries == [question]
    first, second = (r["messages"][-1]["content"] for r in backend.requests)
    assert first.count("<<<BEGIN page") == 1 and second.count("<<<BEGIN page") == 1
    assert first.split("Question:")[0] == second.split("Question:")[0]
    tools = [t.id for step in answer.trajectory.steps for t in step.tools]
    assert tools == ["rag-search", "rag-open-0"]


def test_rag_search_must_be_part_or_question() -> None:
    context, _ = scripted_context([])
    with pytest.raises(DrarenaError, match="search"):
        build_agent({"kind": "rag", "args": {"search": "page"}}, context)
