"""`react`: a tool-calling researcher over the Retriever (search, open, answer).

Why a tool call is required at every step: small models almost never fire `auto` tool
choice; requiring one (and ending with `answer`) gives every model the same loop. Every fault
(no tool call, unknown tool, bad arguments, failing search, unopenable page, failing model)
becomes a recorded step, and the agent either recovers or answers with what it found.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from drarena.agents import citations as cite
from drarena.agents.base import Answer, Conversation, ToolEvent, model_call_error
from drarena.agents.common import (
    CITE_RULE,
    CUT_NOTE,
    DATA_RULE,
    PARTS_RULE,
    URL_CHARS,
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
from drarena.errors import DrarenaError
from drarena.models.structured import strict_tool
from drarena.models.types import Completion, ToolCall
from drarena.quoting import quote_block
from drarena.registry import ComponentSpec

SEARCH_TOOL = strict_tool(
    "search",
    "Search the web archive; returns titles, URLs and snippets.",
    {"properties": {"query": {"type": "string", "maxLength": 120}}},
)
OPEN_TOOL = strict_tool(
    "open",
    "Read a page: url is a URL from the search results (or its result number); "
    "page=0 is its beginning, 1 the next part, and so on.",
    {
        "properties": {
            "url": {"type": "string", "maxLength": URL_CHARS},
            "page": {"type": "integer", "minimum": 0, "maximum": 99},
        }
    },
)
TOOL_NAMES = ("answer", "open", "search")
ELIDED = "(earlier tool result removed to fit the context)"
MAX_OPEN_CHOICES = 50


def tools_for(
    urls: list[str], word_limit: tuple[int, int], first_read: bool = False, cite: bool = False
) -> list[dict[str, Any]]:
    """The tools of one step; once pages are known, `open` takes only their URLs.

    Why: under constrained decoding a small model then cannot open a URL it made up, and a
    capable one loses nothing (the frozen web holds only what search can reach). A forced
    first read opens page 0, so `page` is left out there. `cite` (args.cite_seen): the
    answer's citations are URLs it has seen, too (answer_tool).
    """
    answer = answer_tool(word_limit, urls if cite else ())
    if not urls:
        return [SEARCH_TOOL, OPEN_TOOL, answer]
    properties: dict[str, Any] = {"url": {"type": "string", "enum": urls[-MAX_OPEN_CHOICES:]}}
    if not first_read:
        properties["page"] = OPEN_TOOL["function"]["parameters"]["properties"]["page"]
    open_tool = strict_tool(
        "open", OPEN_TOOL["function"]["description"], {"properties": properties}
    )
    return [SEARCH_TOOL, open_tool, answer]


SYSTEM = f"""You are a research agent. You answer questions from an archived copy of some \
web sites, which you reach only through tools. At each step call exactly one tool:
- search(query): find pages about something;
- open(url, page): read a page found by search (page 0 first, then 1, 2, ... for more);
- answer(report, citations): give your final answer; this ends the research.
Search, open the most promising pages, then answer. {DATA_RULE} {CITE_RULE}"""
# with `cite_seen` (the default): each part answered in a sentence or two (PARTS_RULE)
PARTS_SYSTEM = f"{SYSTEM} {PARTS_RULE}"


class ReactArgs(BaseModel):
    """Knobs of the react agent; its retriever is named here so swapping it is config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field("agent", description="model role in the models config")
    retriever: ComponentSpec = Field(default_factory=lambda: ComponentSpec(kind="bm25"))
    max_steps: int = Field(8, ge=1, le=100, description="model calls before it must answer")
    max_tokens: int = Field(60000, ge=1, description="prompt+completion tokens, all steps")
    max_open_pages: int = Field(6, ge=0, description="successful open calls")
    search_k: int = Field(5, ge=1, le=50, description="hits per search")
    page_chars: int = Field(2000, ge=200, le=20000, description="characters per opened page")
    max_context_chars: int = Field(
        20000, ge=2000, description="older tool results are elided beyond this"
    )
    max_bad_steps: int = Field(3, ge=1, description="steps in a row without a valid call")
    seed_search: bool = Field(
        True,
        description="search the question itself before the "
        "first model step (small models write degenerate queries)",
    )
    cite_seen: bool = Field(
        True,
        description="the answer's citations must be URLs the agent saw (search results, "
        "pages opened; written before the report), and each part of the question is "
        "answered in a sentence or two; false: the prompt and tool of runs recorded before",
    )
    forced_tools: tuple[Literal["search", "open"], ...] = Field(
        ("open",),
        description="tools required at the first model steps, in order (small "
        "models otherwise answer at once without researching)",
    )


def fit_context(messages: list[Message], max_chars: int, keep_last: int = 2) -> list[Message]:
    """Replace the oldest tool results by a stub until the prompt fits (pure).

    The system prompt, the questions and the newest `keep_last` tool results always stay.
    """
    total = sum(len(str(m.get("content") or "")) for m in messages)
    tool_positions = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    out = list(messages)
    for i in tool_positions[: max(0, len(tool_positions) - keep_last)]:
        if total <= max_chars:
            break
        content = str(out[i].get("content") or "")
        if content == ELIDED:
            continue
        total -= len(content) - len(ELIDED)
        out[i] = {**out[i], "content": ELIDED}
    return out


class ReactAgent:
    """search -> open -> answer, under step, token and page limits."""

    def __init__(self, name: str, args: ReactArgs, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context
        self._client = context.model_client(name)
        self._retriever = context.retriever(args.retriever)

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        run = _Run(self, conversation, check_word_limit(word_limit))
        return await run.go()


class _Run:
    """The state of one answer: messages, what was seen and opened, the recorder."""

    def __init__(
        self, agent: ReactAgent, conversation: Conversation, word_limit: tuple[int, int]
    ) -> None:
        self.agent = agent
        self.args = agent.args
        self.rec = Recorder(agent.name, agent._context.clock, agent._context.url_checker)
        self.word_limit = word_limit
        self.question = conversation.question
        system = PARTS_SYSTEM if self.args.cite_seen else SYSTEM
        self.messages = conversation_messages(system, conversation, word_limit)
        self.seen: dict[str, str] = {}  # docid or url -> url, for citations and fallback
        self.last_hits: list[str] = []  # URLs of the latest search, for "open 2"
        self.titles: dict[str, str] = {}  # url -> title
        self.opened = 0
        self.note = ""
        self.page_limit_hit = False

    async def go(self) -> Answer:
        bad = 0
        if self.args.seed_search:
            self.seed()
        for index in range(self.args.max_steps):
            if self.rec.tokens >= self.args.max_tokens:
                return await self.wrap_up(
                    f"token limit reached: {self.rec.tokens} of {self.args.max_tokens} tokens used"
                )
            forced = self.args.forced_tools
            choice: Any = (
                {"type": "function", "function": {"name": forced[index]}}
                if index < len(forced)
                else "required"
            )
            known = [u for k, u in self.seen.items() if k == u]
            first_read = index < len(forced) and forced[index] == "open"
            completion = await self.call(
                tools_for(known, self.word_limit, first_read, self.args.cite_seen), choice
            )
            if completion is None:
                return self.fallback("the model call failed")
            model = self.rec.model(completion)
            completion = unwrap_text_calls(completion, TOOL_NAMES)
            self.messages.append(completion.assistant_message())
            salvaged = cut_answer_in_text(completion.text, completion.finish_reason)
            if not completion.tool_calls and salvaged is not None:
                self.rec.step(model, note=CUT_NOTE)
                cited = salvage_citations(completion.text)
                return self.rec.finish(salvaged, cited, limit_hit=self.page_limit())
            if not completion.tool_calls:
                self.rec.step(
                    model, error=no_call_error("no tool call in the reply", completion.text)
                )
                self.messages.append(
                    {
                        "role": "user",
                        "content": ("You must call one of the tools: search, open or answer."),
                    }
                )
                bad += 1
            else:
                events, done = self.run_tools(completion.tool_calls, completion.finish_reason)
                if done is not None:
                    report, urls, event = done
                    self.rec.step(model, [*events, event], note=self.note)
                    return self.rec.finish(report, urls, limit_hit=self.page_limit())
                valid = any(e.error is None for e in events)
                self.rec.step(model, events)
                bad = 0 if valid else bad + 1
            if bad >= self.args.max_bad_steps:
                return await self.wrap_up(f"{bad} steps in a row without a valid tool call")
        return await self.wrap_up(f"step limit reached: {self.args.max_steps} steps")

    def page_limit(self) -> str | None:
        if not self.page_limit_hit:
            return None
        return f"open-page limit reached: {self.args.max_open_pages} pages"

    def seed(self) -> None:
        """The question as the first search, shown to the model as if it had called it."""
        call = ToolCall(
            id="seed-search", name="search", arguments=arguments_text({"query": self.question})
        )
        event, text = self.search(call, self.question, self.rec.now())
        self.rec.step(None, [event], note="seed search")
        self.messages.append(
            {"role": "assistant", "content": "", "tool_calls": [call.to_message()]}
        )
        self.reply(call, text)

    async def call(self, tools: list[dict[str, Any]], choice: Any) -> Completion | None:
        started = self.rec.now()
        try:
            return await self.agent._client.complete(
                self.args.role,
                fit_context(self.messages, self.args.max_context_chars),
                tools=tools,
                tool_choice=choice,
            )
        except DrarenaError as exc:
            self.rec.failed_call(started)
            self.rec.step(None, error=model_call_error(exc))
            return None

    def run_tools(
        self, calls: tuple[ToolCall, ...], finish_reason: str
    ) -> tuple[list[ToolEvent], tuple[str, list[str], ToolEvent] | None]:
        events: list[ToolEvent] = []
        for call in calls:
            started = self.rec.now()
            if call.name == "answer":
                try:
                    report, urls, self.note = read_answer(call.arguments, finish_reason)
                except ValueError as exc:
                    event = tool_event(
                        call.id, call.name, call.arguments, started, self.rec.now(), error=str(exc)
                    )
                    events.append(event)
                    self.reply(call, f"error: {exc}. Call answer again with a report.")
                    continue
                report, urls = self.resolve_urls(report, urls)
                return events, (
                    report,
                    urls,
                    tool_event(call.id, call.name, call.arguments, started, self.rec.now()),
                )
            event, text = self.run_tool(call, started)
            events.append(event)
            self.reply(call, text)
        return events, None

    def reply(self, call: ToolCall, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})

    def run_tool(self, call: ToolCall, started: float) -> tuple[ToolEvent, str]:
        def failed(error: str) -> tuple[ToolEvent, str]:
            return (
                tool_event(
                    call.id, call.name, call.arguments, started, self.rec.now(), error=error
                ),
                f"error: {error}",
            )

        if call.name not in TOOL_NAMES:
            return failed(f"unknown tool {call.name!r} (tools: {', '.join(TOOL_NAMES)})")
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return failed(f"arguments are not valid JSON ({exc.msg} at char {exc.pos})")
        except RecursionError:  # `[[[[...` deeper than the decoder goes
            return failed("arguments are nested too deeply")
        if not isinstance(args, dict):
            return failed("arguments must be a JSON object")
        if call.name == "search":
            query = args.get("query")
            if not isinstance(query, str) or not query.strip():
                return failed("search needs a non-empty 'query' string")
            return self.search(call, query, started)
        url, page = args.get("url"), args.get("page", 0)
        if not isinstance(url, str) or not url.strip():
            return failed("open needs a 'url' string")
        if not isinstance(page, int) or isinstance(page, bool) or page < 0:
            return failed("'page' must be an integer >= 0")
        if self.opened >= self.args.max_open_pages:
            self.page_limit_hit = True
            return failed(
                f"open-page limit reached ({self.args.max_open_pages} pages); "
                "answer now with what you found"
            )
        return self.open(call, url.strip(), page, started)

    def search(self, call: ToolCall, query: str, started: float) -> tuple[ToolEvent, str]:
        try:
            hits = self.agent._retriever.search(query, self.args.search_k)
        except Exception as exc:  # a failing backend is a recorded step, not a crash
            error = f"search failed: {exc}"
            return (
                tool_event(
                    call.id, call.name, call.arguments, started, self.rec.now(), error=error
                ),
                f"error: {error}",
            )
        for hit in hits:
            self.seen.setdefault(hit.docid, hit.url)
            self.seen.setdefault(hit.url, hit.url)
            self.titles.setdefault(hit.url, hit.title)
        self.last_hits = [h.url for h in hits]
        lines = [f"{h.rank}. {h.title}\n   URL: {h.url}\n   {h.snippet}" for h in hits]
        body = "\n".join(lines) if lines else "(no results)"
        text = quote_block(f"search results for: {query}", body)
        return (
            tool_event(
                call.id,
                call.name,
                call.arguments,
                started,
                self.rec.now(),
                docids=[h.docid for h in hits],
                urls=[h.url for h in hits],
            ),
            text,
        )

    def open(self, call: ToolCall, url: str, page: int, started: float) -> tuple[ToolEvent, str]:
        retriever = self.agent._retriever
        # a hit's number; isdigit alone would pass '²' (no int) or 5,000 digits (int refuses)
        if (
            url.isascii()
            and url.isdigit()
            and len(url) <= 6
            and 1 <= int(url) <= len(self.last_hits)
        ):
            url = self.last_hits[int(url) - 1]
        try:
            offset, part = 0, retriever.open(url, 0, self.args.page_chars)
            for current in range(page):
                if part.next_offset is None:
                    raise DrarenaError(
                        f"page {page} does not exist: the text ends at page {current}"
                    )
                offset = part.next_offset
                part = retriever.open(url, offset, self.args.page_chars)
        except Exception as exc:  # unknown URL, bad offset, backend failure
            error = f"cannot open {url[:200]}: {exc}"
            return (
                tool_event(
                    call.id, call.name, call.arguments, started, self.rec.now(), error=error
                ),
                f"error: {error}",
            )
        self.opened += 1
        self.seen.setdefault(part.docid, part.url)
        self.seen.setdefault(part.url, part.url)
        self.seen.setdefault(url, part.url)
        self.titles.setdefault(part.url, part.title)
        more = f"more: open with page={page + 1}" if part.next_offset is not None else "end of page"
        text = page_block(part.url, part.title, part.text, more)
        return (
            tool_event(
                call.id,
                call.name,
                call.arguments,
                started,
                self.rec.now(),
                docids=[part.docid],
                urls=[part.url],
            ),
            text,
        )

    def known(self) -> list[str]:
        """The URLs seen so far (search results and pages opened), in order."""
        return [u for k, u in self.seen.items() if k == u]

    def resolve_urls(self, report: str, urls: list[str]) -> tuple[str, list[str]]:
        """Citations given as docids become URLs; references written into the report
        itself are used when the citations list is empty."""
        body, refs = cite.split_references(report)
        chosen = urls or refs
        return (body if not urls else report), [self.seen.get(u.strip(), u) for u in chosen]

    async def wrap_up(self, reason: str) -> Answer:
        """A limit was hit: one last call that must be `answer`, else a fallback."""
        self.messages.append(
            {
                "role": "user",
                "content": (
                    f"Stop researching now ({reason}). Call the answer tool with your report, "
                    "based on what you found so far."
                ),
            }
        )
        completion = await self.call(
            [answer_tool(self.word_limit, self.known() if self.args.cite_seen else ())],
            {"type": "function", "function": {"name": "answer"}},
        )
        if completion is None:
            return self.fallback(reason)
        model = self.rec.model(completion)
        completion = unwrap_text_calls(completion, ("answer",))
        started = self.rec.now()
        call = next((c for c in completion.tool_calls if c.name == "answer"), None)
        salvaged = cut_answer_in_text(completion.text, completion.finish_reason)
        if call is None and salvaged is not None:
            self.rec.step(model, note=f"wrap-up; {CUT_NOTE}")
            return self.rec.finish(salvaged, salvage_citations(completion.text), limit_hit=reason)
        if call is None:
            self.rec.step(
                model,
                error=no_call_error("no answer call in the final reply", completion.text),
                note="wrap-up",
            )
            text = completion.text.strip()
            if text:
                body, refs = answer_from_text(text, completion.finish_reason)
                return self.rec.finish(body, refs, limit_hit=reason)
            return self.fallback(reason)
        try:
            report, urls, note = read_answer(call.arguments, completion.finish_reason)
        except ValueError as exc:
            self.rec.step(
                model,
                [
                    tool_event(
                        call.id, call.name, call.arguments, started, self.rec.now(), error=str(exc)
                    )
                ],
                note="wrap-up",
            )
            return self.fallback(reason)
        self.rec.step(
            model,
            [tool_event(call.id, call.name, call.arguments, started, self.rec.now())],
            note="wrap-up" + (f"; {note}" if note else ""),
        )
        report, urls = self.resolve_urls(report, urls)
        return self.rec.finish(report, urls, limit_hit=reason)

    def fallback(self, reason: str) -> Answer:
        """No model answer could be had: list the pages found, and say why."""
        urls = list(dict.fromkeys(v for k, v in self.seen.items() if k == v))
        if urls:
            lines = [f"- {self.titles.get(u) or u} [{i}]" for i, u in enumerate(urls, 1)]
            report = "The research found these pages but wrote no report:\n" + "\n".join(lines)
        else:
            report = "The research found nothing and wrote no report."
        return self.rec.finish(
            report,
            urls,
            limit_hit=reason,
            error=self.rec.steps[-1].error if self.rec.steps else None,
        )


def build(*, context: AgentContext, name: str = "react", **args: Any) -> ReactAgent:
    return ReactAgent(name, parse_agent_args(ReactArgs, args, "react"), context)
