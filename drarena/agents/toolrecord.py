"""The tool record: every search and open result an agent received, kept in the run.

Why: a replay must give the same bytes on any machine. Re-running retrieval does not: dense
scores come from float kernels that differ between AVX2, AVX-512 and AMX CPUs (and so may the
order of hits, the next prompt and every later cache key), and it needs the JVM and the
encoder. Recording each result, keyed by the retriever's {kind, args}, the operation and its
arguments, lets `drarena run replay` answer every tool call from the record with no index, no JVM
and no encoder; a request the record lacks is one clear error, never a silent re-search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from drarena.errors import DrarenaError
from drarena.models.cache import ToolCache, canonical_json, json_type, tool_key
from drarena.models.jsonbytes import without_lone_surrogates
from drarena.records import Hit
from drarena.registry import ComponentSpec
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText

if TYPE_CHECKING:
    from drarena.search.base import Retriever


class ToolReplayMissError(DrarenaError):
    """A replay met a tool request its run's record does not hold."""


class ToolRecordDamagedError(DrarenaError):
    """The record holds a result for a request that is not one drarena wrote (damaged,
    edited): reported, never answered from."""


class RecordedToolError(Exception):
    """A tool failure replayed from the record: its text is the original failure's text, so
    the agent writes the same error step as in the recorded run."""


def spec_json(spec: ComponentSpec) -> Any:
    return spec.model_dump(mode="json")


class ToolRecord:
    """The record of one run, in `record` mode (results stored as they happen; a request
    seen before gets its first result, as a replay will) or in `replay` mode (results only
    from the record; the real retriever is never built)."""

    def __init__(self, cache: ToolCache, *, replaying: bool) -> None:
        self.cache = cache
        self.replaying = replaying
        # every request the record lacked (replay) or held damaged (both modes), in order
        self.misses: list[str] = []
        self.calls = 0  # requests answered by a real retriever

    def retriever(self, spec: ComponentSpec, build: Callable[[], Retriever]) -> RecordedRetriever:
        """A retriever for `spec` that answers through the record. Recording, `build()` makes
        the real one now (a missing index fails the run at once, as without a record);
        replaying, it is never called: no index, JVM or encoder is loaded."""
        return RecordedRetriever(self, spec, None if self.replaying else build())

    def answer(
        self, spec: ComponentSpec, op: str, args: dict[str, Any], compute: Callable[[], Any] | None
    ) -> Any:
        """The recorded result of (spec, op, args), computing and storing it if needed."""
        request = {"retriever": spec_json(spec), "op": op, "args": args}
        try:
            key = tool_key(request)
        except UnicodeEncodeError:  # a lone surrogate (a model's "\ud800"): keyed as U+FFFD
            key = tool_key(without_lone_surrogates(request))
        stored = self._stored(key)
        if stored is None:
            if compute is None:
                message = (
                    f"replay: the run's tool record has no {op} for retriever "
                    f"{spec.kind} with {canonical_json(args)[:160]} (key {key[:16]})"
                )
                self.misses.append(message)
                raise ToolReplayMissError(message)
            self.calls += 1
            try:
                content: Any = {"value": compute()}
            except Exception as exc:  # what the agent saw: stored, then raised as it was
                self.cache.put(key, request, {"error": str(exc)})
                raise
            if self.cache.put(key, request, content):
                return content["value"]
            stored = self._stored(key)  # a concurrent writer stored it first: use theirs
            if stored is None:
                return content["value"]  # gone again (a concurrent compaction): ours
        if "error" in stored:
            raise RecordedToolError(stored["error"])
        return stored["value"]

    def reply(self, request: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """(key, the stored reply of a command agent to `request`: {"stdout", "usage",
        "trace"} or {"error", "trace"}; None if never recorded). Replaying, a missing one is a
        miss. `usage` (its model meter's counts) and `trace` (the proxy's log) are optional."""
        key = tool_key({"command": request})
        try:
            stored = self.cache.get(key)
        except DrarenaError as exc:
            self.damaged(str(exc))
        if stored is None:
            if self.replaying:
                message = (
                    f"replay: the run's tool record has no reply of command agent "
                    f"{request.get('agent')} to this request (key {key[:16]})"
                )
                self.misses.append(message)
                raise ToolReplayMissError(message)
            return key, None
        if (
            isinstance(stored, dict)
            and len(set(stored) & {"stdout", "error"}) == 1
            and set(stored) <= {"stdout", "error", "trace", "usage"}
            and isinstance(stored.get("stdout", stored.get("error")), str)
        ):
            return key, stored
        self.damaged(self.where(key, "not a command agent's {stdout or error, usage, trace}"))

    def replies(self) -> Iterator[dict[str, Any]]:
        """Every command-agent reply the record holds (as `reply` returns them; one that is
        not a dict is skipped, `reply` reports it where a match reads it): the run's
        answers, resumed parts included (a failure tried again is there as its last try)."""
        for content in self.cache.contents('{"command":'):
            if isinstance(content, dict):
                yield content

    def store_reply(self, key: str, request: dict[str, Any], content: dict[str, Any]) -> None:
        """Record a command agent's reply; a later try (a resumed run's, after a failure)
        replaces an earlier one, so the record holds the reply the finished run used."""
        self.calls += 1
        self.cache.put(key, {"command": request}, content, replace=True)

    def _stored(self, key: str) -> dict[str, Any] | None:
        """The stored result under `key`: {"value": v} or {"error": text}; None if never
        recorded. Damage (not JSON, another shape) is a ToolRecordDamagedError, counted with
        the misses so that a replay fails naming it instead of answering around it."""
        try:
            stored = self.cache.get(key)
        except DrarenaError as exc:
            self.damaged(str(exc))
        if stored is None:
            return None
        if isinstance(stored, dict) and set(stored) == {"value"}:
            return stored
        if isinstance(stored, dict) and set(stored) == {"error"}:
            if isinstance(stored["error"], str):
                return stored
            self.damaged(self.where(key, f"its error is a JSON {json_type(stored['error'])}"))
        shape = (
            "{" + ", ".join(sorted(map(str, stored))[:4]) + "}"
            if isinstance(stored, dict)
            else f"a JSON {json_type(stored)}"
        )
        self.damaged(self.where(key, f"{shape[:80]}, not {{value}} or {{error}}"))

    def where(self, key: str, problem: str) -> str:
        """One line naming the record's file and the damaged entry."""
        return f"tool record {self.cache.path}: entry {key[:16]} is damaged ({problem})"

    def damaged(self, message: str) -> NoReturn:
        """Count a damaged result with the misses (a replay fails on them) and raise it."""
        message = " ".join(message.split())
        self.misses.append(message)
        raise ToolRecordDamagedError(message)

    def close(self) -> None:
        self.cache.close()


class RecordedRetriever:
    """A Retriever whose every answer goes through the run's tool record."""

    def __init__(self, record: ToolRecord, spec: ComponentSpec, inner: Retriever | None) -> None:
        self.record = record
        self.spec = spec
        self.name = spec.kind if inner is None else inner.name
        self._inner = inner

    def search(self, query: str, k: int = 10) -> list[Hit]:
        inner = self._inner
        compute = None if inner is None else (lambda: [h.to_dict() for h in inner.search(query, k)])
        args = {"query": query, "k": k}
        value = self.record.answer(self.spec, "search", args, compute)
        if isinstance(value, list) and all(isinstance(h, dict) for h in value):
            try:
                return [Hit.from_dict(h) for h in value]
            except ValueError as exc:  # unknown fields, wrong types (pydantic's errors too)
                problem = " ".join(str(exc).split())[:200]
        else:
            problem = f"a JSON {json_type(value)}, not a list of hits"
        self.record.damaged(self._where("search", args, problem))

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        inner = self._inner
        compute = (
            None
            if inner is None
            else (lambda: inner.open(url_or_docid, offset, max_chars).to_dict())
        )
        args = {"ref": url_or_docid, "offset": offset, "max_chars": max_chars}
        value = self.record.answer(self.spec, "open", args, compute)
        if isinstance(value, dict):
            try:
                return PageText.from_dict(value)
            except ValueError as exc:  # unknown fields, wrong types (pydantic's errors too)
                problem = " ".join(str(exc).split())[:200]
        else:
            problem = f"a JSON {json_type(value)}, not a page"
        self.record.damaged(self._where("open", args, problem))

    def _where(self, op: str, args: dict[str, Any], problem: str) -> str:
        return (
            f"tool record {self.record.cache.path}: the {op} result for retriever "
            f"{self.spec.kind} with {canonical_json(args)[:160]} is damaged ({problem})"
        )
