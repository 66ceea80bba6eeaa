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
