"""One HTML page -> main text (trafilatura), title and metadata, and its outgoing links.

Why a pure function: the extraction stage runs it in worker processes over bytes read from
the snapshot, and tests run it directly. Nothing here raises on bad pages: undecodable bytes,
empty or broken markup and huge pages come back as a `PageExtract` whose flags say so.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.etree
import lxml.html

from drarena.corpus.navlinks import ancestors_reason, class_tokens
from drarena.web.warc.urls import canonicalize_url

MAX_PAGE_BYTES = 4 * 1024 * 1024  # larger bodies are cut here and flagged `truncated`
# A page that was never HTML: text already extracted elsewhere (the DR-Arena paper's released
# trees hold each page's title, description and `content` text, not its HTML), stored as a
# JSON object {title, description, content, links: [{url, anchor, context}], error}.
# `drarena snapshot import-trees` writes them; extraction takes `content` verbatim as the
# page's text, so the text an Examiner reads is the reference's, with no second extractor.
TEXT_PAGE_TYPE = "application/vnd.drarena.text-page+json"
CONTEXT_CHARS = 160  # surrounding text kept on each side of an anchor
BLOCK_TAGS = frozenset(
    {
        "p",
        "li",
        "dd",
        "dt",
        "td",
        "th",
        "blockquote",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "div",
        "section",
        "article",
        "pre",
        "caption",
        "figcaption",
        "table",
        "ul",
        "ol",
        "dl",
        "body",
        "nav",
        "header",
        "footer",
        "aside",
        "main",
    }
)
SKIP_TEXT_TAGS = frozenset({"script", "style", "template"})
_CHARSET_META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
_PILCROW_EOL = re.compile(r"¶[ \t]*$", re.M)
_WS = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class RawLink:
    """A link as found on one page, before snapshot-wide navigation marking."""

    target_url: str  # absolute, canonical, fragment dropped
    fragment: str
    anchor: str
    context: str
    ordinal: int
    furniture: str  # "" or furniture:<why>
    in_list: bool
    hint: str  # "see_also" | "example" | "" from the enclosing block's class tokens


@dataclass(frozen=True, slots=True)
class PageExtract:
    url: str
    title: str = ""
    text: str = ""
    description: str = ""
    lang: str = ""
    encoding: str = ""
    extractor: str = "trafilatura"  # trafilatura | fallback | text (TEXT_PAGE_TYPE) | none
    truncated: bool = False
    error: str = ""
    links: tuple[RawLink, ...] = ()
    link_chars: int = 0  # anchor text of content (non-furniture) links, over all of them
    self_links: int = 0
    skipped_links: dict[str, int] = field(default_factory=dict)


def norm_space(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _usable_codec(name: str) -> str | None:
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def detect_encoding(body: bytes, content_type: str = "") -> str:
    """BOM, then the HTTP charset, then a <meta> charset, then UTF-8 if it decodes, else
    cp1252 (which the WHATWG spec uses for undeclared Latin-1)."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return name
    declared = re.search(r"charset\s*=\s*([^\s;]+)", content_type, re.I)
    if declared and (codec := _usable_codec(declared.group(1))):
        return codec
    meta = _CHARSET_META.search(body[:4096])
    if meta and (codec := _usable_codec(meta.group(1).decode("ascii", "replace"))):
        return codec
    try:
        body.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "cp1252"


_CONTROL = frozenset(chr(i) for i in range(32)) - {"\t", "\n", "\r", "\f"}


def looks_binary(text: str, sample: int = 4096) -> bool:
    """More than 5% control characters or replacement marks in the first `sample` chars."""
    head = text[:sample]
    bad = sum(1 for ch in head if ch in _CONTROL or ch == "\ufffd")
    return bool(head) and bad > 0.05 * len(head)


def _decode(body: bytes, content_type: str) -> tuple[str, str]:
    encoding = detect_encoding(body, content_type)
    if encoding == "utf-8" and body.startswith(codecs.BOM_UTF8):
        body = body[len(codecs.BOM_UTF8) :]
    return body.decode(encoding, errors="replace"), encoding


def _meta(root: lxml.html.HtmlElement, *names: str) -> str:
    for name in names:
        for el in root.iterfind(".//meta"):
            key = (el.get("name") or el.get("property") or "").lower()
            if key == name and el.get("content"):
                return norm_space(el.get("content", ""))
    return ""


def _title(root: lxml.html.HtmlElement) -> str:
    title = root.find(".//title")
    text = norm_space(title.text_content()) if title is not None else ""
    text = text or _meta(root, "og:title")
    if not text:
        h1 = root.find(".//h1")
        text = norm_space(h1.text_content()) if h1 is not None else ""
    return text.replace("¶", "").strip()


Chain = tuple[tuple[str, str, str, str], ...]


class _Ancestry:
    """(tag, role, class, id) of an element's ancestors, nearest first, memoized per parent:
    links share most of their ancestors."""

    def __init__(self) -> None:
        self._memo: dict[lxml.html.HtmlElement, Chain] = {}

    def of(self, el: lxml.html.HtmlElement) -> Chain:
        parent = el.getparent()
        if parent is None:
            return ()
        chain = self._memo.get(parent)
        if chain is None:
            tag = parent.tag.lower() if isinstance(parent.tag, str) else ""
            here = (
                tag,
                parent.get("role") or "",
                parent.get("class") or "",
                parent.get("id") or "",
            )
            chain = (here, *self.of(parent))
            self._memo[parent] = chain
        return chain


def _block_of(el: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    parent = el.getparent()
    while parent is not None:
        if isinstance(parent.tag, str) and parent.tag.lower() in BLOCK_TAGS:
            return parent
        parent = parent.getparent()
    return el


def _text_with_anchor_spans(
    block: lxml.html.HtmlElement,
) -> tuple[str, dict[lxml.html.HtmlElement, tuple[int, int]]]:
    """The block's text and, for each <a> inside it, where its text starts and ends."""
    parts: list[str] = []
    spans: dict[lxml.html.HtmlElement, tuple[int, int]] = {}
    pos = 0

    def walk(el: lxml.html.HtmlElement) -> None:
        nonlocal pos
        start = pos
        skip = not isinstance(el.tag, str) or el.tag.lower() in SKIP_TEXT_TAGS
        if el.text and not skip:
            parts.append(el.text)
            pos += len(el.text)
        if not skip:
            for child in el:
                walk(child)
                if child.tail:
                    parts.append(child.tail)
                    pos += len(child.tail)
        if isinstance(el.tag, str) and el.tag.lower() == "a":
            spans[el] = (start, pos)

    walk(block)
    return "".join(parts), spans


def _window(text: str, start: int, end: int, width: int = CONTEXT_CHARS) -> str:
    lo, hi = max(0, start - width), min(len(text), end + width)
    return norm_space(text[lo:hi])


def _hint(chain: Chain) -> str:
    """A relation hint from the nearest enclosing blocks' class/id tokens."""
    for _tag, _role, classes, ident in chain[:6]:
        tokens = class_tokens(classes) | class_tokens(ident)
        if "seealso" in tokens or {"see", "also"} <= tokens:
            return "see_also"
        if tokens & {"example", "examples", "tutorial"}:
            return "example"
    return ""


def _resolve(href: str, base: str) -> tuple[str, str] | str:
    """(canonical target, fragment) of an href, or why it is skipped."""
    try:
        scheme = urlsplit(href).scheme.lower()
        if scheme and scheme not in ("http", "https"):
            return f"scheme:{scheme}"[:40]
        absolute, fragment = urldefrag(urljoin(base, href))
        target = canonicalize_url(absolute)
    except ValueError:
        return "bad_url"
    if urlsplit(target).scheme not in ("http", "https"):
        return "bad_url"
    return target, fragment


def _links(
    root: lxml.html.HtmlElement, page_canonical: str, base: str, max_links: int
) -> tuple[list[RawLink], int, int, dict[str, int]]:
    links: list[RawLink] = []
    link_chars = 0
    skipped: dict[str, int] = {}
    self_links = 0
    blocks: dict[lxml.html.HtmlElement, tuple[str, dict[lxml.html.HtmlElement, tuple[int, int]]]]
    blocks = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    resolved: dict[str, tuple[str, str] | str] = {}
    ancestry = _Ancestry()
    for a in root.iter("a"):
        href = (a.get("href") or "").strip()
        if not href:
            skip("no_href")
            continue
        hit = resolved.get(href)
        if hit is None:
            hit = resolved[href] = _resolve(href, base)
        if isinstance(hit, str):
            skip(hit)
            continue
        target, fragment = hit
        if target == page_canonical:
            self_links += 1
            continue
        anchor = norm_space(a.text_content())
        chain = ancestry.of(a)
        furniture = ancestors_reason(chain)
        if not furniture:
            link_chars += len(anchor)
        if len(links) >= max_links:
            skip("over_limit")
            continue
        if not anchor:
            img = a.find(".//img")
            anchor = norm_space(a.get("title") or (img.get("alt") if img is not None else "") or "")
        block = _block_of(a)
        if block not in blocks:
            blocks[block] = _text_with_anchor_spans(block)
        block_text, spans = blocks[block]
        start, end = spans.get(a, (0, 0))
        links.append(
            RawLink(
                target_url=target,
                fragment=fragment,
                anchor=anchor,
                context=_window(block_text, start, end),
                ordinal=len(links),
                furniture=furniture,
                in_list=any(tag == "li" for tag, _, _, _ in chain[:3]),
                hint=_hint(chain),
            )
        )
    return links, link_chars, self_links, skipped


def _main_text(root: lxml.html.HtmlElement, url: str) -> tuple[str, str]:
    """trafilatura's main text; the whole visible text when trafilatura finds none."""
    import trafilatura

    try:
        doc = trafilatura.bare_extraction(
            root, url=url, fast=True, include_tables=True, with_metadata=False
        )
        text = getattr(doc, "text", None) or ""
    except Exception:  # trafilatura raises assorted errors on pathological trees
        text = ""
    if text.strip():
        return _PILCROW_EOL.sub("", text).strip(), "trafilatura"
    body = root.find(".//body")
    node = body if body is not None else root
    for el in node.iter("script", "style", "template"):
        el.text = ""
    return norm_space(node.text_content()), "fallback"


def is_text_page(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == TEXT_PAGE_TYPE


def _str_field(obj: dict[str, object], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def extract_text_page(body: bytes, url: str, max_links: int = 5000) -> PageExtract:
    """A TEXT_PAGE_TYPE page: its `content` is the text, as written (no HTML to extract)."""
    import json

    try:
        data = json.loads(body.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return PageExtract(
            url=url, extractor="none", error=f"unreadable text page: {str(exc)[:80]}"
        )
    links: list[RawLink] = []
    self_links = 0
    skipped: dict[str, int] = {}
    raw_links = data.get("links")
    for item in raw_links if isinstance(raw_links, list) else []:
        if len(links) >= max_links:
            skipped["over_max_links"] = skipped.get("over_max_links", 0) + 1
            continue
        target = item.get("url") if isinstance(item, dict) else None
        try:
            canonical = canonicalize_url(target) if isinstance(target, str) else ""
        except ValueError:
            canonical = ""
        if not canonical.startswith(("http://", "https://")):
            skipped["bad_url"] = skipped.get("bad_url", 0) + 1
            continue
        if canonical == url:
            self_links += 1
            continue
        links.append(
            RawLink(
                target_url=canonical,
                fragment=urlsplit(target).fragment if isinstance(target, str) else "",
                anchor=norm_space(_str_field(item, "anchor")),
                context=norm_space(_str_field(item, "context")),
                ordinal=len(links),
                furniture="",
                in_list=False,
                hint="",
            )
        )
    return PageExtract(
        url=url,
        title=norm_space(_str_field(data, "title")),
        text=_str_field(data, "content"),
        description=norm_space(_str_field(data, "description")),
        encoding="utf-8",
        extractor="text",
        links=tuple(links),
        link_chars=sum(len(lk.anchor) for lk in links),
        self_links=self_links,
        skipped_links=skipped,
    )


def extract_page(
    body: bytes,
    url: str,
    content_type: str = "",
    max_bytes: int = MAX_PAGE_BYTES,
    max_links: int = 5000,
) -> PageExtract:
    """Text, title, metadata and links of one page. `url` is its canonical URL."""
    truncated = len(body) > max_bytes
    if truncated:
        body = body[:max_bytes]
    if is_text_page(content_type):
        if truncated:  # half a JSON object is no page: said, not guessed at
            return PageExtract(
                url=url, extractor="none", truncated=True, error="text page over max_bytes"
            )
        return extract_text_page(body, url, max_links)
    text, encoding = _decode(body, content_type)
    if looks_binary(text):
        return PageExtract(
            url=url,
            encoding=encoding,
            extractor="none",
            truncated=truncated,
            error="binary content, not HTML text",
        )
    if not text.strip():
        return PageExtract(
            url=url, encoding=encoding, extractor="none", truncated=truncated, error="empty body"
        )
    try:
        parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
        root = lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        return PageExtract(
            url=url,
            encoding=encoding,
            extractor="none",
            truncated=truncated,
            error=f"unparsable HTML: {str(exc)[:80]}",
        )
    if not isinstance(root.tag, str):
        return PageExtract(
            url=url,
            encoding=encoding,
            extractor="none",
            truncated=truncated,
            error="unparsable HTML: no element root",
        )
    base_el = root.find(".//base[@href]")
    base = url
    if base_el is not None:
        try:
            base = urljoin(url, base_el.get("href", "").strip())
        except ValueError:
            base = url
    links, link_chars, self_links, skipped = _links(root, url, base, max_links)
    title = _title(root)
    description = _meta(root, "description", "og:description")
    html_el = root.getroottree().getroot()
    lang = (html_el.get("lang") or html_el.get("xml:lang") or "").strip().lower()
    main, extractor = _main_text(root, url)
    return PageExtract(
        url=url,
        title=title,
        text=main,
        description=description,
        lang=lang,
        encoding=encoding,
        extractor=extractor,
        truncated=truncated,
        links=tuple(links),
        link_chars=link_chars,
        self_links=self_links,
        skipped_links=skipped,
    )
