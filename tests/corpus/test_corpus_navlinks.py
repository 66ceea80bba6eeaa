"""Navigation-link detection: furniture rules, the repetition rule, and the fixture's links."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from drarena.corpus.extract import ExtractResult, load_links
from drarena.corpus.navlinks import (
    RepeatCounter,
    RepeatRule,
    ancestors_reason,
    furniture_reason,
    repeated_pairs,
)


def test_furniture_by_tag_role_and_class_tokens() -> None:
    assert furniture_reason("nav", "", "", "") == "furniture:nav"
    assert furniture_reason("footer", "", "", "") == "furniture:footer"
    assert furniture_reason("div", "navigation", "related", "") == "furniture:role=navigation"
    assert furniture_reason("div", "", "sphinxsidebar", "") == "furniture:sphinxsidebar"
    assert furniture_reason("ol", "", "", "site-breadcrumbs") == "furniture:breadcrumbs"
    assert furniture_reason("div", "", "wy-menu wy-menu-vertical", "") == "furniture:menu"
    # Tokens are whole words: "navigator" and "headerlink" are not furniture.
    assert furniture_reason("div", "", "navigator headerlink", "") == ""
    assert furniture_reason("p", "", "", "") == ""


def test_climb_stops_at_main_content() -> None:
    inside_main = [("p", "", "", ""), ("div", "main", "body", ""), ("div", "", "sidebar", "")]
    assert ancestors_reason(inside_main) == ""
    in_sidebar = [("li", "", "", ""), ("ul", "", "", ""), ("div", "", "sidebar", "")]
    assert ancestors_reason(in_sidebar) == "furniture:sidebar"


def test_repetition_rule() -> None:
    menu = [("http://s/a", "Home"), ("http://s/b", "About")]
    pages = [[*menu, (f"http://s/p{i}", f"topic {i}")] for i in range(10)]
    pages.append([("http://s/a", "the home page")])  # same target, other words: prose
    pairs = repeated_pairs(pages, RepeatRule(share=0.3, min_pages=5))
    assert pairs == {("http://s/a", "home"), ("http://s/b", "about")}
    # Too few pages to tell a template from prose: nothing fires.
    assert repeated_pairs(pages[:4], RepeatRule(share=0.3, min_pages=5)) == frozenset()
    # A link repeated within one page counts once.
    assert repeated_pairs([[("http://s/x", "x")] * 9] + [[]] * 9, RepeatRule(0.3, 2)) == set()


PAIRS = st.tuples(
    st.sampled_from(["http://s/a", "http://s/b", "http://s/c", "http://s/d"]),
    st.sampled_from(["Home", "home ", "About", "x", ""]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(PAIRS, max_size=6), max_size=40),
    st.sampled_from([0.1, 0.3, 0.5, 1.0]),
    st.integers(1, 6),
    st.integers(1, 12),
    st.randoms(use_true_random=False),
)
def test_the_streamed_rule_finds_the_same_pairs(
    pages: list[list[tuple[str, str]]],
    share: float,
    min_pages: int,
    chunk_pairs: int,
    rng: random.Random,
) -> None:
    """RepeatCounter (two passes, a chunk of pages at a time; extraction's) gives the set
    repeated_pairs gives with every page in memory, however the pages fall into chunks and
    in whatever order pass two sees them."""
    rule = RepeatRule(share=share, min_pages=min_pages)
    counter = RepeatCounter(rule, chunk_pairs=chunk_pairs)
    for links in pages:
        counter.add(links)
    if counter.needs_count():
        for links in rng.sample(pages, len(pages)):
            counter.count(links)
    assert counter.repeated() == repeated_pairs(pages, rule)


def test_fixture_navigation_is_marked_and_content_kept(pydocs: ExtractResult) -> None:
    links = load_links(pydocs.snapshot_dir)
    nav_anchors = Counter(lk.anchor for lk in links if lk.is_nav)
    content_anchors = Counter(lk.anchor for lk in links if not lk.is_nav)
    # Sphinx's related bar and sidebar on every page.
    for anchor in ("next", "previous", "index", "Report a Bug", "Show Source"):
        assert nav_anchors[anchor] > 100, anchor
        assert content_anchors[anchor] == 0, anchor
    for page in ("genindex.html", "py-modindex.html", "bugs.html", "contents.html"):
        to_page = [lk for lk in links if lk.target_url.endswith(f"/{page}")]
        assert len(to_page) > 100 and all(lk.is_nav for lk in to_page), page
    assert all(lk.nav_reason for lk in links if lk.is_nav)
    assert not any(lk.nav_reason for lk in links if not lk.is_nav)
    # Content links remain, and they are most of the in-snapshot links.
    inside = [lk for lk in links if lk.in_snapshot]
    assert sum(not lk.is_nav for lk in inside) > 0.5 * len(inside)
    # A module page's link to another module in running prose is content.
    assert any(
        lk.source_url.endswith("/library/os.path.html")
        and lk.target_url.endswith("/library/glob.html")
        and not lk.is_nav
        for lk in links
    )
