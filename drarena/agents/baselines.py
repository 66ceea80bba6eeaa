"""Baselines that bracket `react`: null < closed_book < rag < react < oracle on a capable model.

Why: if the Examiner does not prefer the oracle (given the round's target pages) over the
closed-book model, the arena is not measuring research; the baselines make that testable.
Each answers in one model call through the same `answer` tool as react.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from drarena.agents import citations as cite
from drarena.agents.base import Answer, Conversation, ModelCall, SourcePage, model_call_error
from drarena.agents.common import (
    CITE_RULE,
    CUT_NOTE,
    DATA_RULE,
    NUMBERED_RULE,
    PARTS_RULE,
    TEXT_CALL_NOTE,
    Message,
    Recorder,
    answer_from_text,
    answer_tool,
    arguments_text,
    check_word_limit,
    conversation_messages,
    cut_answer_in_text,
    no_call_error,
    page_block,
    read_answer,
    salvage_citations,
    tool_event,
    unwrap_text_calls,
)
from drarena.agents.registry import AgentContext, parse_agent_args
from drarena.corpus.terms import content_stems
from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.types import Completion
from drarena.quoting import fit_evenly
from drarena.registry import ComponentSpec


def _args(**arguments: Any) -> str:
    return arguments_text(arguments)


ANSWER_CHOICE = {"type": "function", "function": {"name": "answer"}}

CLOSED_BOOK_SYSTEM = (
    "You are an expert. Answer the question from your own knowledge; you "
    f"have no access to the web. Answer with the answer tool. {CITE_RULE}"
)
EVIDENCE_SYSTEM = (
    "You are a research assistant. Answer the question from the pages given "
    f"with it. Answer with the answer tool. {DATA_RULE} {CITE_RULE}"
)
# with `cite_shown` (the default): each part answered from the pages in a sentence or two
# (Qwen2.5-Coder-1.5B pasted the pages' first paragraphs and was cut at its token limit)
# and the pages numbered: the markers it writes name its sources (cite.shown_by_marker)
PARTS_SYSTEM = f"{EVIDENCE_SYSTEM} {PARTS_RULE} {NUMBERED_RULE}"


# `answer_parts`: one short call per numbered part of the question, the pages first so that
# llama.cpp reuses their prompt prefix across the calls
PART_SYSTEM = (
    "You are a research assistant. Answer one question from the pages given with it, in "
    "two or three sentences of your own words that give everything the pages say about it; "
    "give names, numbers and values exactly as the pages write them. If the pages do not "
    f"say, answer from your own knowledge. {DATA_RULE}"
)
CLOSED_PART_SYSTEM = (
    "You are an expert. Answer one question from your own knowledge (you have no access "
    "to the web) in two or three sentences that give everything you know about it."
)
PART_CHARS = 800  # a part's answer past this is cut at a sentence end: a few sentences
_MARKERS = re.compile(r"\s*\[\d{1,3}\]")
_PART = re.compile(r"(?:^|\s)\((\d{1,2})\)\s+")


class BaselineArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field("agent", description="model role in the models config")
    max_repairs: int = Field(1, ge=0, le=5, description="re-asks after an invalid answer")


CITE_SHOWN = (
    "the answer's citations must be URLs of the pages it was given (at least one, by the "
    "answer tool's schema, written before the report), each part of the question is "
    "answered in a sentence or two from them, the pages are numbered Source [1], [2], ... "
    "so that a report written as plain text (taken as the answer) cites by its [n] markers; "
    "false: the prompt, tool and repairs of runs recorded before"
)


Sources = tuple[Sequence[SourcePage], str]  # a part's pages and their quoted text

ANSWER_PARTS = (
    "a question numbered (1) ... (2) ... (the extractive task generator's form) is answered "
    "one part a call, each in two or three sentences (from the same pages, if the agent has "
    "any), and each part cites the page sharing most of its words (markers the model wrote "
    "are replaced); false (the default, and any question without numbered parts): one call "
    "for the whole answer"
)


class _PartsArgs(BaselineArgs):
    answer_parts: bool = Field(False, description=ANSWER_PARTS)
    part_role: str = Field(
        "", description="model role of the per-part calls (answer_parts); '' = `role`"
    )


class ClosedBookArgs(_PartsArgs):
    """closed_book's args: the model role, repairs and answering by parts."""


class _PagesArgs(_PartsArgs):
    context_chars: int = Field(8000, ge=500, description="characters of page text, shared")
    cite_shown: bool = Field(True, description=CITE_SHOWN)


SEARCH = (
    "with answer_parts: 'part' (the default) searches once per part, each part read over "
    "its own results; 'question' searches once for the whole question and reads every part "
    "over those k pages (textbook one-shot RAG: a width question's other pages are found "
    "only if the one search ranks them in its top k)"
)


class RagArgs(_PagesArgs):
    retriever: ComponentSpec = Field(default_factory=lambda: ComponentSpec(kind="bm25"))
    k: int = Field(3, ge=1, le=20, description="pages put in context")
    search: Literal["part", "question"] = Field("part", description=SEARCH)


class OracleArgs(_PagesArgs):
    """The oracle's args: its pages are the round's targets, so no retriever."""

    page_per_part: bool = Field(
        False,
        description="with answer_parts: each part read over the one target page sharing the "
        "most words with it (the whole budget for it), not all the targets together",
    )
    part_chars: int | None = Field(
        None,
        ge=500,
        description="with page_per_part: characters read of the part's page (default: "
        "context_chars); the demo reads 2,000, the lead the extractive generator draws its "
        "facts from and what rag reads of its page: a third of the prompt to prefill a part",
    )


def question_parts(question: str) -> list[str]:
    """The parts of a question numbered (1), (2), ... in order, each without its number; []
    when it has fewer than two or they are not numbered 1, 2, 3, ... Why so strict: only
    a question written in parts (the extractive generator's "Answer each part: (1) ...")
    may be split; a "(2)" inside an ordinary question is text."""
    found = list(_PART.finditer(question))
    if len(found) < 2 or [int(m.group(1)) for m in found] != list(range(1, len(found) + 1)):
        return []
    ends = [m.start() for m in found[1:]] + [len(question)]
    parts = [question[m.end() : end].strip() for m, end in zip(found, ends, strict=True)]
    return parts if all(parts) else []


def short_part(text: str, limit: int = PART_CHARS) -> str:
    """A part's answer in at most `limit` characters, cut after its last whole sentence
    (or at a word) so that a model that rambles past two sentences is cut where it strays."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(". "), head.rfind("] "))
    if end > 0:
        return head[: end + 1].rstrip()
    return head.rsplit(" ", 1)[0].rstrip() + " ..."


def attribute(text: str, pages: Sequence[SourcePage]) -> int:
    """The number n (1-based) of the page sharing the most distinct content stems with
    `text`, the first on a tie; 0 when none shares any. Why: the 1.5B model answers each
    part well but names no page, or the wrong one (it cited base64 for a fact of the
    multiprocessing page); the agent knows which pages it read and cites the one the
    sentence came from, as post-hoc attribution does in RAG systems. Pure arithmetic."""
    wanted = set(content_stems(text))
    best, best_n = 0, 0
    for n, page in enumerate(pages, 1):
        shared = len(wanted & set(content_stems(page.text)))
        if shared > best:
            best, best_n = shared, n
    return best_n


async def single_answer(
    client: ModelClient,
    role: str,
    messages: list[Message],
    rec: Recorder,
    max_repairs: int,
    word_limit: tuple[int, int],
    shown: Sequence[str] = (),
    text_answers: bool = False,
) -> Answer:
    """One `answer` call, re-asked up to max_repairs times; plain text as the last resort.
    `shown`: the pages' URLs the citations must come from (answer_tool). `text_answers`: a
    reply that is a report written as plain text (no call, none written as text) is the
    answer at once, its references read from the text. Why: llama.cpp ignores a forced
    tool_choice, and Qwen2.5-Coder-1.5B, told to "write a Markdown report", wrote a good one
    as text; re-asked to call the tool, it replaced it with a one-line summary of it."""
    messages = list(messages)
    text, finish = "", ""
    error = "no answer"
    for _ in range(max_repairs + 1):
        started = rec.now()
        try:
            completion = await client.complete(
                role, messages, tools=[answer_tool(word_limit, shown)], tool_choice=ANSWER_CHOICE
            )
        except DrarenaError as exc:
            rec.failed_call(started)
            error = model_call_error(exc)
            rec.step(None, error=error)
            break
        model = rec.model(completion)
        unwrapped = unwrap_text_calls(completion, ("answer",))
        note_text = TEXT_CALL_NOTE if unwrapped is not completion else ""
        completion = unwrapped
        if completion.text.strip():
            text, finish = completion.text.strip(), completion.finish_reason
        call = next((c for c in completion.tool_calls if c.name == "answer"), None)
        if call is None:
            taken = _answer_as_text(completion, rec, model, text_answers, shown)
            if taken is not None:
                return taken
            error = no_call_error("no answer call in the reply", completion.text)
            rec.step(model, error=error)
            messages += [
                completion.assistant_message(),
                {"role": "user", "content": "Call the answer tool with your report."},
            ]
            continue
        called = rec.now()
        try:
            report, urls, note = read_answer(call.arguments, completion.finish_reason)
        except ValueError as exc:
            error = str(exc)
            rec.step(
                model,
                [tool_event(call.id, call.name, call.arguments, called, rec.now(), error=error)],
            )
            messages += [
                completion.assistant_message(),
                {"role": "tool", "tool_call_id": call.id, "content": f"error: {exc}"},
                {"role": "user", "content": "Call the answer tool again, correctly."},
            ]
            continue
        rec.step(
            model,
            [tool_event(call.id, call.name, call.arguments, called, rec.now())],
            note="; ".join(n for n in (note_text, note) if n),
        )
        return rec.finish(*_references(report, urls, text_answers, shown))
    body, refs = answer_from_text(text, finish)
    return rec.finish(body, refs, error=error)


def _answer_as_text(
    completion: Completion,
    rec: Recorder,
    model: ModelCall,
    text_answers: bool,
    shown: Sequence[str],
) -> Answer | None:
    """The answer of a reply with no answer call, when its text holds one: an answer call
    the token limit cut (salvaged), or with `text_answers` a report written as text; None
    when it must be asked again."""
    salvaged = cut_answer_in_text(completion.text, completion.finish_reason)
    if salvaged is not None:
        rec.step(model, note=CUT_NOTE)
        return rec.finish(salvaged, salvage_citations(completion.text))
    if text_answers and completion.text.strip():
        rec.step(model, note="report written as text, taken as the answer")
        body, refs = answer_from_text(completion.text, completion.finish_reason)
        return rec.finish(body, refs or cite.shown_by_marker(body, shown))
    return None


def _references(
    report: str, urls: list[str], text_answers: bool, shown: Sequence[str]
) -> tuple[str, list[str]]:
    """An answer call's report and citations; with none given, its trailing '[n]: URL'
    lines, else (`text_answers`) the shown pages its [n] markers number."""
    if not urls:
        report, urls = cite.split_references(report)
    if not urls and text_answers:
        urls = cite.shown_by_marker(report, shown)
    return report, urls


def evidence_text(
    pages: list[SourcePage], budget_chars: int, numbered: bool = False
) -> tuple[str, str]:
    """Pages as quoted blocks sharing a character budget evenly; the cut is noted.
    `numbered`: the blocks are Source [1], [2], ... in the order of `pages`."""
    fitted = fit_evenly([p.text for p in pages], budget_chars)
    blocks = [
        page_block(p.url, p.title, f.text, "cut to fit" if f.cut else "", i if numbered else 0)
        for i, (p, f) in enumerate(zip(pages, fitted, strict=True), 1)
    ]
    cut = sum(f.cut for f in fitted)
    return "\n\n".join(blocks), (f"{cut} of {len(pages)} pages cut to fit" if cut else "")


class _SingleCallAgent:
    """What every baseline holds: its name, args, the run's context and model client."""

    def __init__(self, name: str, args: Any, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context
        self._client = context.model_client(name)

    async def by_parts(
        self,
        conversation: Conversation,
        parts: list[str],
        rec: Recorder,
        sources: Callable[[int, str], Sources] | None = None,
    ) -> Answer:
        """Each part answered in its own call, over the pages `sources(i, part)` gives it
        (none: from the model's knowledge), the answers numbered as the question numbers its
        parts, each citing the page it shares the most words with. Why: Qwen2.5-Coder-1.5B
        given the pages for a three-part question pasted the first page and was cut before
        the last part (issue 33's runs B-D), and closed book it listed made-up names to its
        token limit; asked one part at a time it answers each in a few sentences. Earlier
        rounds go in as turns, as in one-call answers. A failed call ends the answer with
        its error (reported, never scored)."""
        args: _PartsArgs = self.args
        role = args.part_role or args.role
        cited: list[str] = []  # every page cited, in order: its place is its [n]
        answered: list[str] = []
        for i, part in enumerate(parts, 1):
            pages, evidence = sources(i, part) if sources is not None else ((), "")
            system = PART_SYSTEM if pages else CLOSED_PART_SYSTEM
            messages = conversation_messages(system, conversation, (1, 1))[:-1]
            content = f"{evidence}\n\nQuestion: {part}" if evidence else f"Question: {part}"
            messages.append({"role": "user", "content": content})
            started = rec.now()
            try:
                completion = await self._client.complete(role, messages)
            except DrarenaError as exc:
                rec.failed_call(started)
                error = model_call_error(exc)
                rec.step(None, error=f"part {i}: {error}")
                return rec.finish("\n\n".join(answered), cited, error=error)
            model = rec.model(completion)
            text = short_part(_MARKERS.sub("", completion.text)) or "(no answer)"
            note = f"part {i} of {len(parts)}"
            n = attribute(text, pages)
            if n:
                url = pages[n - 1].url
                cited += [] if url in cited else [url]
                text = f"{text} [{cited.index(url) + 1}]"
                note += f"; cites {url}, the page sharing most of its words"
            rec.step(model, note=note)
            answered.append(f"({i}) {text}")
        return rec.finish("\n\n".join(answered), cited)


class _PagesAgent(_SingleCallAgent):
    """An agent that answers from pages it holds (the oracle's targets, rag's results)."""

    args: OracleArgs | RagArgs

    async def from_pages(
        self,
        conversation: Conversation,
        word_limit: tuple[int, int],
        rec: Recorder,
        pages: list[SourcePage],
        evidence: str,
    ) -> Answer:
        """One answer call over `evidence` (the pages as quoted blocks); with `cite_shown`,
        the parts prompt, citations from `pages` and a text report taken as it is; with
        `answer_parts` and a question in numbered parts, one call a part (by_parts)."""
        parts = question_parts(conversation.question) if self.args.answer_parts else []
        if parts and pages:
            return await self.by_parts(conversation, parts, rec, lambda i, part: (pages, evidence))
        cite = self.args.cite_shown
        system = PARTS_SYSTEM if cite else EVIDENCE_SYSTEM
        messages = conversation_messages(system, conversation, word_limit, evidence)
        return await single_answer(
            self._client,
            self.args.role,
            messages,
            rec,
            self.args.max_repairs,
            word_limit,
            [p.url for p in pages] if cite else [],
            cite,
        )


class ClosedBookAgent(_SingleCallAgent):
    """The model alone, no tools: the floor."""

    args: ClosedBookArgs

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        word_limit = check_word_limit(word_limit)
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        parts = question_parts(conversation.question) if self.args.answer_parts else []
        if parts:
            return await self.by_parts(conversation, parts, rec)
        messages = conversation_messages(CLOSED_BOOK_SYSTEM, conversation, word_limit)
        return await single_answer(
            self._client, self.args.role, messages, rec, self.args.max_repairs, word_limit
        )


class RagAgent(_PagesAgent):
    """One retrieval on the question, the top k pages in context, one answer (with
    `answer_parts`: one call per part, after one retrieval per part or, `search: question`,
    one for the whole question)."""

    args: RagArgs

    def __init__(self, name: str, args: RagArgs, context: AgentContext) -> None:
        super().__init__(name, args, context)
        self._retriever = context.retriever(args.retriever)

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        word_limit = check_word_limit(word_limit)
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        parts = question_parts(conversation.question) if self.args.answer_parts else []
        if parts and self.args.search == "part":
            # each part its own search: one query for three parts on three pages found
            # none of them (issue 33's demo: errors.html and cmath.html for zipfile and
            # tempfile questions)
            return await self.by_parts(
                conversation, parts, rec, lambda i, part: self.retrieve(rec, part, f"p{i}-")
            )
        # one search for the whole question (with answer_parts and `search: question`, its
        # pages read for every part: from_pages splits the question)
        pages, evidence = self.retrieve(rec, conversation.question)
        return await self.from_pages(
            conversation, word_limit, rec, list(pages), evidence or "(the search found no pages)"
        )

    def retrieve(self, rec: Recorder, query: str, prefix: str = "") -> Sources:
        """One search for `query`, its top k pages opened (each step recorded, `prefix` in
        its tool ids): the pages and their quoted text."""
        events = []
        started = rec.now()
        arguments = _args(query=query)
        try:
            hits = self._retriever.search(query, self.args.k)
        except Exception as exc:  # a failing backend degrades to closed book, recorded
            hits = []
            events.append(
                tool_event(
                    f"rag-{prefix}search",
                    "search",
                    arguments,
                    started,
                    rec.now(),
                    error=f"search failed: {exc}",
                )
            )
        else:
            events.append(
                tool_event(
                    f"rag-{prefix}search",
                    "search",
                    arguments,
                    started,
                    rec.now(),
                    docids=[h.docid for h in hits],
                    urls=[h.url for h in hits],
                )
            )
        pages: list[SourcePage] = []
        for i, hit in enumerate(hits):
            started = rec.now()
            arguments = _args(url=hit.url, page=0)
            try:
                part = self._retriever.open(hit.docid, 0, self.args.context_chars)
            except Exception as exc:
                events.append(
                    tool_event(
                        f"rag-{prefix}open-{i}",
                        "open",
                        arguments,
                        started,
                        rec.now(),
                        error=f"cannot open {hit.url}: {exc}",
                    )
                )
                continue
            pages.append(SourcePage(part.url, part.title, part.text))
            events.append(
                tool_event(
                    f"rag-{prefix}open-{i}",
                    "open",
                    arguments,
                    started,
                    rec.now(),
                    docids=[part.docid],
                    urls=[part.url],
                )
            )
        evidence, note = evidence_text(pages, self.args.context_chars, self.args.cite_shown)
        rec.step(None, events, note=note)
        return pages, evidence


class OracleAgent(_PagesAgent):
    """Given the round's target pages: the ceiling the Examiner should prefer."""

    args: OracleArgs

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        word_limit = check_word_limit(word_limit)
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        pages = list(conversation.targets)
        evidence, note = evidence_text(pages, self.args.context_chars, self.args.cite_shown)
        rec.step(
            None,
            [
                tool_event(
                    f"target-{i}", "target", _args(url=p.url), rec.now(), rec.now(), urls=[p.url]
                )
                for i, p in enumerate(pages)
            ],
            error=None if pages else "the oracle was given no target pages",
            note=note,
        )
        parts = question_parts(conversation.question) if self.args.answer_parts else []
        if self.args.page_per_part and parts and pages:
            answer = await self.by_parts(conversation, parts, rec, self._page_for(pages))
        else:
            answer = await self.from_pages(
                conversation, word_limit, rec, pages, evidence or "(no pages were given)"
            )
        if not pages and answer.error is None:
            return dataclasses.replace(answer, error="the oracle was given no target pages")
        return answer

    def _page_for(self, pages: list[SourcePage]) -> Callable[[int, str], Sources]:
        """A part's sources: the target whose share of the budget (what the oracle reads of
        each page when it reads them all) shares the most words with the part, read alone
        with the whole budget (or `part_chars`); all targets when none shares a word. Why:
        on the 1.5B demo (docs/models.md, run Q) the oracle, every target in its context,
        answered a part worse than rag with the one page its search found; picking among the
        targets is still the oracle's knowledge (it is told which pages the round is about),
        and equal leads keep a long page from winning on length."""
        share = max(1, self.args.context_chars // len(pages))
        leads = [SourcePage(p.url, p.title, p.text[:share]) for p in pages]
        budget, cite = self.args.part_chars or self.args.context_chars, self.args.cite_shown

        def source(i: int, part: str) -> Sources:
            n = attribute(part, leads)
            chosen = [pages[n - 1]] if n else pages
            return chosen, evidence_text(chosen, budget, cite)[0]

        return source


class NullArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(
        "I don't know.",
        min_length=1,
        max_length=500,
        description="the answer it always gives (no model call, no citations)",
    )


class NullAgent:
    """Always "I don't know.", with no model call: the bottom of the known-order ladder
    (bench/bench_validity.py). An Examiner that does not rank every agent with an answer
    above it cannot rank at all."""

    def __init__(self, name: str, args: NullArgs, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        check_word_limit(word_limit)
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        rec.step(None, note="null agent: fixed answer, no model call")
        return rec.finish(self.args.text, [])


def build_null(*, context: AgentContext, name: str = "null", **args: Any) -> NullAgent:
    return NullAgent(name, parse_agent_args(NullArgs, args, "null"), context)


def build_closed_book(
    *, context: AgentContext, name: str = "closed_book", **args: Any
) -> ClosedBookAgent:
    return ClosedBookAgent(name, parse_agent_args(ClosedBookArgs, args, "closed_book"), context)


def build_rag(*, context: AgentContext, name: str = "rag", **args: Any) -> RagAgent:
    return RagAgent(name, parse_agent_args(RagArgs, args, "rag"), context)


def build_oracle(*, context: AgentContext, name: str = "oracle", **args: Any) -> OracleAgent:
    return OracleAgent(name, parse_agent_args(OracleArgs, args, "oracle"), context)
