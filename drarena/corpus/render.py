"""Extraction's last step: pages' results -> their docs.jsonl and links.jsonl lines, a chunk of
pages at a time, as a pure function that any worker can run.

Why apart, and why chunks: writing the records (JSON of ~11 records a page, quality flags,
navigation) was a seventh of a one-process extraction and ran after every page was extracted,
in the one process, while the other cores waited: with two workers that serial tail held
the stage near 1.6x one process. Each page's lines depend on the whole snapshot only through
RenderContext (redirect aliases, the navigation repeated across pages) and through what the
spill knows when the chunk is read (its duplicate, which of its links' targets are pages);
given those, a chunk renders alone, so the engine that extracted the pages (a local pool,
Ray) renders the chunks too, and the driver writes them in order: the same bytes whatever
ran them.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from drarena.corpus.navlinks import normalize_anchor
from drarena.corpus.page import PageExtract, RawLink
from drarena.corpus.records import Doc, Link

NEAR_EMPTY_CHARS = 200
RENDER_PAGES = 256  # pages rendered in one piece: ~0.15 s of work, ~2 MB of rows

# one row of the spill's pages, with what the driver adds: (meta, page, links, inside) as the
# spill stores them (JSON, JSON, JSON, a '0'/'1' flag a link: is its target a page), and the
# doc id the page duplicates (None: no duplicate)
RenderRow = tuple[str, str, str, str, str | None]


def doc_id(canonical_url: str) -> str:
    """Stable id of a page: the first 16 hex digits of sha256 of its canonical URL."""
    return hashlib.sha256(canonical_url.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What rendering a page needs of the whole snapshot, sent to each worker once.
    `aliases`: redirecting URL -> page; `aliases_of`: page -> its aliases, sorted;
    `repeated`: the (target, normalized anchor) pairs that are navigation by repetition."""

    aliases: dict[str, str]
    aliases_of: dict[str, tuple[str, ...]]
    repeated: frozenset[tuple[str, str]]

    @staticmethod
    def of(aliases: dict[str, str], repeated: frozenset[tuple[str, str]]) -> RenderContext:
        by_page: dict[str, list[str]] = {}
        for alias, final in aliases.items():
            by_page.setdefault(final, []).append(alias)
        return RenderContext(aliases, {p: tuple(sorted(a)) for p, a in by_page.items()}, repeated)


@dataclass(frozen=True, slots=True)
class Rendered:
    """A chunk's lines (each ending in a newline), the manifest's list entries in the order
    they were found, and its counts."""

    docs: str
    links: str
    flags: list[tuple[str, Any]]
    tally: Counter[str]
    skipped_links: Counter[str]


def parse_page(data: str, links: str) -> PageExtract:
    """A page's result as the spill stores it (corpus.spill)."""
    values = json.loads(data)
    values["links"] = tuple(RawLink(*row) for row in json.loads(links))
    return PageExtract(**values)


def render_pages(ctx: RenderContext, rows: Sequence[RenderRow]) -> Rendered:
    """The chunk's docs.jsonl and links.jsonl lines, in the rows' order (a pool or Ray task:
    top level, so it pickles by reference)."""
    docs: list[str] = []
    links: list[str] = []
    flags: list[tuple[str, Any]] = []
    tally: Counter[str] = Counter()
    skipped_links: Counter[str] = Counter()
    for meta, data, raw_links, inside, duplicate_of in rows:
        page = parse_page(data, raw_links)
        doc = page_doc(page, json.loads(meta), duplicate_of, ctx.aliases_of.get(page.url, ()))
        docs.append(doc.to_json())
        tally["pages"] += 1
        tally["content_pages"] += doc.is_content
        for name, item in page_flags(page, doc):
            flags.append((name, item))
            tally[name] += 1
        skipped_links.update(page.skipped_links)
        targets = [ctx.aliases.get(raw.target_url, raw.target_url) for raw in page.links]
        # a link that redirects back to the page itself is a self link, not written
        tally["self_links"] += page.self_links + targets.count(page.url)
        in_snapshot = {target for target, flag in zip(targets, inside, strict=True) if flag == "1"}
        for link in page_links(page, doc.id, targets, in_snapshot, ctx.repeated):
            links.append(link.to_json())
            tally["links"] += 1
            tally["nav_links"] += link.is_nav
            tally["in_snapshot_links"] += link.in_snapshot
            tally["content_links_in_snapshot"] += link.in_snapshot and not link.is_nav
    return Rendered(_lines(docs), _lines(links), flags, tally, skipped_links)


def _lines(items: list[str]) -> str:
    return "".join(f"{item}\n" for item in items)


def page_doc(
    page: PageExtract, meta: Sequence[Any], duplicate_of: str | None, aliases: tuple[str, ...]
) -> Doc:
    """A page's docs.jsonl record; `meta` is what the spill kept of its response."""
    record_id, payload_digest, warc_date, response_truncated, digest = meta
    return Doc(
        id=doc_id(page.url),
        url=page.url,
        title=page.title,
        contents=page.text,
        record_id=record_id,
        payload_digest=payload_digest,
        digest=digest,
        chars=len(page.text),
        link_chars=page.link_chars,
        description=page.description,
        lang=page.lang,
        warc_date=warc_date,
        encoding=page.encoding,
        extractor=page.extractor,
        near_empty=len(page.text) < NEAR_EMPTY_CHARS,
        duplicate_of=duplicate_of,
        truncated=page.truncated or response_truncated,
        aliases=aliases,
    )


def page_flags(page: PageExtract, doc: Doc) -> Iterator[tuple[str, Any]]:
    """The manifest's list entries for a page (extract.REPORT_LISTS), in the order they are
    filed."""
    if doc.near_empty:
        yield "near_empty", page.url
    if doc.duplicate_of:
        yield "duplicates", {"url": page.url, "duplicate_of": doc.duplicate_of}
    if page.error:
        yield "unparsable", {"url": page.url, "error": page.error}
    elif page.extractor == "fallback":
        yield "fallback_text", page.url
    if doc.truncated:
        yield "truncated", page.url


def page_links(
    page: PageExtract,
    page_id: str,
    targets: Sequence[str],
    in_snapshot: AbstractSet[str],
    repeated: frozenset[tuple[str, str]],
) -> Iterator[Link]:
    """A page's links.jsonl records: `targets` are its links' targets through redirects, a
    link back to the page itself left out; navigation by the link's own furniture, else by
    repeating across pages (`repeated`)."""
    for raw, target_url in zip(page.links, targets, strict=True):
        if target_url == page.url:
            continue
        repeat = (target_url, normalize_anchor(raw.anchor)) in repeated
        reason = raw.furniture or ("repeated" if repeat else "")
        inside = target_url in in_snapshot
        yield Link(
            source=page_id,
            source_url=page.url,
            target_url=target_url,
            target=doc_id(target_url) if inside else None,
            anchor=raw.anchor,
            context=raw.context,
            ordinal=raw.ordinal,
            in_snapshot=inside,
            is_nav=bool(reason),
            nav_reason=reason,
            fragment=raw.fragment,
            in_list=raw.in_list,
            hint=raw.hint,
        )
