"""Retrieval diagnostics: can each retriever find the pages a tournament asks about?

Gold evidence is the set of target pages of the snapshot's Information Trees (every node
below a root), or, when no trees were built, every indexed page. Each gold page yields queries
built from it: its title, and its key phrases (the page's highest tf-idf words that are not in
its title, a harder query that cannot echo the title). Each query has exactly one relevant page,
so recall@k is the share of queries whose page is in the top k, and MRR@k the mean reciprocal
rank of that page (0 when it is not in the top k).

Runs and qrels are written in TREC format so pyserini's trec_eval scores them; tied scores are
written a millionth apart so trec_eval (which re-sorts ties by docid descending) keeps our
order (score, then docid ascending).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError
from drarena.files import write_atomic
from drarena.records import Hit, Record
from drarena.search.passages import SourceDoc

KEY_PHRASE_WORDS = 6
TIE_STEP = 1e-6
_TOKEN = re.compile(r"[^\W\d_][\w-]{2,}", re.UNICODE)
_STOP_WORDS = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each either else few for from
further had has have having he her here hers him his how if in into is it its itself just may
me might more most must my no nor not now of off on once only or other our out over own same
see she should so some such than that the their them then there these they this those through
to too under until up use used using very was we were what when where which while who whom why
will with would you your
"""
_STOP = frozenset(_STOP_WORDS.split())


@dataclasses.dataclass(frozen=True, slots=True)
class Query(Record):
    """One diagnostic query and the single page that answers it."""

    qid: str
    text: str
    kind: str
    gold: str


@dataclasses.dataclass(frozen=True, slots=True)
class Score(Record):
    """One retriever's figures over all queries (and per query kind)."""

    retriever: str
    queries: int
    k: int
    recall: float
    mrr: float
    by_kind: dict[str, tuple[float, float]]


def clean_title(title: str) -> str:
    """A page title as a query: without pilcrows and a trailing ' — Site name'."""
    text = title.replace("¶", " ")
    text = re.split(r"\s+[—|-]\s+(?=[^—|]*(?:documentation|Docs)\b)", text)[0]
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text) if t.lower() not in _STOP]


def key_phrases(docs: Sequence[SourceDoc], n: int = KEY_PHRASE_WORDS) -> dict[str, str]:
    """Each page's n highest tf-idf words outside its title, in descending weight (ties by
    word); idf over the given pages."""
    counts = {d.id: Counter(tokens(d.contents)) for d in docs}
    df: Counter[str] = Counter()
    for c in counts.values():
        df.update(c.keys())
    total = len(docs)
    out: dict[str, str] = {}
    for doc in docs:
        title_words = set(tokens(doc.title))
        weights = [
            (-tf * math.log((1 + total) / (1 + df[w])), w)
            for w, tf in counts[doc.id].items()
            if w not in title_words
        ]
        out[doc.id] = " ".join(w for _, w in sorted(weights)[:n])
    return out


def gold_from_trees(tree_dir: Path) -> list[str]:
    """Target pages of every tree under tree_dir (nodes below the root), sorted."""
    from drarena.corpus.trees import TREE_FILE, load_tree

    gold: set[str] = set()
    for path in sorted(tree_dir.glob("*.json")):
        if not TREE_FILE.fullmatch(path.name):  # index.json, and any file of the user's
            continue
        gold.update(node.id for node in load_tree(path).nodes if node.depth >= 1)
    return sorted(gold)


def build_queries(
    docs: Sequence[SourceDoc], gold: Iterable[str], max_pages: int, seed: int = 0
) -> list[Query]:
    """Title and key-phrase queries for up to max_pages gold pages (a seeded sample)."""
    by_id = {d.id: d for d in docs if d.indexed}
    pages = sorted(g for g in set(gold) if g in by_id)
    if len(pages) > max_pages:
        pages = sorted(random.Random(seed).sample(pages, max_pages))
    phrases = key_phrases(list(by_id.values()))
    queries: list[Query] = []
    for doc_id in pages:
        doc = by_id[doc_id]
        for kind, text in (("title", clean_title(doc.title)), ("phrases", phrases[doc_id])):
            if any(ch.isalnum() for ch in text):
                queries.append(Query(f"q{len(queries) + 1:05d}", text, kind, doc_id))
    return queries


def evaluate(
    ranked: Mapping[str, Sequence[str]], queries: Sequence[Query], k: int, name: str
) -> Score:
    """recall@k and MRR@k of ranked docids per qid against each query's one gold page."""
    per_kind: dict[str, list[tuple[float, float]]] = {}
    for q in queries:
        top = list(ranked.get(q.qid, ()))[:k]
        rank = top.index(q.gold) + 1 if q.gold in top else 0
        per_kind.setdefault(q.kind, []).append((1.0 if rank else 0.0, 1 / rank if rank else 0.0))
    every = [pair for pairs in per_kind.values() for pair in pairs]

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    return Score(
        retriever=name,
        queries=len(every),
        k=k,
        recall=mean([r for r, _ in every]),
        mrr=mean([m for _, m in every]),
        by_kind={
            kind: (mean([r for r, _ in pairs]), mean([m for _, m in pairs]))
            for kind, pairs in sorted(per_kind.items())
        },
    )


def trec_scores(scores: Sequence[float], step: float = TIE_STEP) -> list[float]:
    """Strictly decreasing copies of descending scores: a score not below its predecessor is
    moved step (relative, at least step absolute) below it. trec_eval reads scores as 32-bit
    floats, so the step is well above float32 resolution (1.2e-7 relative)."""
    out: list[float] = []
    for score in scores:
        value = float(score)
        if out and value >= out[-1]:
            value = out[-1] - max(abs(out[-1]) * step, step)
        out.append(value)
    return out


def write_run(path: Path, runs: Mapping[str, Sequence[Hit]], tag: str) -> None:
    lines = []
    for qid in sorted(runs):
        hits = runs[qid]
        for hit, score in zip(hits, trec_scores([h.score for h in hits]), strict=True):
            lines.append(f"{qid} Q0 {hit.docid} {hit.rank} {score!r} {tag}\n")
    write_atomic(path, "".join(lines))


def write_qrels(path: Path, queries: Sequence[Query]) -> None:
    write_atomic(path, "".join(f"{q.qid} 0 {q.gold} 1\n" for q in queries))


def write_queries(path: Path, queries: Sequence[Query]) -> None:
    write_atomic(path, "".join(q.to_json() + "\n" for q in queries))


def write_summary(path: Path, scores: Sequence[Score], meta: dict[str, object]) -> None:
    data = {**meta, "scores": [s.to_dict() for s in scores]}
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def run_diagnostics(
    snapshot_dir: Path,
    index_root: Path,
    specs: Sequence[dict[str, Any]],
    out: Path,
    k: int = 10,
    max_pages: int = 200,
    seed: int = 0,
) -> str:
    """Queries, runs, qrels and summary under out; returns the printed table."""
    import sys

    from tqdm import tqdm

    from drarena.search import lucene
    from drarena.search.base import build_retriever, check_k
    from drarena.search.docstore import load_source_docs

    check_k(k)
    docs = load_source_docs(snapshot_dir)
    tree_dir = snapshot_dir / "trees"
    gold = gold_from_trees(tree_dir) if tree_dir.is_dir() else []
    source = "tree target pages" if gold else "pages (no trees: every indexed page)"
    if not gold:
        gold = [d.id for d in docs if d.indexed]
    queries = build_queries(docs, gold, max_pages, seed)
    if not queries:
        raise DrarenaError(f"{snapshot_dir}: no gold pages to build queries from")
    out.mkdir(parents=True, exist_ok=True)
    write_queries(out / "queries.jsonl", queries)
    write_qrels(out / "qrels.txt", queries)
    rows = []
    for spec in specs:
        name = str(spec["kind"])
        retriever = build_retriever(spec, snapshot_dir, index_root)
        runs = {
            q.qid: retriever.search(q.text, k)
            for q in tqdm(queries, desc=f"diagnose {name}", unit="query", file=sys.stderr)
        }
        score = evaluate(
            {qid: [h.docid for h in hits] for qid, hits in runs.items()}, queries, k, name
        )
        run_path = out / f"run.{name}.txt"
        write_run(run_path, runs, f"drarena-{name}")
        checked = lucene.trec_eval(out / "qrels.txt", run_path, [f"recall.{k}", "recip_rank"])
        rows.append((score, checked))
    write_summary(
        out / "summary.json",
        [s for s, _ in rows],
        {
            "snapshot": snapshot_dir.name,
            "gold": source,
            "k": k,
            "seed": seed,
            "max_pages": max_pages,
            "trec_eval": {s.retriever: c for s, c in rows},
        },
    )
    pages = len({q.gold for q in queries})
    kinds = sorted({q.kind for q in queries})
    lines = [
        f"gold: {pages} {source}; {len(queries)} queries ({', '.join(kinds)}); k={k}",
        f"{'retriever':10} {'recall@' + str(k):>10} {'MRR@' + str(k):>8}  "
        + "  ".join(f"{kind + ' R/MRR':>16}" for kind in kinds)
        + f"  {'trec_eval R/MRR':>16}",
    ]
    for score, checked in rows:
        per = "  ".join(
            f"{score.by_kind.get(kind, (0.0, 0.0))[0]:7.3f}/"
            f"{score.by_kind.get(kind, (0.0, 0.0))[1]:.3f}"
            for kind in kinds
        )
        te = (
            f"{checked.get(f'recall_{k}', float('nan')):7.3f}/"
            f"{checked.get('recip_rank', float('nan')):.3f}"
        )
        lines.append(f"{score.retriever:10} {score.recall:10.3f} {score.mrr:8.3f}  {per}  {te}")
    lines.append(f"runs, qrels and summary.json in {out}")
    return "\n".join(lines)
