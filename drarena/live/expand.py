"""Live tree expansion: grow an Information Tree from the live web, into the run's capture.

Why: a match that needs children or siblings the frozen tree lacks should, in live mode,
find them where the tree came from. The parent page is fetched live, its content links
(navigation furniture dropped, as in the frozen corpus) are sampled with the match's
generator, fetched, extracted with the corpus extractor, and the content-rich ones become
new nodes. Page ids are the corpus ids (sha256 of the canonical URL), so a page that is
also in the snapshot keeps its id. Everything fetched goes through the shared `LiveWeb`,
so expansion lands in the same capture and a replay expands identically.
"""

from __future__ import annotations

import random
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from drarena.corpus.extract import text_digest
from drarena.corpus.page import RawLink
from drarena.corpus.records import Doc, Link, Tree, TreeEdge, TreeNode
from drarena.corpus.render import NEAR_EMPTY_CHARS, doc_id
from drarena.corpus.trees import make_edge, make_node
from drarena.corpus.treewalk import CONTENT_RICH_CHARS, CannotExpand, TreeWalker
from drarena.errors import DrarenaError
from drarena.live.web import LivePage, LiveWeb

# Links to these are not pages: no fetch spent on them.
SKIP_SUFFIXES = (
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".webp",
    ".ico",
    ".css",
    ".js",
    ".pdf",
    ".zip",
    ".gz",
    ".bz2",
    ".xz",
    ".tar",
    ".mp3",
    ".mp4",
    ".webm",
    ".woff",
    ".woff2",
    ".ttf",
    ".json",
    ".xml",
)


def doc_from_page(page: LivePage) -> Doc:
    """A corpus Doc of a live page, flagged as `drarena snapshot extract` flags pages."""
    text = page.text
    return Doc(
        id=doc_id(page.url),
        url=page.url,
        title=page.title,
        contents=text,
        record_id=page.response.record_id,
        payload_digest=page.response.payload_digest,
        digest=text_digest(text),
        chars=len(text),
        link_chars=page.extract.link_chars,
        description=page.extract.description,
        lang=page.extract.lang,
        warc_date=page.response.warc_date,
        encoding=page.extract.encoding,
        extractor=page.extract.extractor,
        near_empty=len(text) < NEAR_EMPTY_CHARS,
        truncated=page.extract.truncated or page.response.truncated,
    )


def content_links(page: LivePage, *, same_host: bool) -> list[RawLink]:
    """The page's non-navigation links to other pages, first occurrence of each target."""
    host = urlsplit(page.url).netloc
    seen: set[str] = {page.url}
    out = []
    for link in page.extract.links:
        target = link.target_url
        if link.furniture or target in seen:
            continue
        parts = urlsplit(target)
        if (same_host and parts.netloc != host) or parts.path.lower().endswith(SKIP_SUFFIXES):
            continue
        seen.add(target)
        out.append(link)
    return out


@dataclass
class LiveExpander:
    """The treewalk Expander for live mode. `pages` is the walker's page map: new pages are
    added to it, so the walker can hand their text to the Examiner."""

    web: LiveWeb
    pages: MutableMapping[str, Doc]
    min_chars: int = CONTENT_RICH_CHARS
    max_fetch: int = 12
    same_host: bool = True

    def expand(
        self, tree: Tree, parent: str, need: int, rng: random.Random
    ) -> list[tuple[TreeNode, TreeEdge]]:
        if need <= 0:
            return []
        parent_node = tree.node(parent)
        try:
            parent_page = self.web.page(parent_node.url)
        except DrarenaError as exc:
            raise CannotExpand(
                f"tree {tree.id}: live expansion of {parent_node.url}: {exc}", need, 0
            ) from None
        present = {n.id for n in tree.nodes}
        links = [
            lk
            for lk in content_links(parent_page, same_host=self.same_host)
            if doc_id(lk.target_url) not in present
        ]
        limit = max(need * 3, self.max_fetch)
        if len(links) > limit:
            keep = set(rng.sample(range(len(links)), limit))
            links = [lk for i, lk in enumerate(links) if i in keep]
        found: list[tuple[RawLink, Doc]] = []
        for link in links:
            try:
                doc = doc_from_page(self.web.page(link.target_url))
            except DrarenaError:
                continue  # gone, refused or not a page: recorded in the capture, skipped here
            if (
                doc.id in present
                or doc.chars < self.min_chars
                or any(d.id == doc.id for _, d in found)
            ):
                continue
            found.append((link, doc))
        if len(found) > need:
            keep = set(rng.sample(range(len(found)), need))
            found = [item for i, item in enumerate(found) if i in keep]
        out = []
        for raw, doc in found:
            self.pages.setdefault(doc.id, doc)
            doc = self.pages[doc.id]
            edge_link = Link(
                source=parent,
                source_url=parent_node.url,
                target_url=doc.url,
                target=doc.id,
                anchor=raw.anchor,
                context=raw.context,
                ordinal=raw.ordinal,
                in_snapshot=True,
                is_nav=False,
                fragment=raw.fragment,
                in_list=raw.in_list,
                hint=raw.hint,
            )
            out.append(
                (
                    make_node(doc, parent_node.depth + 1, parent, expanded=True),
                    make_edge(edge_link, parent_node.url),
                )
            )
        return out


def live_walker(
    tree_path: Path,
    snapshot_dir: Path,
    rng: random.Random,
    web: LiveWeb,
    min_chars: int = CONTENT_RICH_CHARS,
) -> TreeWalker:
    """A walker over a saved tree of the frozen snapshot that expands from the live web."""
    from drarena.corpus.extract import load_docs
    from drarena.corpus.trees import load_tree

    pages: dict[str, Doc] = {d.id: d for d in load_docs(snapshot_dir)}
    return TreeWalker(
        tree=load_tree(tree_path),
        pages=pages,
        rng=rng,
        expander=LiveExpander(web, pages, min_chars),
        min_chars=min_chars,
    )
