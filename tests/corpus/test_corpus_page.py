"""extract_page on real pages of the fixture snapshot, and on bytes that break naive code."""

from __future__ import annotations

from corpus_helpers import fixture_page

from drarena.corpus.page import detect_encoding, extract_page


def test_real_sphinx_page_text_title_and_links() -> None:
    url, body = fixture_page("/library/os.path.html")
    page = extract_page(body, url, "text/html")
    assert page.extractor == "trafilatura" and not page.error
    assert page.title.startswith("os.path — Common pathname manipulations")
    assert "¶" not in page.title
    assert "This module implements some useful functions on pathnames" in page.text
    assert "Report a Bug" not in page.text  # page furniture is not main text
    assert page.self_links > 0  # the ¶ header links point at the page itself
    assert all(link.target_url != url for link in page.links)
    # Targets are absolute and canonical, fragments kept apart.
    assert all(link.target_url.startswith(("http://", "https://")) for link in page.links)
    assert all("#" not in link.target_url for link in page.links)
    by_anchor = {link.anchor: link for link in page.links}
    # Sphinx furniture: div.related (role=navigation) and the sidebar are navigation.
    assert by_anchor["next"].furniture and by_anchor["previous"].furniture
    assert by_anchor["modules"].furniture == "furniture:role=navigation"
    # A link in running text is content, with the sentence around it as context.
    glob = by_anchor["glob"]
    assert glob.furniture == "" and glob.target_url.endswith("/library/glob.html")
    assert "glob" in glob.context and len(glob.context) > len("glob") + 40
    # The "See also" admonition gives a relation hint.
    assert any(
        lk.hint == "see_also" and lk.target_url.endswith("/pathlib.html") for lk in page.links
    )


def test_encodings_declared_undeclared_and_bom() -> None:
    url, body = fixture_page("/library/os.path.html")
    text = body.decode("utf-8")
    assert detect_encoding(body, "text/html; charset=utf-8") == "utf-8"
    # The real page re-encoded as cp1252, declared only in the HTTP header.
    latin = text.replace('charset="utf-8"', "").replace("’", "'").replace("—", "-")
    latin = latin.replace("Common pathname", "Commön päthname")
    latin_bytes = latin.encode("cp1252", errors="replace")
    page = extract_page(latin_bytes, url, "text/html; charset=windows-1252")
    assert page.encoding == "cp1252" and "Commön päthname" in page.title
    # Undeclared and not UTF-8: cp1252, not mojibake and not a crash.
    page = extract_page(latin_bytes, url, "text/html")
    assert page.encoding == "cp1252" and "Commön päthname" in page.title
    # A bogus declared charset falls through to detection.
    assert detect_encoding(body, "text/html; charset=x-no-such-codec") == "utf-8"
    # UTF-16 with a BOM.
    page = extract_page(text.encode("utf-16"), url, "text/html")
    assert page.encoding == "utf-16" and page.title.startswith("os.path")


def test_pages_that_cannot_be_parsed_do_not_raise() -> None:
    url = "http://127.0.0.1:8765/x.html"
    empty = extract_page(b"", url)
    assert empty.extractor == "none" and empty.error == "empty body" and not empty.text
    blank = extract_page(b"  \n\t ", url)
    assert blank.error == "empty body"
    garbage = extract_page(bytes(range(256)) * 40, url, "text/html; charset=utf-8")
    assert garbage.error == "binary content, not HTML text" and garbage.text == ""
    comment_only = extract_page(b"<!-- nothing here -->", url, "text/html")
    assert comment_only.extractor == "none" and comment_only.error.startswith("unparsable")
    # trafilatura finds no main text: the visible text (here none) is used, and flagged.
    images = extract_page(b"<html><body><img src='a.png'></body></html>", url, "text/html")
    assert images.extractor == "fallback" and images.text == "" and not images.error
    # An XML declaration before <html> (XHTML) is still a whole document.
    xhtml = extract_page(
        b'<?xml version="1.0" encoding="utf-8"?>\n<html><head><title>X'
        b"</title></head><body><p>An XHTML page.</p></body></html>",
        url,
    )
    assert (xhtml.extractor, xhtml.title, xhtml.text) == ("trafilatura", "X", "An XHTML page.")


def test_huge_page_is_cut_and_flagged() -> None:
    url, body = fixture_page("/library/os.path.html")
    page = extract_page(body, url, "text/html", max_bytes=len(body) // 2)
    assert page.truncated
    assert page.text  # the first half still has text
    whole = extract_page(body, url, "text/html")
    assert not whole.truncated and len(page.text) < len(whole.text)


def test_base_href_and_skipped_schemes() -> None:
    html = (
        b'<html><head><base href="http://other.example/docs/"><title>T</title></head>'
        b'<body><main><p>Read <a href="guide.html">the guide</a> or '
        b'<a href="mailto:a@b.c">mail</a> or <a href="javascript:void(0)">js</a> or '
        b'<a href="http://[bad">bad</a> or <a>none</a>.</p></main></body></html>'
    )
    page = extract_page(html, "http://127.0.0.1:8765/page.html", "text/html")
    assert [lk.target_url for lk in page.links] == ["http://other.example/docs/guide.html"]
    assert page.skipped_links == {
        "scheme:mailto": 1,
        "scheme:javascript": 1,
        "bad_url": 1,
        "no_href": 1,
    }
    assert page.links[0].context == "Read the guide or mail or js or bad or none."
