"""De-contextualization leaks: a question that names its target page (pure).

Why measured here and not only checked at generation: the generation check compares the
question with whole titles and URLs, so a question naming just the module (`zipfile`, from
"zipfile — Work with ZIP archives — Python 3.11.2 documentation") passed it. This measure
looks for the target's entity names (the title's first segment when it is one word or a
dotted name, the URL's file name without its extension) and any whole segment of its title
other than the site's own (the segment every page of the site shares, e.g. "Python 3.11.2
documentation"), on normalized words; names shorter than MIN_LEN characters are skipped, as
they collide with ordinary words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from drarena.corpus.records import TreePage
from drarena.examiner.taskcheck import entity_names

MIN_LEN = 4
SEGMENT_SPLIT = re.compile(r"\s+[—–|-]\s+")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.casefold())).strip()


def title_segments(title: str) -> list[str]:
    return [s.strip() for s in SEGMENT_SPLIT.split(title) if s.strip()]


def target_names(page: TreePage, site_segments: frozenset[str] = frozenset()) -> list[str]:
    """The names that give `page` away: entity names and title segments."""
    segments = [s for s in title_segments(page.title) if _norm(s) not in site_segments]
    entities = [n for n in entity_names([page.title], [page.url]) if _norm(n) not in site_segments]
    return list(dict.fromkeys([*segments, *entities]))


def site_segments(titles: Sequence[str]) -> frozenset[str]:
    """Title segments shared by more than half of `titles`: the site's name."""
    counts: dict[str, int] = {}
    for title in titles:
        for seg in {_norm(s) for s in title_segments(title)}:
            counts[seg] = counts.get(seg, 0) + 1
    return frozenset(s for s, n in counts.items() if n * 2 > len(titles) and len(titles) > 1)


def question_leaks(
    question: str, targets: Sequence[TreePage], site: frozenset[str] = frozenset()
) -> list[str]:
    """The target names the question contains, as whole normalized words."""
    q = f" {_norm(question)} "
    found = []
    for page in targets:
        for name in target_names(page, site):
            n = _norm(name)
            if len(n) >= MIN_LEN and f" {n} " in q:
                found.append(name)
    return sorted(set(found))
