"""Documents cut into overlapping passages: the unit both indexes search.

Why passages: the embedder reads at most 256 word pieces (all-MiniLM-L6-v2), and BM25 on
whole pages favours long pages; both indexes use the same passages so hybrid fusion compares
like with like. A passage id is `<doc id>#<n>`, so every hit maps back to its page; results
are returned per page (the best passage of each page, "MaxP").

Settings (recorded in every index manifest):
- `words`: passage length in whitespace-separated words (160, about 210 word pieces of
  English prose, inside MiniLM's 256);
- `stride`: words between passage starts (120, so consecutive passages overlap by 40 words
  and a sentence cut at one border is whole in the next passage);
- `title_prefix`: the page title is prepended to each passage's indexed text, so a passage
  deep in a page still matches the page's topic.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from drarena.records import Record

SEPARATOR = "#"
_WORD = re.compile(r"\S+")


class PassageSettings(BaseModel):
    """How documents are cut into passages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    words: int = Field(default=160, ge=1, le=4096, description="passage length in words")
    stride: int = Field(default=120, ge=1, description="words between passage starts")
    title_prefix: bool = Field(default=True, description="prepend the page title to indexed text")

    @model_validator(mode="after")
    def _stride_fits(self) -> PassageSettings:
        if self.stride > self.words:
            raise ValueError(f"stride {self.stride} exceeds words {self.words}: text would be lost")
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class SourceDoc(Record):
    """What search needs of a docs.jsonl page; `indexed` is False for near-empty pages and
    duplicates (they can still be opened, but never fill a result list twice)."""

    _tuple_fields: ClassVar[tuple[str, ...]] = ("aliases",)

    id: str
    url: str
    title: str
    contents: str
    aliases: tuple[str, ...] = ()
    indexed: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class Passage(Record):
    """A window of a page: [start, end) are character offsets into the page's contents."""

    id: str
    doc_id: str
    url: str
    title: str
    text: str
    start: int
    end: int

    def indexed_text(self, settings: PassageSettings) -> str:
        return f"{self.title}\n{self.text}" if settings.title_prefix and self.title else self.text


def passage_id(doc_id: str, n: int) -> str:
    return f"{doc_id}{SEPARATOR}{n}"


def doc_id_of(pid: str) -> str:
    """The page id of a passage id (a page id itself maps to itself)."""
    return pid.rsplit(SEPARATOR, 1)[0] if SEPARATOR in pid else pid


def split_doc(doc: SourceDoc, settings: PassageSettings) -> list[Passage]:
    """Windows of `words` words every `stride` words; the last window ends at the last word."""
    spans = [(m.start(), m.end()) for m in _WORD.finditer(doc.contents)]
    if not spans:
        spans_text = doc.title.strip()
        if not spans_text:
            return []
        return [Passage(passage_id(doc.id, 0), doc.id, doc.url, doc.title, "", 0, 0)]
    starts = list(range(0, max(len(spans) - settings.words, 0) + 1, settings.stride))
    if starts[-1] + settings.words < len(spans):
        starts.append(len(spans) - settings.words)
    out = []
    for n, first in enumerate(starts):
        last = min(first + settings.words, len(spans)) - 1
        begin, end = spans[first][0], spans[last][1]
        out.append(
            Passage(
                passage_id(doc.id, n),
                doc.id,
                doc.url,
                doc.title,
                doc.contents[begin:end],
                begin,
                end,
            )
        )
    return out


def split_docs(docs: Iterable[SourceDoc], settings: PassageSettings) -> Iterator[Passage]:
    for doc in docs:
        if doc.indexed:
            yield from split_doc(doc, settings)
