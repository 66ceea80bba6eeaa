"""The tool record: what agents received from retrievers is stored, and a replay answers from
it alone (scripted model backend and in-memory retriever: control flow only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import MemoryRetrieverForTests, scripted_context, tool

from drarena.agents.base import Conversation
from drarena.agents.frozenweb import WebTrace, recorded_tally
from drarena.agents.registry import build_agent
from drarena.agents.toolrecord import RecordedToolError, ToolRecord, ToolReplayMissError
from drarena.arena.rounds import stable_answer
from drarena.errors import DrarenaError
from drarena.models.cache import ToolCache
from drarena.records import Hit
from drarena.registry import ComponentSpec
from drarena.search.docstore import PageText
from drarena.webproxy.backend import FetchEntry, ProxyTally

ASYNCIO = "http://site.test/asyncio"
ANSWER = {"report": "asyncio runs coroutines [1].", "citations": [ASYNCIO]}
SPEC = ComponentSpec(kind="dense", args={"model": "m"})


def script() -> list:
    # the seed search, one forced open, a failing open of a made-up page, then the answer
    return [
        tool("open", {"url": ASYNCIO, "page": 1}),
        tool("open", {"url": "http://site.test/nowhere"}),
        tool("answer", ANSWER),
    ]


def context_with(record: ToolRecord, retriever: object) -> object:
    context, _ = scripted_context(script(), retriever=retriever)
    context.tool_record = record
    return context


async def run_react(context: object) -> str:
    args = {"retriever": {"kind": "bm25"}, "forced_tools": []}
    agent = build_agent({"kind": "react", "args": args}, context)  # type: ignore[arg-type]
    answer = await agent.answer(Conversation("What is asyncio?"), (10, 50))
    return stable_answer(answer).to_json()  # as match logs keep it: no model timings


class NoRetrieverForTests:
    """Fails the test if anything builds or asks it."""

    name = "none"

    def search(self, query: str, k: int = 10) -> list[Hit]:
        raise AssertionError("a replay searched the real retriever")

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        raise AssertionError("a replay opened a page through the real retriever")


async def test_a_replay_answers_every_tool_call_from_the_record(tmp_path: Path) -> None:
    cache = tmp_path / "llm-cache.sqlite"
    memory = MemoryRetrieverForTests()
    recording = ToolRecord(ToolCache(cache), replaying=False)
    recorded = await run_react(context_with(recording, memory))
    assert memory.queries == ["What is asyncio?"] and recording.calls == 4
    assert len(recording.cache) == 4  # search, open page 0 and 1, the failing open
    recording.close()

    replaying = ToolRecord(ToolCache(cache), replaying=True)
    context, _ = scripted_context(script(), retriever=NoRetrieverForTests())
    context.retriever_factory = None  # a replay must not need one either
    context.tool_record = replaying
    replayed = await run_react(context)
    assert replayed == recorded  # hits, pages and the recorded failure, to the byte
    assert replaying.misses == [] and replaying.calls == 0
    assert "cannot open http://site.test/nowhere: unknown docid or URL" in replayed


async def test_a_request_the_record_lacks_is_one_line_and_counted(tmp_path: Path) -> None:
    record = ToolRecord(ToolCache(tmp_path / "empty.sqlite"), replaying=True)
    replayed = await run_react(context_with(record, NoRetrieverForTests()))
    assert len(record.misses) == 3  # the seed search and both pages the model asked for
    assert record.misses[0].startswith(
        "replay: the run's tool record has no search for retriever bm25 with "
        '{"k":5,"query":"What is asyncio?"}'
    )
    assert "\n" not in record.misses[0] and "search failed: replay:" in replayed


def test_scores_and_pages_round_trip_exactly_and_first_result_wins(tmp_path: Path) -> None:
    awkward = [0.1 + 0.2, 1e-300, float.fromhex("0x1.3c3c3c3c3c3c3p-2"), -0.0]

    class FloatRetrieverForTests:
        name = "floats"
        calls = 0

        def search(self, query: str, k: int = 10) -> list[Hit]:
            self.calls += 1
            return [
                Hit(f"d{i}", f"http://x/{i}", "t", "s", score=s + self.calls, rank=i + 1)
                for i, s in enumerate(awkward)
            ]

        def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
            raise DrarenaError(f"unknown docid or URL {url_or_docid!r}")

    inner = FloatRetrieverForTests()
    cache = tmp_path / "c.sqlite"
    first = ToolRecord(ToolCache(cache), replaying=False).retriever(SPEC, lambda: inner)
    hits = first.search("q", 4)
    assert first.search("q", 4) == hits and inner.calls == 1  # recorded: asked once
    with pytest.raises(DrarenaError, match="unknown docid"):
        first.open("http://x/9")
    replay = ToolRecord(ToolCache(cache), replaying=True)
    again = replay.retriever(SPEC, lambda: pytest.fail("a replay built a retriever"))
    assert [h.score for h in again.search("q", 4)] == [s + 1 for s in awkward]
    assert again.search("q", 4) == hits
    with pytest.raises(RecordedToolError, match=r"^unknown docid or URL 'http://x/9'$"):
        again.open("http://x/9")
    other = replay.retriever(ComponentSpec(kind="dense", args={"model": "other"}), lambda: inner)
    with pytest.raises(ToolReplayMissError, match="no search for retriever dense"):
        other.search("q", 4)  # another retriever's record never answers for this one
    assert len(replay.misses) == 1


def test_a_proxy_log_round_trips_through_the_record_form() -> None:
    """A command agent's recorded reply carries its proxy log (WebTrace.to_json); the
    replayed trace gives the same trajectory events and summary as the one recorded."""
    trace = WebTrace(
        entries=[
            FetchEntry(
                "GET",
                "https://api.tavily.com/search",
                200,
                "search",
                query="json",
                urls=("http://h/a.html",),
                bytes=120,
                read=("http://h/a.html",),
            ),
            FetchEntry("GET", "http://h/b.html", 404, "missing", bytes=0),
        ],
        unlogged=2,
        outside=0,
        started_s=1.25,
        note="no search APIs",
        tally=ProxyTally(proxies=1, requests=4, missing=1, searches=2, outside_connections=0),
    )
    again = WebTrace()
    again.restore(json.loads(json.dumps(trace.to_json())))
    assert again == trace
    assert again.events(0.0, 1.0) == trace.events(0.0, 1.0)
    assert again.summary(["http://h/c.html"]) == trace.summary(["http://h/c.html"])
    with pytest.raises(ValueError, match="not a recorded proxy log"):
        WebTrace().restore({"entries": [{"url": "x"}]})
    bad_tally = {**trace.to_json(), "tally": {"proxies": -1}}
    with pytest.raises(ValueError, match="not a recorded proxy log"):
        WebTrace().restore(bad_tally)


def test_the_runs_proxy_tally_sums_every_recorded_trace(tmp_path: Path) -> None:
    """run.json's `web_proxy` comes from the record (recorded_tally), so a resumed run and a
    replay, which start no proxy for the answers the record holds, still count them. A trace
    with the proxy's own counts gives them; one recorded before they were kept gives its
    log's; an answer with no proxy, a reply with no trace and a search result add nothing."""
    cache = tmp_path / "record.sqlite"
    record = ToolRecord(ToolCache(cache), replaying=False)
    search = FetchEntry("GET", "https://api.tavily.com/search", 200, "search", query="q")
    page = FetchEntry("GET", "http://h/a.html", 200, "page")
    missing = FetchEntry("GET", "http://h/b.html", 404, "missing")
    counted = ProxyTally(proxies=1, requests=5, missing=1, searches=2, outside_connections=1)
    traces = {
        "with counts": WebTrace(entries=[search, missing], unlogged=3, outside=1, started_s=1.0),
        "old form": WebTrace(entries=[search, page, missing], unlogged=2, started_s=0.5),
        "no proxy": WebTrace(note="web_proxy: false"),
    }
    traces["with counts"].tally = counted
    for n, (name, trace) in enumerate(traces.items()):
        key, stored = record.reply({"agent": name, "payload": str(n)})
        assert stored is None
        assert ("tally" in trace.to_json()) == (name == "with counts")  # old form: none kept
        content = {"stdout": "{}", "trace": trace.to_json()}
        record.store_reply(key, {"agent": name, "payload": str(n)}, content)
    key, _ = record.reply({"agent": "bare", "payload": "x"})
    record.store_reply(key, {"agent": "bare", "payload": "x"}, {"error": "exited with status 3"})
    retriever = record.retriever(SPEC, lambda: MemoryRetrieverForTests())
    retriever.search("q", 2)  # a search result in the same table: not a reply
    want = ProxyTally(proxies=2, requests=5 + 5, missing=2, searches=3, outside_connections=1)
    assert recorded_tally(record) == want
    # read back by a replay's record (read-only, nothing started): the same counts
    assert recorded_tally(ToolRecord(ToolCache(cache, read_only=True), replaying=True)) == want
