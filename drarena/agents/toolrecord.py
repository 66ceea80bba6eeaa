"""The tool record: every search and open result an agent received, kept in the run.

Why: a replay must give the same bytes on any machine. Re-running retrieval does not: dense
scores come from float kernels that differ between AVX2, AVX-512 and AMX CPUs (and so may the
order of hits, the next prompt and every later cache key), and it needs the JVM and the
encoder. Recording each result, keyed by the retriever's {kind, args}, the operation and its
arguments, lets `drarena run replay` answer every tool call from the record with no index, no JVM
and no encoder; a request the record lacks is one clear error, never a silent re-search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from drarena.errors import DrarenaError
from drarena.models.cache import ToolCache, canonical_json, tool_key
from drarena.records import Hit
from drarena.registry import ComponentSpec
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText

if TYPE_CHECKING:
    from drarena.search.base import Retriever


class ToolReplayMissError(DrarenaError):
    """A replay met a tool request its run's record does not hold."""


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
        self.misses: list[str] = []  # replay: every request the record lacked, in order
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
        key = tool_key(request)
        stored = self.cache.get(key)
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
            stored = self.cache.get(key)  # a concurrent writer stored it first: use theirs
        if "error" in stored:
            raise RecordedToolError(stored["error"])
        return stored["value"]

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
        value = self.record.answer(self.spec, "search", {"query": query, "k": k}, compute)
        return [Hit.from_dict(h) for h in value]

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        inner = self._inner
        compute = (
            None
            if inner is None
            else (lambda: inner.open(url_or_docid, offset, max_chars).to_dict())
        )
        value = self.record.answer(
            self.spec,
            "open",
            {"ref": url_or_docid, "offset": offset, "max_chars": max_chars},
            compute,
        )
        return PageText.from_dict(value)
