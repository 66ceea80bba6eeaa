"""Navigation-link detection: furniture rules, the repetition rule, and the fixture's links."""

from __future__ import annotations

from collections import Counter

from drarena.corpus.extract import ExtractResult, load_links
from drarena.corpus.navlinks import (
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
