"""Words, sentences and term statistics of a snapshot's text (pure).

Why here: grounded checklists (each item carries a passage of its page) and the evidence
judge (grading an answer against that passage by code) both need the same small toolkit: the
page's sentences, content words with their weight in the snapshot, and the "hard" tokens
(numbers, versions, identifiers) that a correct answer must get exactly right. Everything is
integer arithmetic once built, so a grade is the same on every machine and in every replay.

Sentences. docs.jsonl keeps the HTML source's hard line breaks, so a line break is no
sentence boundary: lines are joined into blocks, a block ending at a line that ends with
sentence punctuation or at a short line without it (a heading such as "Introduction", a
caption), then blocks are split after `.`, `!` or `?` followed by a space and a capital,
digit or quote ("e.g. the" stays one sentence; "urllib.parse" has no space).

Weights. A term's weight is its inverse document frequency over the snapshot's pages,
ln((N + 1) / (df + 0.5)), scaled by 1000 and rounded to an integer (at least 1): terms on
every page ("python", "module" on the Python docs) count for almost nothing, a term of one
page for much. Integers make recall an exact fraction, compared with thresholds by cross
multiplication, never by float rounding that could differ between CPUs.
"""

from __future__ import annotations

import dataclasses
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

# English function words: they carry no fact, so they are no key terms, and an "answer"
# almost without them is a keyword list (the evidence judge's stuffing guard).
STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn doing
don down during each either else etc ever every few for from further had hadn has hasn have
haven having he her here hers herself him himself his how however i if in into is isn it its
itself just let me might more most much must mustn my myself neither no nor not now of off
often on once one only or other others our ours ourselves out over own per rather same shall
she should shouldn since so some such than that the their theirs them themselves then there
these they this those though through thus to too under until up upon us use used uses using
very via was wasn we were weren what when where whether which while who whom whose why will
with within without won would wouldn yet you your yours yourself yourselves
""".split()  # noqa: SIM905 (one word list, read as prose)
)

_WORD = re.compile(r"\w+")
_HARD = re.compile(
    r"\d+(?:[.,:/-]\d+)*"  # numbers, versions, dates, times (3.11, 2024-01-01, 4648)
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?"  # dotted names (os.path.join, re.sub())
    r"|[A-Za-z]*_\w*|\w*[a-z][A-Z]\w*"  # snake_case and camelCase names
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[A-Z0-9\"'“‘(\[])")
_TERMINAL = re.compile(r"[.!?:;][\"'”’)\]]*$")
SHORT_LINE_WORDS = 9  # a line of at most this many words, unfinished, may be a heading
_SUFFIXES = (
    "ations", "ation", "ments", "ment", "ness", "ing", "edly", "ed", "ies", "es", "als", "al",
    "ly", "s",
)  # fmt: skip


def fold(text: str) -> str:
    """NFKC, case-folded, typographic quotes and dashes made plain: the form every
    comparison of this module runs on."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return text.translate(_PLAIN)


_PLAIN = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": "-", "–": "-"})


def normalised(text: str) -> str:
    """Words only, single spaces, folded: what "this passage occurs in that page" compares,
    so line breaks, punctuation and case never hide an occurrence."""
    return " ".join(_WORD.findall(fold(text)))


def words(text: str) -> list[str]:
    """The folded words of `text`, in order."""
    return _WORD.findall(fold(text))


def stem(word: str) -> str:
    """A light suffix strip so "raises", "raised" and "raising" meet ("rais"), and
    "removal" and "removed" ("remov"); words of four letters or fewer, and words with
    digits or underscores, stay as they are."""
    if len(word) <= 4 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    return word.removesuffix("e") if len(word) > 4 else word


def content_stems(text: str) -> list[str]:
    """The stems of `text`'s content words (no function words, no one-letter words, no
    bare numbers: those are hard tokens, compared whole: "3.11", not "3" and "11"), in
    order, repeats kept."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1 and not w.isdigit()]


def hard_tokens(text: str) -> set[str]:
    """Numbers, versions, dates and identifiers in `text`, folded: what must be right to
    the character (a version off by one digit is another fact)."""
    found = set()
    for match in _HARD.finditer(unicodedata.normalize("NFKC", text)):
        token = match.group(0).removesuffix("()").strip("._-")
        if (token and any(c.isdigit() or c in "._" for c in token)) or _mixed(token):
            found.add(token.casefold())
    return found


def _mixed(token: str) -> bool:
    return any(c.islower() for c in token) and any(c.isupper() for c in token[1:])


def function_share(text: str) -> float:
    """The share of `text`'s alphabetic words that are function words (about 0.4-0.5 in
    English prose; a keyword list has almost none). Numbers and citation markers are left
    out: an answer full of versions and [1] markers is still prose."""
    ws = [w for w in words(text) if w.isalpha()]
    return sum(w in STOPWORDS for w in ws) / len(ws) if ws else 0.0


def _heading(line: str, following: str) -> bool:
    """A short line without end punctuation that does not run on (it ends neither with a
    comma nor with a function word) and is followed by a line starting with a capital or a
    digit (or by nothing): a heading or caption, a block of its own."""
    ws = line.split()
    last = _WORD.findall(fold(ws[-1])) if ws else []
    return (
        len(ws) <= SHORT_LINE_WORDS
        and not _TERMINAL.search(line)
        and not line.endswith(",")
        and not (last and last[-1] in STOPWORDS)
        and (not following or following[0].isupper() or following[0].isdigit())
    )


def _blocks(text: str) -> list[str]:
    """Lines joined into blocks: a line ending with sentence punctuation ends its block; a
    heading (`_heading`) where no sentence is open is a block of its own. Inside an open
    sentence a short line is its continuation (the source breaks lines at inline links)."""
    out: list[str] = []
    current: list[str] = []
    lines = [" ".join(raw.split()) for raw in text.splitlines()]
    for i, line in enumerate(lines):
        if not line:
            if current:
                out.append(" ".join(current))
                current = []
            continue
        following = next((x for x in lines[i + 1 : i + 2] if x), "")
        if not current and _heading(line, following):
            out.append(line)
            continue
        current.append(line)
        if _TERMINAL.search(line):
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def sentences(text: str, *, min_words: int = 3, max_chars: int = 600) -> list[str]:
    """The sentences of a page or an answer (see the module doc), whitespace-normalised,
    each of at least `min_words` words and cut to `max_chars`."""
    out = []
    for block in _blocks(text):
        for part in _SENTENCE_END.split(block):
            part = part.strip()
            if len(_WORD.findall(part)) >= min_words:
                out.append(part[:max_chars])
    return out


def shingles(text: str, n: int = 8) -> list[tuple[str, ...]]:
    """The runs of `n` consecutive folded words of `text` (none for shorter texts)."""
    ws = words(text)
    return [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]


@dataclasses.dataclass(frozen=True, slots=True)
class TermStats:
    """Document frequencies of content stems over a snapshot's pages (`docs` pages)."""

    docs: int
    df: Mapping[str, int]

    @classmethod
    def build(cls, texts: Iterable[str]) -> TermStats:
        counts: Counter[str] = Counter()
        n = 0
        for text in texts:
            n += 1
            counts.update(set(content_stems(text)))
        return cls(n, dict(counts))

    def weight(self, term: str) -> int:
        """The term's integer weight (see the module doc): 1000 x ln((N+1)/(df+0.5)), >= 1."""
        df = self.df.get(term, 0)
        return max(1, round(1000 * math.log((self.docs + 1) / (df + 0.5))))


UNIFORM = TermStats(0, {})  # no statistics: every term weighs the same (1)
