"""Citations: [n] markers resolved to URLs, and each URL checked against the frozen web.

Why: on a frozen web every honest citation names a page of the snapshot. A URL the snapshot
never captured was made up (or found elsewhere), so it is flagged as fabricated and counted;
the counts go into the Answer, the judge prompt and the report. Parsing is pure; the one
I/O seam is `UrlChecker`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from drarena.agents.base import Citation, CitationCheck

_MARKER = re.compile(r"\[(\d{1,3})\]")
# "[1]: <url>"; the optional colon takes the spaces after it, so no run of spaces can be split
# two ways (`\s*:?\s*` tried every split: 16,000 spaces took 5.6 s)
_REF_LINE = re.compile(r"^\s*\[(\d{1,3})\]\s*(?::\s*)?<?(\S+?)>?\s*$")
_URL = re.compile(r"https?://[^\s<>()\[\]\"']+")

UrlChecker = Callable[[str], bool]


def clean_url(text: str) -> str:
    """A cited URL as models write it: '[2] <http://x/>' or 'http://x/.' -> 'http://x/'."""
    text = text.strip()
    found = _URL.search(text)
    if found:
        return found.group(0).rstrip(".,;:")
    return re.sub(r"^\[\d+\]\s*:?\s*", "", text).strip("<> ")


def markers(report: str) -> list[int]:
    """Distinct [n] markers in order of first appearance (n >= 1)."""
    seen = dict.fromkeys(int(m.group(1)) for m in _MARKER.finditer(report))
    return [n for n in seen if n >= 1]


def shown_by_marker(report: str, shown: Sequence[str]) -> list[str]:
    """The citation list of a report whose [n] markers number the pages it was shown (page
    n is shown[n-1]): urls[n-1] is that page for every marker n the report uses, '' for the
    numbers it skips (which `resolve` drops), [] when it uses none. Why: a small model told
    to answer with a tool writes its report as plain text and, cut at its token limit,
    never reaches a reference list; the markers it writes inline are all that remain, and
    the agent knows which page it numbered n. Markers past the shown pages stay unresolved.
    """
    used = {n for n in markers(report) if n <= len(shown)}
    if not used:
        return []
    return [shown[n - 1] if n in used else "" for n in range(1, max(used) + 1)]


def split_references(text: str) -> tuple[str, list[str]]:
    """For plain-text answers: trailing '[n]: URL' lines become the citation list.

    Returns the report without those lines, and URLs indexed so urls[n-1] is marker [n]
    (gaps filled with ''), which `resolve` then treats as unresolved.
    """
    body: list[str] = []
    refs: dict[int, str] = {}
    for line in text.splitlines():
        match = _REF_LINE.match(line)
        if match and _URL.match(clean_url(match.group(2))):
            refs.setdefault(int(match.group(1)), clean_url(match.group(2)))
        else:
            body.append(line)
    if not refs:
        return text.strip(), []
    urls = [refs.get(n, "") for n in range(1, max(refs) + 1)]
    return "\n".join(body).strip(), urls


def resolve(report: str, urls: Sequence[str]) -> tuple[tuple[Citation, ...], int]:
    """Citations [1..len(urls)] from the answer's list, and the count of markers in the
    report that point past it (unresolved)."""
    used = set(markers(report))
    citations = tuple(
        Citation(n=i, url=clean_url(u), in_report=i in used)
        for i, u in enumerate(urls, 1)
        if clean_url(u)
    )
    known = {c.n for c in citations}
    return citations, len(used - known)


def check(
    citations: Iterable[Citation], unresolved: int, is_known: UrlChecker | None
) -> tuple[tuple[Citation, ...], CitationCheck]:
    """Marks each citation valid or fabricated; counts over distinct URLs.

    With no checker (live mode, or no snapshot at hand) nothing is judged: checked=False.
    """
    items = tuple(citations)
    distinct = list(dict.fromkeys(c.url for c in items))
    if is_known is None:
        return items, CitationCheck(cited=len(distinct), unresolved=unresolved)
    verdict = {url: bool(is_known(url)) for url in distinct}
    marked = tuple(dataclasses.replace(c, valid=verdict[c.url]) for c in items)
    fabricated = tuple(u for u in distinct if not verdict[u])
    return marked, CitationCheck(
        cited=len(distinct),
        valid=len(distinct) - len(fabricated),
        fabricated=len(fabricated),
        unresolved=unresolved,
        checked=True,
        fabricated_urls=fabricated,
    )


class SnapshotUrlChecker:
    """In frozen mode: a URL is real if the snapshot captured it (canonicalized, under
    either scheme, as the proxy serves it) with a non-error status; anything else is
    fabricated."""

    def __init__(self, snapshot_dir: Path) -> None:
        from drarena.web.warc.snapshot import Snapshot

        self._snapshot = Snapshot.open(snapshot_dir)
        self._memo: dict[str, bool] = {}

    def __call__(self, url: str) -> bool:
        if url not in self._memo:
            if not url.lower().startswith(("http://", "https://")):
                self._memo[url] = False
            else:
                response = self._snapshot.lookup_any_scheme(url)
                self._memo[url] = response is not None and response.status < 400
        return self._memo[url]

    def close(self) -> None:
        self._snapshot.close()
