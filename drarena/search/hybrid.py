"""Hybrid retrieval: reciprocal rank fusion of several retrievers' page rankings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.registry import ComponentSpec
from drarena.search.base import Retriever, build_retriever, check_k, parse_args
from drarena.search.docstore import DEFAULT_PAGE_CHARS, PageText, clean_query

RRF_K = 60


def rrf(
    rankings: Sequence[Sequence[str]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion (Cormack et al., 2009): score(d) = sum_i w_i / (k + rank_i(d)).

    Ranks start at 1; an id repeated within one ranking counts at its first rank. The result
    is sorted by fused score descending, then id ascending.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[str] = set()
        for rank, doc in enumerate(ranking, 1):
            if doc in seen:
                continue
            seen.add(doc)
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


class HybridArgs(BaseModel):
    """The retrievers to fuse (each {kind, args}) and the fusion constant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    retrievers: list[ComponentSpec] = Field(
        default_factory=lambda: [ComponentSpec(kind="bm25"), ComponentSpec(kind="dense")],
        min_length=1,
    )
    weights: list[float] | None = Field(
        default=None, description="one per retriever; default all 1"
    )
    rrf_k: int = Field(default=RRF_K, ge=0, description="RRF constant: larger flattens rank gaps")
    depth: int = Field(default=50, ge=1, le=1000, description="pages taken from each retriever")


class HybridRetriever:
    """Fuses the page rankings of its members; hits keep the first member's snippet."""

    name = "hybrid"

    def __init__(self, members: list[Retriever], args: HybridArgs) -> None:
        self.members = members
        self.args = args

    def search(self, query: str, k: int = 10) -> list[Hit]:
        k = check_k(k)
        text = clean_query(query)
        depth = max(self.args.depth, k)
        runs = [member.search(text, depth) for member in self.members]
        first: dict[str, Hit] = {}
        for run in runs:
            for hit in run:
                first.setdefault(hit.docid, hit)
        fused = rrf([[h.docid for h in run] for run in runs], self.args.rrf_k, self.args.weights)
        return [
            Hit(
                docid=d,
                url=first[d].url,
                title=first[d].title,
                snippet=first[d].snippet,
                score=score,
                rank=rank,
            )
            for rank, (d, score) in enumerate(fused[:k], 1)
        ]

    def open(
        self, url_or_docid: str, offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS
    ) -> PageText:
        return self.members[0].open(url_or_docid, offset, max_chars)


def build(snapshot_dir: Path, index_root: Path, **args: Any) -> HybridRetriever:
    parsed: HybridArgs = parse_args(HybridArgs, args, "hybrid")
    if parsed.weights is not None and len(parsed.weights) != len(parsed.retrievers):
        raise DrarenaError(
            f"retriever hybrid: args.weights has {len(parsed.weights)} entries "
            f"for {len(parsed.retrievers)} retrievers"
        )
    members = [build_retriever(spec, snapshot_dir, index_root) for spec in parsed.retrievers]
    return HybridRetriever(members, parsed)
