"""The frozen-web proxy's log (webproxy.backend.FetchLog): bounded in entries and characters.

Why: a command agent's exchanges through the proxy become its answer's tool events, saved in
matches.jsonl. Before the character cap, an agent asking 20,000 URLs of 8 KB each kept 160 MB
in the log and put it in one record.
"""

from __future__ import annotations

from pathlib import Path

from webproxy_helpers import write_fixture_snapshot

from drarena.agents.frozenweb import WebTrace
from drarena.web.warc.snapshot import Snapshot
from drarena.webproxy.backend import (
    ENTRY_CHARS,
    MAX_LOG,
    MAX_LOG_CHARS,
    FetchEntry,
    FetchLog,
    FrozenWeb,
)
from drarena.webproxy.handlers import WebRequest, WebResponse


def _entry(url: str, urls: tuple[str, ...] = ()) -> FetchEntry:
    return FetchEntry(method="GET", url=url, status=404, kind="missing", urls=urls)


def test_long_urls_stop_at_the_character_cap_and_are_counted() -> None:
    log = FetchLog()
    url = "http://h.test/" + "a" * 8192
    asked = 2_000  # 16 Mi characters of URLs: under MAX_LOG entries, over MAX_LOG_CHARS
    for _ in range(asked):
        log.add(_entry(url))
    kept = len(log.entries)
    assert kept < asked < MAX_LOG
    assert kept == MAX_LOG_CHARS // _entry(url).chars()
    assert sum(e.chars() for e in log.entries) == log.chars <= MAX_LOG_CHARS
    assert log.dropped == asked - kept
    entries, dropped = log.drain()
    assert (len(entries), dropped) == (kept, asked - kept)
    assert (log.entries, log.dropped, log.chars) == ([], 0, 0)


def test_search_result_urls_count_against_the_cap() -> None:
    urls = tuple(f"http://h.test/{i}/" + "b" * 4000 for i in range(50))
    log = FetchLog()
    for _ in range(100):
        log.add(_entry("http://search.test/?q=x", urls))
    assert log.chars <= MAX_LOG_CHARS
    assert len(log.entries) == MAX_LOG_CHARS // _entry("http://search.test/?q=x", urls).chars()
    assert log.dropped == 100 - len(log.entries)


def test_short_exchanges_stop_at_the_entry_cap() -> None:
    log = FetchLog(cap=5)
    for i in range(8):
        log.add(_entry(f"http://h.test/{i}"))
    assert [e.url for e in log.entries] == [f"http://h.test/{i}" for i in range(5)]
    assert log.dropped == 3


def test_each_entry_costs_its_fixed_share() -> None:
    """The fixed share bounds the many-short-URLs case too: MAX_LOG_CHARS / ENTRY_CHARS."""
    assert _entry("").chars() == ENTRY_CHARS + len("GET")
    log = FetchLog(cap=10**9)
    for _ in range(MAX_LOG_CHARS // ENTRY_CHARS + 10):
        log.add(_entry(""))
    assert len(log.entries) == MAX_LOG_CHARS // (ENTRY_CHARS + 3)


def test_a_real_backend_log_and_the_trace_say_what_was_not_logged(tmp_path: Path) -> None:
    """FrozenWeb.record (what the proxy's backend calls for every exchange) into the log,
    drained as an answer's trace is: the events are the kept entries, the note counts the rest."""
    folder = write_fixture_snapshot(tmp_path / "snap")
    with Snapshot.open(folder) as snap:
        frozen = FrozenWeb(snap)
        url = "http://h.test/" + "c" * 8192
        for _ in range(1_000):
            request = WebRequest("GET", url)
            response, served, error = frozen.from_snapshot(request)
            frozen.record(request, response, served, error)
        frozen.record(WebRequest("GET", "http://h.test/late"), WebResponse(200), "", "")
    assert frozen.tally.requests == 1_001  # every exchange was answered and counted
    trace = WebTrace()
    trace.entries, trace.unlogged = frozen.log.drain()
    assert 0 < len(trace.entries) < 1_000
    assert trace.unlogged == 1_001 - len(trace.entries)
    assert len(trace.events(0.0, 1.0)) == len(trace.entries)
    assert f"{trace.unlogged} more exchange(s) not logged" in trace.summary(())
    assert "not logged" not in WebTrace(entries=trace.entries).summary(())


def test_pages_a_search_api_carried_count_as_read_and_become_fetch_events() -> None:
    """A Tavily answer with raw_content hands the agent whole pages (FetchEntry.read): the
    trace counts them as fetched, so citing them is not "never fetched", and each becomes a
    web_fetch event naming the search API, which the report counts as a page opened."""
    pages = ("http://h.test/a", "http://h.test/b")
    search = FetchEntry(
        method="POST",
        url="https://api.tavily.com/search",
        status=200,
        kind="search",
        query="q",
        urls=(*pages, "http://h.test/c"),
        read=pages,
    )
    plain = FetchEntry(method="GET", url="http://h.test/d", status=200, kind="page")
    assert search.to_dict()["read"] == list(pages) and "read" not in plain.to_dict()
    unread = FetchEntry(**{**_fields(search), "read": ()})  # type: ignore[arg-type]
    assert search.chars() == unread.chars() + sum(len(u) for u in pages)
    trace = WebTrace(entries=[search, plain])
    assert trace.fetched() == {*pages, "http://h.test/d"}
    events = trace.events(0.0, 1.0)
    assert [e.name for e in events] == ["web_search", "web_fetch", "web_fetch", "web_fetch"]
    assert [e.urls for e in events[1:3]] == [(pages[0],), (pages[1],)]
    assert '"via": "https://api.tavily.com/search"' in events[1].arguments
    summary = trace.summary(["http://h.test/a", "http://h.test/c"])
    assert "2 page(s) read through a search API, 1 cited URL(s) never fetched" in summary


def _fields(entry: FetchEntry) -> dict[str, object]:
    return {name: getattr(entry, name) for name in entry.__dataclass_fields__}
