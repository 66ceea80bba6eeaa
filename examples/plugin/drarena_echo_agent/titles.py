"""An example retriever kind: `titles` ranks a snapshot's pages by words shared with the title.

The retriever contract: a factory called with the config's args plus `snapshot_dir` and
`index_root`, returning an object with `name`, `search(query, k) -> list[Hit]` (score
descending, ties by docid) and `open(url_or_docid, offset, max_chars) -> PageText`. This one
reads the snapshot's docs.jsonl (made by `drarena extract`) and needs no index.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.corpus.extract import load_docs
from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search.base import parse_args, snippet
from drarena.search.docstore import PageText

WORD = re.compile(r"[a-z0-9]+")


class TitlesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_shared: int = Field(1, ge=1, description="words a title must share with the query")


class TitlesRetriever:
    name = "titles"

    def __init__(self, snapshot_dir: Path, args: TitlesArgs) -> None:
        self.args = args
        self.docs = {d.id: d for d in load_docs(snapshot_dir)}
        self.by_url = {d.url: d.id for d in self.docs.values()}

    def search(self, query: str, k: int = 10) -> list[Hit]:
        words = set(WORD.findall(query.lower()))
        scored = []
        for doc in self.docs.values():
            shared = len(words & set(WORD.findall(doc.title.lower())))
            if shared >= self.args.min_shared:
                scored.append((-shared, doc.id))
        scored.sort()
        return [
            Hit(
                docid,
                self.docs[docid].url,
                self.docs[docid].title,
                snippet(self.docs[docid].contents),
                float(-neg),
                rank,
            )
            for rank, (neg, docid) in enumerate(scored[:k], 1)
        ]

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        docid = self.by_url.get(url_or_docid, url_or_docid)
        doc = self.docs.get(docid)
        if doc is None:
            raise DrarenaError(f"titles: no page {url_or_docid!r} in the snapshot")
        end = min(len(doc.contents), offset + max_chars)
        return PageText(
            doc.id,
            doc.url,
            doc.title,
            doc.contents[offset:end],
            offset,
            end if end < len(doc.contents) else None,
            len(doc.contents),
        )


def build(snapshot_dir: Path, index_root: Path, **args: Any) -> TitlesRetriever:
    return TitlesRetriever(snapshot_dir, parse_args(TitlesArgs, args, "titles"))
