"""The Retriever protocol and the registry of retriever kinds.

Why a registry: an agent's config names its retriever as {kind, args} (bm25, dense, hybrid,
live), so swapping BM25 for a dense model is a config change, and the resolved spec goes
into the run header. Factories take the snapshot and index root as keyword arguments next to
their own args; heavy imports (Lucene, torch) happen only when a kind is built.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import ValidationError

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.registry import ComponentSpec, M, Registry, RegistryError
from drarena.registry import parse_args as parse_component_args
from drarena.search.docstore import DEFAULT_PAGE_CHARS, DocStore, PageText
from drarena.search.manifest import IndexLayout, PassagesManifest, require_fresh
from drarena.search.passages import Passage, PassageSettings

SNIPPET_CHARS = 320
SNIPPET_CACHE = 1 << 12  # passages whose snippet is remembered (their texts too: ~6 MB)
MAX_K = 1000


@runtime_checkable
class Retriever(Protocol):
    """Search and read one frozen web."""

    name: str

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """The k best pages, by score descending then docid ascending."""
        ...

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        """One page of a document's text, from offset."""
        ...


RETRIEVERS: Registry[Retriever] = Registry("retriever", group="drarena.retrievers")
# Traits: which of the snapshot's indexes a kind reads (`drarena search index` builds them before a
# tournament), and `live` for a kind that searches the live web. Plugin kinds have none.
INDEX_BM25, INDEX_DENSE, LIVE = "index:bm25", "index:dense", "live"
RETRIEVERS.register("bm25", "drarena.search.bm25:build", {INDEX_BM25})
RETRIEVERS.register("dense", "drarena.search.dense:build", {INDEX_DENSE})
RETRIEVERS.register("hybrid", "drarena.search.hybrid:build", {INDEX_BM25, INDEX_DENSE})
RETRIEVERS.register("live", "drarena.search.live:build", {LIVE})


def frozen_kinds() -> list[str]:
    """Retriever kinds that read the frozen snapshot's indexes (live mode replaces them)."""
    return [k for k in RETRIEVERS.kinds() if RETRIEVERS.traits(k) & {INDEX_BM25, INDEX_DENSE}]


def build_retriever(
    spec: ComponentSpec | dict[str, Any], snapshot_dir: Path, index_root: Path
) -> Retriever:
    """A retriever from its {kind, args} over one snapshot; config errors as DrarenaError."""
    try:
        return RETRIEVERS.build(spec, snapshot_dir=snapshot_dir, index_root=index_root)
    except (RegistryError, ValidationError) as exc:
        raise DrarenaError(f"retriever config: {str(exc).splitlines()[0]}") from None


def parse_args(model: type[M], args: dict[str, Any], kind: str) -> M:
    return parse_component_args(model, args, f"retriever {kind}")


def check_k(k: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise DrarenaError(f"k must be an integer in 1..{MAX_K}, got {k!r}")
    return k


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[: cut if cut > limit // 2 else limit] + " …"


@functools.lru_cache(maxsize=SNIPPET_CACHE)
def passage_snippet(text: str) -> str:
    """snippet(text), remembered per passage text.

    Why: folding a 160-word passage's whitespace was half of page ranking's Python time (about
    6 us a hit, 10 hits a query), and the same passages come back query after query. The
    cache holds the texts it was asked about (read from disk per query: PassageStore), so it
    is kept to SNIPPET_CACHE of them, a few MB whatever the corpus.
    """
    return snippet(text)


def search_pages(
    search_passages: Callable[[str, int], list[tuple[str, float]]],
    query: str,
    k: int,
    depth: int,
    passages: Mapping[str, Passage],
    total: int,
) -> list[Hit]:
    """The k best pages by their best passage, fetching deeper while fewer than k pages came
    back: the first k distinct pages in passage order are exactly the top k by MaxP."""
    depth = min(max(depth, 5 * k), total)
    while True:
        scored = search_passages(query, depth)
        hits = rank_pages(scored, passages, k)
        if len(hits) >= k or depth >= total or len(scored) < depth:
            return hits
        depth = min(depth * 4, total)


def rank_pages(
    scored: Iterable[tuple[str, float]], passages: Mapping[str, Passage], k: int
) -> list[Hit]:
    """Best passage per page (MaxP), sorted by score then docid, ranks from 1.

    Only the k passages returned are read from a PassageStore: the others' pages come from
    their ids (`pages_of`, digests only). A returned passage that is not there after all (an
    id whose digest another passage has) is dropped and the pages ranked again, so the
    result is the one every passage read would give."""
    ranked = sorted(scored, key=lambda item: (-item[1], item[0]))
    pages = _pages_of(passages, [pid for pid, _ in ranked])
    while True:
        best: dict[str, tuple[float, str]] = {}
        for (pid, score), page in zip(ranked, pages, strict=True):
            if page is not None and page not in best:
                best[page] = (score, pid)
        order = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:k]
        records = [passages.get(pid) for _, (_, pid) in order]
        missing = {pid for (_, (_, pid)), p in zip(order, records, strict=True) if p is None}
        if not missing:
            break
        pages = [
            None if pid in missing else page for (pid, _), page in zip(ranked, pages, strict=True)
        ]
    hits = []
    for rank, ((doc_id, (score, _)), p) in enumerate(zip(order, records, strict=True), 1):
        assert p is not None
        hits.append(
            Hit(
                docid=doc_id,
                url=p.url,
                title=p.title,
                snippet=passage_snippet(p.text),
                score=float(score),
                rank=rank,
            )
        )
    return hits


def _pages_of(passages: Mapping[str, Passage], pids: list[str]) -> list[str | None]:
    """Each passage's page, None for an id not there: from the store's digests, or from the
    records of an in-memory mapping."""
    from drarena.search.passagestore import PassageStore  # numpy: only once a store exists

    if isinstance(passages, PassageStore):
        return passages.pages_of(pids)
    records = [passages.get(pid) for pid in pids]
    return [None if p is None else p.doc_id for p in records]


class SearchData:
    """The pages and passages one index folder answers from, shared by all retrievers.

    Why shared: a hybrid retriever holds a BM25 and a dense retriever over the same passages;
    they open docs.jsonl and passages.jsonl once per process. Neither is held: both are read
    a line at a time by id (DocStore.from_snapshot, PassageStore), so a retriever's memory is
    a few words a page and a passage, not the corpus (2.9 GB at 333,607 passages before).
    Opening maps the tables kept in the index folder (search.doctables) and hashes no file
    the stamps say is unchanged (search.stamps), so it reads neither file through.
    """

    _cache: ClassVar[dict[tuple[str, str], SearchData]] = {}

    def __init__(
        self, docs: DocStore, passages: Mapping[str, Passage], settings: PassageSettings
    ) -> None:
        self.docs = docs
        self.passages = passages
        self.settings = settings

    def check_settings(self, settings: PassageSettings, folder: Path, layout: IndexLayout) -> None:
        """An index must have been built from the passages this data holds."""
        if settings != self.settings:
            raise DrarenaError(
                f"{folder} was built with other passage settings than {layout.passages}: "
                f"rebuild with {layout.rebuild_hint()}"
            )

    @classmethod
    def load(cls, layout: IndexLayout) -> SearchData:
        from drarena.search.passagestore import PassageStore

        manifest = require_fresh(
            layout.passages, PassagesManifest, layout.snapshot_dir, layout, "passages"
        )
        key = (str(layout.passages.resolve()), manifest.passages_sha256)
        if key not in cls._cache:
            # the docs.jsonl require_fresh just verified: its tables are mapped, not rebuilt
            docs = DocStore.from_snapshot(
                layout.snapshot_dir, layout.doctables, manifest.docs_sha256
            )
            passages = PassageStore.open(layout, manifest)
            cls._cache[key] = cls(docs, passages, manifest.passages)
        return cls._cache[key]
