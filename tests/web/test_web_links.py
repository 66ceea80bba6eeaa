"""Link discovery: the crawler's lexer finds exactly what a DOM parser (lxml) finds."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html

from drarena.web.crawling.fetch import extract_links
from drarena.web.warc.snapshot import Snapshot


def dom_links(body: bytes, base_url: str) -> list[str]:
    doc = lxml.html.document_fromstring(body)
    base = base_url
    for element in doc.iter("base"):
        if element.get("href"):
            base = urljoin(base_url, element.get("href", "").strip())
            break
    out: list[str] = []
    for element in doc.iter("a", "area"):
        href = (element.get("href") or "").strip().split("#", 1)[0]
        target = urljoin(base, href) if href else ""
        if target and urlsplit(target).scheme in ("http", "https") and target not in out:
            out.append(target)
    return out


def test_same_links_as_lxml_on_fixture_pages(repo_root: Path) -> None:
    with Snapshot.open(repo_root / "snapshots" / "pydocs") as snap:
        pages = [r for r in snap.iter_responses() if r.is_html and r.status == 200][:80]
    assert len(pages) == 80
    total = 0
    for page in pages:
        links = extract_links(page.body, page.url)
        assert links == dom_links(page.body, page.url), page.url
        total += len(links)
    assert total > 80 * 10


def test_tricky_markup() -> None:
    body = b"""<html><head><base href="/docs/v2/"><script>var s = '<a href="/js">';</script>
    <style>a[href="/css"] {}</style></head><body>
    <!-- <a href="/commented">no</a> -->
    <a href="page.html#sec">1</a> <A HREF='other.html'>2</A> <a class=x href=bare.html>3</a>
    <a href="q?a=1&amp;b=2">4</a> <a href="#top">5</a> <a href="mailto:x@y">6</a>
    <a data-href="/not-a-link">7</a> <area shape=rect href="/map.html">
    <a href="page.html">dup</a> <a href="https://other.example/x">ext</a></body></html>"""
    assert extract_links(body, "http://h/index.html") == [
        "http://h/docs/v2/page.html",
        "http://h/docs/v2/other.html",
        "http://h/docs/v2/bare.html",
        "http://h/docs/v2/q?a=1&b=2",
        "http://h/map.html",
        "https://other.example/x",
    ]
    assert extract_links(body, "http://h/index.html") == dom_links(body, "http://h/index.html")
