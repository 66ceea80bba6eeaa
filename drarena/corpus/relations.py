"""Relation types of tree edges, from anchor text, surrounding context and URL structure.

Why rules and a small fixed set: DR-Arena's reference typed edges with keyword lists written
for one coffee site, which mislabelled every other site. These rules use only signals every
site has. The first rule that matches wins, in this order:

- see_also:  the link sits in a "see also" block, or its anchor/context says see also,
             related, compare, cf., similar to, alternatively.
- example:   the link sits in an example/tutorial block, its anchor says example, tutorial,
             how-to, recipe, guide or walkthrough, or the target's URL path is under such a
             folder while the source's is not.
- sequel:    the anchor reads next, previous, continue, part N, chapter N, step N.
- broader:   the target is the index page of the source's folder or of a folder above it.
- subtopic:  the source is a folder index (or `x.html` next to a folder `x/`) and the target
             lies inside that folder, or the link is a list item whose anchor reads like a
             page title (a table of contents).
- reference: the anchor names an entity: it looks like code (dots, parentheses,
             underscores), or the link points at a fragment inside the target (a definition).
- mentions:  anything else: the source mentions the target in running text.

An LLM labeller can later replace `classify_relation` through the model layer.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import urlsplit

_SEE_ALSO = re.compile(
    r"\bsee also\b|\brelated\b|\bcompare\b|\bcf\.|\bsimilar to\b|"
    r"\balternative(ly)?\b",
    re.I,
)
_EXAMPLE = re.compile(
    r"\bexamples?\b|\btutorials?\b|\bhow[- ]?tos?\b|\brecipes?\b|"
    r"\bguides?\b|\bwalkthrough\b",
    re.I,
)
_EXAMPLE_PATH = re.compile(
    r"(^|/)(tutorials?|howtos?|how-to|examples?|recipes?|guides?)(/|$)", re.I
)
_SEQUEL = re.compile(
    r"^\s*(next|previous|prev|continue[sd]?|part \d+|chapter \d+|step \d+)\b", re.I
)
_CODE_LIKE = re.compile(r"\w[.:]\w|\w\(|\(\)|_|^<|^[A-Z][a-z]+[A-Z]")
_INDEX_NAMES = frozenset({"", "index.html", "index.htm", "index.php", "index", "default.htm"})


def _split(url: str) -> tuple[str, str, str]:
    """(host, folder with trailing '/', file name) of a URL."""
    parts = urlsplit(url)
    folder, name = posixpath.split(parts.path or "/")
    folder = folder if folder.endswith("/") else folder + "/"
    return parts.netloc, folder, name


def url_relation(source_url: str, target_url: str) -> str:
    """'broader', 'subtopic' or '' from the URL hierarchy alone: broader when the target is
    the index page of a folder above the source (or of its own folder); subtopic when the
    source is a folder index (or `x.html` with a folder `x/`) and the target is inside it."""
    s_host, s_dir, s_name = _split(source_url)
    t_host, t_dir, t_name = _split(target_url)
    if s_host != t_host or (s_dir, s_name) == (t_dir, t_name):
        return ""
    s_index, t_index = s_name in _INDEX_NAMES, t_name in _INDEX_NAMES
    if t_index and s_dir.startswith(t_dir) and not (s_index and s_dir == t_dir):
        return "broader"
    if s_index and t_dir.startswith(s_dir):
        return "subtopic"
    stem = posixpath.splitext(s_name)[0]
    if stem and t_dir.startswith(f"{s_dir}{stem}/"):
        return "subtopic"
    return ""


def classify_relation(
    source_url: str,
    target_url: str,
    anchor: str,
    context: str = "",
    *,
    in_list: bool = False,
    hint: str = "",
    fragment: str = "",
) -> str:
    """The relation of one content link (see the module docstring for the rules)."""
    if hint == "see_also" or _SEE_ALSO.search(anchor) or _SEE_ALSO.search(context):
        return "see_also"
    t_path = urlsplit(target_url).path
    s_path = urlsplit(source_url).path
    if (
        hint == "example"
        or _EXAMPLE.search(anchor)
        or (_EXAMPLE_PATH.search(t_path) and not _EXAMPLE_PATH.search(s_path))
    ):
        return "example"
    if _SEQUEL.search(anchor):
        return "sequel"
    by_url = url_relation(source_url, target_url)
    if by_url:
        return by_url
    code_like = bool(_CODE_LIKE.search(anchor.strip()))
    if in_list and not code_like and len(anchor.split()) >= 2:
        return "subtopic"
    if code_like or fragment:
        return "reference"
    return "mentions"
