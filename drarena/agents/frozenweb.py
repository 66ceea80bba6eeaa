"""Command agents behind the frozen-web proxy: starting it for an answer, and what it saw.

Why: an unmodified agent fetches pages with its own HTTP client and searches through a public
search API. In a frozen run drarena gives it the proxy (drarena.webproxy) through the
environment, bridges the proxy's port into the agent's network namespace (the only way out),
and afterwards turns the proxy's log into the round's trajectory: one `web_fetch` event per
page request (its URL, or the error "not in snapshot"), one `web_search` event per emulated
search API call (its query and the result URLs). Citations can then be held against what the
agent actually read. Searches go through the run's tool record (context.retriever), so a
replay answers them with no index; pages come from the snapshot, which a replay has.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from drarena.agents.base import ToolEvent
from drarena.agents.common import tool_event
from drarena.agents.registry import AgentContext
from drarena.agents.toolrecord import ToolRecord
from drarena.errors import DrarenaError
from drarena.registry import ComponentSpec
from drarena.web.warc.snapshot import Snapshot
from drarena.webproxy.backend import FetchEntry, ProxyTally
from drarena.webproxy.handlers import HandlerTable
from drarena.webproxy.proxy import RunningProxy, find_mitmdump, frozen_web_proxy

SEARXNG_ENV = "DRARENA_SEARXNG_URL"
PROXY_ENV = "DRARENA_WEB_PROXY"


@dataclass
class WebTrace:
    """What one answer did through the proxy (filled even when the agent fails)."""

    entries: list[FetchEntry] = field(default_factory=list)
    unlogged: int = 0  # exchanges past the proxy log's caps (backend.FetchLog): counted only
    outside: int = 0
    started_s: float = 0.0
    note: str = ""  # why there was no proxy, or what it lacked (no search APIs)
    # the proxy's own counts (its requests past the log's caps included); None: no proxy ran,
    # or a trace recorded before they were kept (`counts` derives them from the log)
    tally: ProxyTally | None = None

    def to_json(self) -> dict[str, object]:
        """What the tool record keeps of the trace (a replay rebuilds the same events)."""
        return {
            "entries": [e.to_dict() for e in self.entries],
            "unlogged": self.unlogged,
            "outside": self.outside,
            "started_s": self.started_s,
            "note": self.note,
            **({"tally": self.tally.to_dict()} if self.tally is not None else {}),
        }

    def restore(self, data: object) -> None:
        """Fill this trace from `to_json`'s dict (a replayed reply); ValueError if it is not
        one."""
        try:
            if not isinstance(data, dict):
                raise TypeError(type(data).__name__)
            entries = [_entry(e) for e in data["entries"]]
            unlogged, outside = int(data["unlogged"]), int(data["outside"])
            started_s, note = float(data["started_s"]), str(data["note"])
            tally = _tally(data["tally"]) if "tally" in data else None
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a recorded proxy log ({type(exc).__name__})") from None
        self.entries, self.unlogged, self.outside = entries, unlogged, outside
        self.started_s, self.note, self.tally = started_s, note, tally

    def counts(self) -> ProxyTally:
        """What this answer adds to run.json's `web_proxy`: the proxy's counts, or for a
        trace recorded without them, the log's (its unlogged requests counted as requests
        only); nothing when no proxy ran."""
        if self.tally is not None:
            return self.tally.copy()
        if not self.entries and not self.unlogged and not self.started_s:
            return ProxyTally()
        return ProxyTally(
            proxies=1,
            requests=len(self.entries) + self.unlogged,
            missing=sum(e.kind == "missing" for e in self.entries),
            searches=sum(e.kind == "search" for e in self.entries),
            outside_connections=self.outside,
        )

    def fetched(self) -> set[str]:
        """The pages the agent read: fetched from the snapshot, or carried whole by a search
        API's answer (Tavily's raw_content or /extract: FetchEntry.read)."""
        pages = {e.url for e in self.entries if e.kind == "page" and e.status < 400}
        return pages | {u for e in self.entries if e.status < 400 for u in e.read}

    def events(self, started: float, now: float) -> list[ToolEvent]:
        """One web_search or web_fetch event per logged request; a search whose answer
        carried whole pages is followed by a web_fetch event for each (`via` names the
        search API), so the report counts them as pages opened."""
        out = []
        for i, e in enumerate(self.entries):
            if e.kind == "search":
                query = {"query": e.query, "url": e.url}
                out.append(
                    tool_event(f"web-{i}", "web_search", _json(query), started, now, urls=e.urls)
                )
                for j, url in enumerate(e.read):
                    carried = {"method": e.method, "url": url, "status": e.status, "via": e.url}
                    out.append(
                        tool_event(
                            f"web-{i}-{j}", "web_fetch", _json(carried), started, now, urls=(url,)
                        )
                    )
                continue
            error = None
            if e.kind == "missing":
                error = "not in snapshot"
            elif e.kind == "refused" or e.error:
                error = e.error or f"refused ({e.status})"
            args: dict[str, object] = {"method": e.method, "url": e.url, "status": e.status}
            urls = (e.url,) if e.kind == "page" and e.status < 400 else ()
            out.append(
                tool_event(
                    f"web-{i}", "web_fetch", _json(args), started, now, urls=urls, error=error
                )
            )
        return out

    def summary(self, cited: Sequence[str]) -> str:
        if not self.entries and self.note and not self.started_s:
            return f"frozen web proxy: none ({self.note})"
        pages = [e for e in self.entries if e.kind != "search"]
        missing = sum(e.kind == "missing" for e in pages)
        searches = sum(e.kind == "search" for e in self.entries)
        carried = sum(len(e.read) for e in self.entries)
        unread = [u for u in dict.fromkeys(cited) if u not in self.fetched()]
        via = f", {carried} page(s) read through a search API" if carried else ""
        text = (
            f"frozen web proxy: {len(pages)} fetches ({missing} not in snapshot), {searches} "
            f"searches{via}, {len(unread)} cited URL(s) never fetched, outside connections "
            f"{self.outside}, proxy start {self.started_s:.1f} s"
        )
        if self.unlogged:
            text += f", {self.unlogged} more exchange(s) not logged (over the log's size cap)"
        return f"{text}; {self.note}" if self.note else text


def recorded_tally(record: ToolRecord) -> ProxyTally:
    """The frozen-web proxy's counts over every command-agent answer in the run's tool record
    (run.json's `web_proxy`). Why from the record and not from the proxies this process
    started: a resumed run starts none for the matches already on disk or the answers its
    record already holds, and a replay starts none at all, yet each describes the whole
    run; the record has every answer's trace, written as the answer finished."""
    total = ProxyTally()
    for reply in record.replies():
        if "trace" not in reply:
            continue
        trace = WebTrace()
        try:
            trace.restore(reply["trace"])
        except ValueError:  # a damaged reply: `reply` reports it where a match reads it
            continue
        total.add(trace.counts())
    return total


def _tally(data: object) -> ProxyTally:
    """ProxyTally.to_dict's dict back: every field an int >= 0 (ValueError otherwise)."""
    if not isinstance(data, dict) or set(data) != set(ProxyTally.__dataclass_fields__):
        raise ValueError("not a proxy tally")
    if not all(type(v) is int and v >= 0 for v in data.values()):
        raise ValueError("not a proxy tally")
    return ProxyTally(**data)


def _entry(data: object) -> FetchEntry:
    """FetchEntry.to_dict's dict back (absent text fields are empty, as it writes them)."""
    if not isinstance(data, dict):
        raise TypeError(type(data).__name__)
    return FetchEntry(
        method=str(data["method"]),
        url=str(data["url"]),
        status=int(data["status"]),
        kind=str(data["kind"]),
        served_url=str(data.get("served_url", "")),
        query=str(data.get("query", "")),
        urls=tuple(str(u) for u in data.get("urls", ())),
        bytes=int(data["bytes"]),
        error=str(data.get("error", "")),
        read=tuple(str(u) for u in data.get("read", ())),
    )


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class FrozenWebPlan:
    """Per command agent: whether it gets the proxy, the snapshot and the search handlers
    (built once, on the first answer that needs them)."""

    def __init__(
        self,
        context: AgentContext,
        want: bool | None,
        retriever: ComponentSpec,
        page_chars: int = 20_000,
    ):
        self.context, self.want, self.retriever = context, want, retriever
        self.page_chars = page_chars  # CommandArgs.search_page_chars
        self._snap: Snapshot | None = None
        self._handlers: HandlerTable | None = None
        self._handler_note = ""

    def unavailable(self) -> str:
        """'' when the proxy can run; else why not (an error when the config requires it)."""
        if self.want is False:
            return "off in the agent's args (web_proxy: false)"
        why = ""
        if self.context.snapshot_dir is None:
            why = "no snapshot in this context"
        else:
            try:
                find_mitmdump()
            except DrarenaError as exc:
                why = str(exc)
        if why and self.want:
            raise DrarenaError(f"web_proxy: true, but {why}")
        return why

    def handlers(self) -> tuple[HandlerTable, str]:
        if self._handlers is None:
            from drarena.webproxy.searchapi import search_handlers

            table = HandlerTable()
            try:
                retriever = self.context.retriever(self.retriever)
                table.update(search_handlers(retriever, page_chars=self.page_chars))
            except (DrarenaError, OSError) as exc:  # no index: pages only, the note says so
                self._handler_note = f"no search APIs ({exc})"
            self._handlers = table
        return self._handlers, self._handler_note

    def snapshot(self) -> Snapshot:
        if self._snap is None:
            assert self.context.snapshot_dir is not None
            self._snap = Snapshot.open(self.context.snapshot_dir)
        return self._snap

    @asynccontextmanager
    async def running(self, trace: WebTrace) -> AsyncIterator[RunningProxy]:
        """The proxy for one answer, in a private folder (its CA included) removed after;
        the log and counters land in `trace` however the block ends."""
        handlers, note = self.handlers()
        trace.note = note
        folder = Path(tempfile.mkdtemp(prefix="drarena-webproxy-"))
        try:
            async with frozen_web_proxy(self.snapshot(), handlers, state_dir=folder) as proxy:
                trace.started_s = proxy.started_s
                try:
                    yield proxy
                finally:
                    trace.entries, trace.unlogged = proxy.frozen.log.drain()
                    trace.outside = proxy.outside_connections()
                    trace.tally = proxy.frozen.tally.copy()
                    trace.tally.outside_connections = trace.outside
        finally:
            shutil.rmtree(folder, ignore_errors=True)
