"""A deterministic synthetic web, written as WARC shards: the input of the scale benches and of
the tests of the corpus stages at size.

Why a generator and not a bigger crawl: the scale benches need 10K to 1M pages that anyone can
rebuild byte for byte, offline, in minutes, and that exercise what a real crawl does to the
stages (pages of very different lengths, sites shaped as trees under a home page, hubs that
many sites link to, navigation repeated on every page, a vocabulary where retrieval is not a
string match). Every page is a pure function of (seed, page number): shards can be written in
any order or in parallel and hold the same bytes, and a page of shard 900 costs no more than
one of shard 0. Only the standard library's `random.Random` is used (its output for a given
seed is fixed across Python versions); numpy's generators are not promised stable.

Text: a generated lexicon (pronounceable words from syllables), drawn Zipf-like (rank ** -1.07)
for the background, mixed with a per-topic vocabulary (each page has one topic shared by a few
hundred pages) and a few rare per-page key terms, so a query has to find the page among many
that share its topic words.
"""

from __future__ import annotations

import bisect
import hashlib
import html
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from drarena.errors import DrarenaError
from drarena.web.warc.warcfile import sha1_b32

SYNTH_VERSION = 1  # bump when the bytes for the same spec change
LEXICON_SIZE = 30_000
ZIPF_S = 1.07
TOPIC_WORDS = 40
PAGES_PER_TOPIC = 250
BASE_EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z: WARC-Date of page 0 (page i: + i seconds)
_ONSETS = (  # noqa: SIM905
    "b c d f g h j k l m n p r s t v w z br ch cl dr fl gr kr pl pr sh st th tr"
).split()
_VOWELS = "a e i o u ai ea io ou".split()  # noqa: SIM905
_CODAS = ["", "", "", "n", "r", "s", "l", "m", "nd", "st", "rk", "x"]


@dataclass(frozen=True, slots=True)
class SynthSpec:
    """What to generate: `pages` pages in sites of about `site_pages` pages each, written
    `shard_pages` to a WARC shard."""

    pages: int
    seed: int = 0
    shard_pages: int = 1000
    site_pages: int = 200
    name: str = "synth"

    def __post_init__(self) -> None:
        if self.pages < 1 or self.shard_pages < 1 or self.site_pages < 2:
            raise DrarenaError("synth: pages, shard_pages >= 1 and site_pages >= 2")

    @property
    def shards(self) -> int:
        return -(-self.pages // self.shard_pages)

    @property
    def sites(self) -> int:
        return -(-self.pages // self.site_pages)


@dataclass(frozen=True, slots=True)
class SynthPage:
    """One generated page: its URL, HTML and the WARC-Date it is captured at."""

    number: int
    url: str
    html: bytes
    date: str


class Lexicon:
    """The words of the synthetic web and the Zipf-like weights of the background text."""

    def __init__(self, seed: int, size: int = LEXICON_SIZE) -> None:
        rng = random.Random(f"drarena-synth-lexicon:{seed}")
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < size:
            syllables = 1 + min(3, int(rng.expovariate(0.9)))
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                for _ in range(syllables)
            )
            if word not in seen and len(word) > 2:
                seen.add(word)
                words.append(word)
        self.words = words
        total, cum = 0.0, []
        for rank in range(1, size + 1):
            total += rank**-ZIPF_S
            cum.append(total)
        self.cum = cum

    def topic_words(self, topic: int, seed: int) -> list[str]:
        """The topic's own words: mid-frequency words (ranks 300 to 10,000), so they carry
        meaning without being rare enough to identify a page alone."""
        rng = random.Random(f"drarena-synth-topic:{seed}:{topic}")
        return rng.sample(self.words[300:10_000], TOPIC_WORDS)


class SynthWeb:
    """The pages of one spec, each computed on demand from (seed, number)."""

    def __init__(self, spec: SynthSpec) -> None:
        self.spec = spec
        self.lexicon = Lexicon(spec.seed)
        self._topic_cum = [sum(r**-1.0 for r in range(1, k + 1)) for k in range(1, TOPIC_WORDS + 1)]

    @cached_property
    def topics(self) -> int:
        return max(1, self.spec.pages // PAGES_PER_TOPIC)

    def site_of(self, number: int) -> tuple[int, int]:
        """(site, position in the site): position 0 is the site's home page."""
        return divmod(number, self.spec.site_pages)

    def url(self, number: int) -> str:
        site, pos = self.site_of(number)
        host = f"https://site{site:05d}.example"
        return f"{host}/" if pos == 0 else f"{host}/p/{pos:05d}.html"

    def site_size(self, site: int) -> int:
        return min(self.spec.site_pages, self.spec.pages - site * self.spec.site_pages)

    def children(self, number: int) -> list[int]:
        """Pages below `number` in its site's tree: a home page has `fanout` sections, each
        node's children are the next level of a complete tree of that fan-out."""
        site, pos = self.site_of(number)
        size = self.site_size(site)
        fanout = _fanout(size)
        first = pos * fanout + 1
        return [site * self.spec.site_pages + c for c in range(first, min(first + fanout, size))]

    def parent(self, number: int) -> int | None:
        site, pos = self.site_of(number)
        if pos == 0:
            return None
        fanout = _fanout(self.site_size(site))
        return site * self.spec.site_pages + (pos - 1) // fanout

    def _words(self, rng: random.Random, topic: list[str], n: int) -> list[str]:
        lex = self.lexicon
        words = rng.choices(lex.words, cum_weights=lex.cum, k=n)
        for i in rng.sample(range(n), n // 6):  # one word in six from the topic's vocabulary
            words[i] = topic[bisect.bisect(self._topic_cum, rng.random() * self._topic_cum[-1])]
        return words

    def _sentence(self, rng: random.Random, topic: list[str], keys: list[str]) -> str:
        words = self._words(rng, topic, rng.randint(6, 22))
        if keys and rng.random() < 0.25:
            words[rng.randrange(len(words))] = rng.choice(keys)
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def page(self, number: int) -> SynthPage:
        """Page `number`'s bytes: a pure function of the spec's seed and the number."""
        spec = self.spec
        if not 0 <= number < spec.pages:
            raise IndexError(number)
        rng = random.Random(f"drarena-synth-page:{spec.seed}:{number}")
        site, pos = self.site_of(number)
        topic_id = (site * 7 + pos // 25) % self.topics  # a site covers a few topics, in runs
        topic = self.lexicon.topic_words(topic_id, spec.seed)
        keys = rng.sample(self.lexicon.words[12_000:], 3)  # rare words: this page's key terms
        title_words = [topic[rng.randrange(8)], *rng.sample(topic, 2), keys[0]]
        title = " ".join(w.capitalize() for w in title_words)
        esc = html.escape
        # Lengths vary from a stub to a long article (log-normal paragraph counts).
        paragraphs = 1 + min(60, int(rng.lognormvariate(1.3, 0.9)))
        if rng.random() < 0.02:
            paragraphs = 0  # a near-empty page, as crawls have
        body: list[str] = []
        for p in range(paragraphs):
            if p and p % 5 == 0:
                heading = " ".join(self._words(rng, topic, rng.randint(2, 5))).capitalize()
                body.append(f"<h2>{esc(heading)}</h2>")
            text = " ".join(self._sentence(rng, topic, keys) for _ in range(rng.randint(2, 7)))
            body.append(f"<p>{esc(text)}</p>")
        # Links: the tree below this page (a list), a link up, and cross-links to other sites'
        # home pages and sections, biased to low site numbers: those become hubs.
        children = self.children(number)
        items = []
        for child in children:
            anchor = " ".join(self._words(rng, topic, 3)).capitalize()
            items.append(f'<li><a href="{self.url(child)}">{esc(anchor)}</a></li>')
        if items:
            body.append("<h2>Contents</h2><ul>" + "".join(items) + "</ul>")
        cross = []
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            target_site = min(spec.sites - 1, int(spec.sites * rng.random() ** 3))
            target = target_site * spec.site_pages + (0 if rng.random() < 0.6 else 1)
            target = min(target, spec.pages - 1)
            if target != number:
                anchor = " ".join(self._words(rng, topic, 2))
                cross.append(f'<a href="{self.url(target)}">{esc(anchor)}</a>')
        if cross:
            body.append("<p>See also: " + ", ".join(cross) + ".</p>")
        parent = self.parent(number)
        up = f'<a href="{self.url(parent)}">Up</a>' if parent is not None else ""
        home = self.url(site * spec.site_pages)
        nav = "".join(
            f'<li><a href="{self.url(s)}">Section {i + 1}</a></li>'
            for i, s in enumerate(self.children(site * spec.site_pages)[:6])
        )
        doc = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(title)} | Site {site}</title>"
            f'<meta name="description" content="{esc(title)}"></head><body>'
            f'<header><a href="{home}">Site {site}</a><nav><ul>{nav}</ul></nav></header>'
            f"<main><article><h1>{esc(title)}</h1>{''.join(body)}{up}</article></main>"
            f"<footer><p>Site {site} &middot; generated page {number}</p></footer>"
            "</body></html>\n"
        )
        date = _warc_date(BASE_EPOCH + number)
        return SynthPage(number, self.url(number), doc.encode("utf-8"), date)

    def shard_pages(self, shard: int) -> range:
        start = shard * self.spec.shard_pages
        return range(start, min(start + self.spec.shard_pages, self.spec.pages))

    def shard_name(self, shard: int) -> str:
        return f"{self.spec.name}-{shard:05d}.warc.gz"

    def shard_bytes(self, shard: int) -> Iterator[bytes]:
        """The gzip members of one shard: a warcinfo record, then a response per page."""
        info = (
            f"software: drarena-synth/{SYNTH_VERSION}\r\nformat: WARC File Format 1.1\r\n"
            f"drarena-synth: pages={self.spec.pages} seed={self.spec.seed} "
            f"shard_pages={self.spec.shard_pages} site_pages={self.spec.site_pages}\r\n"
        ).encode()
        name = self.shard_name(shard)
        yield _member(
            _record(
                "warcinfo",
                "",
                _warc_date(BASE_EPOCH),
                _record_id(self.spec.seed, f"warcinfo:{name}"),
                "application/warc-fields",
                info,
                {"WARC-Filename": name},
            )
        )
        for number in self.shard_pages(shard):
            page = self.page(number)
            http = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                + f"Content-Length: {len(page.html)}\r\n\r\n".encode()
                + page.html
            )
            extra = {"WARC-Payload-Digest": sha1_b32(page.html)}
            yield _member(
                _record(
                    "response",
                    page.url,
                    page.date,
                    _record_id(self.spec.seed, page.url),
                    "application/http; msgtype=response",
                    http,
                    extra,
                )
            )

    def write_shard(self, folder: Path, shard: int) -> Path:
        """Write one shard (through a temporary name, so a killed run leaves no half file)."""
        path = folder / self.shard_name(shard)
        tmp = path.with_name(path.name + ".part")
        with tmp.open("wb") as fh:
            for member in self.shard_bytes(shard):
                fh.write(member)
        tmp.replace(path)
        return path


def write_web(spec: SynthSpec, folder: Path, shards: range | None = None) -> list[Path]:
    """Write the spec's WARC shards into `folder` (all, or the given shard numbers); a shard
    already there is kept (the bytes would be the same), so a killed run resumes."""
    folder.mkdir(parents=True, exist_ok=True)
    web = SynthWeb(spec)
    paths = []
    for shard in shards if shards is not None else range(spec.shards):
        path = folder / web.shard_name(shard)
        paths.append(path if path.is_file() else web.write_shard(folder, shard))
    return paths


def _fanout(size: int) -> int:
    """Children per node of a site of `size` pages: about sqrt(size) / 2, at least 2."""
    root: float = float(size) ** 0.5
    return max(2, round(root / 2))


def _warc_date(epoch: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _record_id(seed: int, key: str) -> str:
    digest = hashlib.sha256(f"drarena-synth:{seed}:{key}".encode()).hexdigest()
    return f"<urn:uuid:{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}>"


def _record(
    kind: str,
    target: str,
    date: str,
    record_id: str,
    content_type: str,
    block: bytes,
    extra: dict[str, str],
) -> bytes:
    headers = {
        "WARC-Type": kind,
        "WARC-Record-ID": record_id,
        "WARC-Date": date,
        **({"WARC-Target-URI": target} if target else {}),
        "Content-Type": content_type,
        "WARC-Block-Digest": sha1_b32(block),
        **extra,
        "Content-Length": str(len(block)),
    }
    head = "WARC/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode("utf-8") + block + b"\r\n\r\n"


def _member(data: bytes) -> bytes:
    """One gzip member (zlib's gzip header: mtime 0, so the bytes never depend on the clock)."""
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    return comp.compress(data) + comp.flush()
