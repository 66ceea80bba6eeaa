"""The synthetic web generator (drarena.web.warc.synth): same bytes every run, read by the real
import and extract stages, with the shape the scale benches rely on."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from drarena.corpus.extract import extract_snapshot, load_docs, load_links
from drarena.errors import DrarenaError
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.synth import SynthSpec, SynthWeb, write_web

SPEC = SynthSpec(pages=300, seed=7, shard_pages=100, site_pages=60)


def _digests(paths: list[Path]) -> list[tuple[str, str]]:
    return [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths]


def test_same_bytes_every_run_and_in_any_shard_order(tmp_path: Path) -> None:
    first = write_web(SPEC, tmp_path / "a")
    second = write_web(SPEC, tmp_path / "b", shards=range(SPEC.shards - 1, -1, -1))
    assert [p.name for p in first] == [
        "synth-00000.warc.gz",
        "synth-00001.warc.gz",
        "synth-00002.warc.gz",
    ]
    assert _digests(first) == sorted(_digests(second))
    other = write_web(SynthSpec(pages=300, seed=8, shard_pages=100, site_pages=60), tmp_path / "c")
    assert _digests(other) != _digests(first)


def test_pages_vary_and_share_topic_words() -> None:
    web = SynthWeb(SPEC)
    sizes = [len(web.page(i).html) for i in range(SPEC.pages)]
    assert max(sizes) > 3 * min(sizes)  # stubs and long articles
    # Zipf-like background: the commonest word is far commoner than the 100th.
    words = Counter(w for i in range(50) for w in web.page(i).html.decode().split())
    counts = [c for _, c in words.most_common(200)]
    assert counts[0] > 5 * counts[100]
    with pytest.raises(IndexError):
        web.page(SPEC.pages)
    with pytest.raises(DrarenaError):
        SynthSpec(pages=0)


def test_imported_and_extracted_as_a_crawl(tmp_path: Path) -> None:
    paths = write_web(SPEC, tmp_path / "warc")
    snap = tmp_path / "snap"
    result = import_archives("synth", paths, snap, ImportOptions(progress=False))
    assert result.manifest.counts.pages == SPEC.pages
    extracted = extract_snapshot(snap, workers=1, progress=False)
    docs = load_docs(snap)
    assert extracted.docs == len(docs) == SPEC.pages
    assert sum(d.is_content for d in docs) > 0.9 * SPEC.pages
    assert any(d.near_empty for d in docs) or min(d.chars for d in docs) < 1000
    links = load_links(snap)
    content = [lk for lk in links if lk.in_snapshot and not lk.is_nav]
    # trees: every non-home page is linked from its parent; hubs: home pages of low sites
    # draw more in-links than any other page
    targets = Counter(lk.target_url for lk in content)
    web = SynthWeb(SPEC)
    assert all(web.url(n) in targets for n in range(SPEC.pages) if n % SPEC.site_pages)
    inlinks = Counter(lk.target_url for lk in links if lk.in_snapshot)
    assert inlinks.most_common(1)[0][0] == web.url(0)
