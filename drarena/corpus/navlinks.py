"""Navigation-link detection: menus, sidebars, footers and breadcrumbs are not content links.

Why: an Information Tree edge must mean "this page talks about that page". DR-Arena's reference
let navigation menus pass as content links, so trees wandered through site chrome. Two generic
signals, neither specific to one site generator:

1. Furniture: the link sits inside page furniture, recognised by HTML5 sectioning tags
   (`nav`, `header`, `footer`, `aside`), ARIA landmark roles (navigation, banner,
   contentinfo, complementary, search) or class/id tokens of a small vocabulary (nav, menu,
   sidebar, breadcrumb, footer, ...). Sphinx's `div.related` and `div.sphinxsidebar` carry
   role="navigation"; WordPress, MkDocs and Docusaurus themes use the same tags and tokens.
2. Repetition: the same (target, anchor text) pair occurs on a large share of the snapshot's
   pages, which is what a template does and running prose does not.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FURNITURE_TAGS = frozenset({"nav", "header", "footer", "aside"})
FURNITURE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
)
# Matched against whole tokens of class and id values split on space, '-' and '_'.
FURNITURE_TOKENS = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "navlinks",
        "menu",
        "menubar",
        "breadcrumb",
        "breadcrumbs",
        "sidebar",
        "sphinxsidebar",
        "sidebarwrapper",
        "related",
        "footer",
        "masthead",
        "topbar",
        "pagination",
        "pager",
        "sitemap",
        "skip",
        "toolbar",
    }
)
# A content container stops the climb: furniture outside the main content does not leak in.
CONTENT_ROLES = frozenset({"main", "article"})
_TOKEN_SPLIT = re.compile(r"[\s_\-]+")


def class_tokens(value: str) -> set[str]:
    return {t for t in _TOKEN_SPLIT.split(value.lower()) if t}


def furniture_reason(tag: str, role: str, classes: str, ident: str) -> str:
    """Why one element is page furniture ("" when it is not)."""
    if tag in FURNITURE_TAGS:
        return f"furniture:{tag}"
    if role and role.lower() in FURNITURE_ROLES:
        return f"furniture:role={role.lower()}"
    hit = (class_tokens(classes) | class_tokens(ident)) & FURNITURE_TOKENS
    if hit:
        return f"furniture:{min(hit)}"
    return ""


def ancestors_reason(chain: Iterable[tuple[str, str, str, str]]) -> str:
    """Furniture reason of a link from its ancestors, nearest first: (tag, role, class, id).
    The climb stops at `main`/`article` or role=main, so a menu-like class deep inside the
    article body (rare) is the only way content is marked."""
    for tag, role, classes, ident in chain:
        reason = furniture_reason(tag, role, classes, ident)
        if reason:
            return reason
        if tag in ("main", "article", "body") or role.lower() in CONTENT_ROLES:
            return ""
    return ""


@dataclass(frozen=True, slots=True)
class RepeatRule:
    """A (target, anchor) pair seen on at least `share` of pages and at least `min_pages`
    pages is template navigation. Small snapshots (fewer than min_pages pages) never fire."""

    share: float = 0.3
    min_pages: int = 5


def normalize_anchor(anchor: str) -> str:
    return " ".join(anchor.lower().split())


def repeated_pairs(
    pages: Sequence[Sequence[tuple[str, str]]], rule: RepeatRule = RepeatRule()
) -> frozenset[tuple[str, str]]:
    """(target_url, normalized anchor) pairs that repeat across pages, from each page's links.
    A pair counts once per page however often that page repeats it."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for links in pages:
        for pair in {(target, normalize_anchor(anchor)) for target, anchor in links}:
            counts[pair] += 1
    threshold = max(rule.min_pages, rule.share * len(pages))
    if len(pages) < rule.min_pages:
        return frozenset()
    return frozenset(pair for pair, n in counts.items() if n >= threshold)


class RepeatCounter:
    """repeated_pairs over a stream of pages, in two passes, holding a chunk's pairs and the
    candidates instead of every distinct pair of the snapshot (tens of millions at a million
    pages). Feed each page's (target, anchor) pairs to `add`, then, when `needs_count()`,
    each page's again (same pages, any order) to `count`; `repeated()` is then the very set
    repeated_pairs returns.

    Why it is the same set: pass one counts pages a chunk at a time (a chunk ends when it
    holds `chunk_pairs` distinct pairs) and keeps as candidates the pairs on at least `share`
    of the chunk's pages. A pair on `share` of all pages is on `share` of some chunk's pages
    (were it under that share in every chunk, it would be under it in their sum), so every
    repeated pair is a candidate; pass two counts the candidates exactly over all pages and
    applies the rule as repeated_pairs does. The candidates are few: a chunk of N pages
    with P pair occurrences has at most P / (share * N) of them, a few per average page's
    links, and templates repeat the same ones from chunk to chunk."""

    def __init__(self, rule: RepeatRule = RepeatRule(), chunk_pairs: int = 20_000) -> None:
        self.rule = rule
        self.chunk_pairs = chunk_pairs
        self.pages = 0
        self.candidates: set[tuple[str, str]] = set()
        self._chunk: dict[tuple[str, str], int] = defaultdict(int)
        self._chunk_pages = 0
        self._counts: dict[tuple[str, str], int] = defaultdict(int)

    @staticmethod
    def _pairs(links: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        return {(target, normalize_anchor(anchor)) for target, anchor in links}

    def add(self, links: Iterable[tuple[str, str]]) -> None:
        """Pass one: a page's (target, anchor) links."""
        for pair in self._pairs(links):
            self._chunk[pair] += 1
        self.pages += 1
        self._chunk_pages += 1
        if len(self._chunk) >= self.chunk_pairs:
            self._end_chunk()

    def _end_chunk(self) -> None:
        # one page less than the share: a margin for the rounding of share * pages, so the
        # candidates are a superset whatever the float does (pass two decides exactly)
        floor = self.rule.share * self._chunk_pages - 1
        self.candidates.update(pair for pair, n in self._chunk.items() if n >= floor)
        self._chunk.clear()
        self._chunk_pages = 0

    def needs_count(self) -> bool:
        """Pass one is over: whether pass two is needed (no candidates, or fewer pages than
        the rule's minimum: nothing can be repeated)."""
        self._end_chunk()
        return self.pages >= self.rule.min_pages and bool(self.candidates)

    def count(self, links: Iterable[tuple[str, str]]) -> None:
        """Pass two: a page's links again."""
        for pair in self._pairs(links):
            if pair in self.candidates:
                self._counts[pair] += 1

    def repeated(self) -> frozenset[tuple[str, str]]:
        threshold = max(self.rule.min_pages, self.rule.share * self.pages)
        if self.pages < self.rule.min_pages:
            return frozenset()
        return frozenset(pair for pair, n in self._counts.items() if n >= threshold)
