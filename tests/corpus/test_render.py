"""The records of extraction rendered a chunk at a time (drarena.corpus.render): the same
bytes whether the chunks run here or on a pool of workers, and whatever the chunk size."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from drarena.corpus import extract, render
from drarena.corpus.extract import DOCS_FILE, LINKS_FILE, MANIFEST_FILE, extract_snapshot
from drarena.corpus.page import PageExtract, RawLink
from drarena.corpus.spill import _LINK_FIELDS, _PAGE_FIELDS
from drarena.web.warc.importer import ImportOptions, import_archives
from drarena.web.warc.synth import SynthSpec, write_web

OUTPUTS = (DOCS_FILE, LINKS_FILE, MANIFEST_FILE)


def _row(n: int, inside: str, duplicate_of: str | None = None) -> render.RenderRow:
    links = [
        RawLink(f"http://s.example/{k}", "", f"to {k}", "", k, "", False, "") for k in range(3)
    ]
    page = PageExtract(url=f"http://s.example/{n}", title=f"P{n}", text="x" * (150 + 50 * n))
    data = json.dumps({name: getattr(page, name) for name in _PAGE_FIELDS})
    raw = json.dumps([[getattr(link, f) for f in _LINK_FIELDS] for link in links])
    meta = json.dumps([f"<urn:{n}>", f"sha1:{n}", "2026-01-01T00:00:00Z", False, f"d{n}"])
    return (meta, data, raw, inside, duplicate_of)


def test_chunks_concatenate_to_the_whole() -> None:
    ctx = render.RenderContext.of(
        {"http://s.example/old": "http://s.example/1"},
        frozenset({("http://s.example/2", "to 2")}),
    )
    rows = [_row(0, "110"), _row(1, "101", duplicate_of="abc"), _row(2, "000"), _row(3, "111")]
    whole = render.render_pages(ctx, rows)
    parts = [render.render_pages(ctx, rows[:1]), render.render_pages(ctx, rows[1:])]
    assert "".join(p.docs for p in parts) == whole.docs
    assert "".join(p.links for p in parts) == whole.links
    assert [f for p in parts for f in p.flags] == whole.flags
    assert sum((p.tally for p in parts), Counter()) == whole.tally
    assert whole.tally["pages"] == 4 and whole.docs.count("\n") == 4
    # page n's link to itself is not written: pages 0-2 write 2 links each, page 3 writes 3
    assert whole.tally["links"] == 9 and whole.links.count("\n") == 9
    assert whole.tally["self_links"] == 3
    assert ("near_empty", "http://s.example/0") in whole.flags
    assert ("duplicates", {"url": "http://s.example/1", "duplicate_of": "abc"}) in whole.flags
    assert '"aliases": ["http://s.example/old"]' in whole.docs.splitlines()[1]
    # in_snapshot comes from the row's flags; navigation from the context's repeated pairs
    assert whole.tally["in_snapshot_links"] == 1 + 2 + 0 + 3
    assert whole.tally["nav_links"] == 3  # the links to /2 ("to 2") but page 2's own


def test_a_pool_renders_the_same_bytes_as_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enough pages for the pool to render (two chunks or more); chunks made small so that
    many chunks are in flight and put back in order."""
    monkeypatch.setattr(extract, "RENDER_PAGES", 40)
    spec = SynthSpec(pages=300, seed=5, shard_pages=100, site_pages=60)
    warcs = write_web(spec, tmp_path / "warc")
    outputs = {}
    real = extract._render_on_pool
    pooled: list[int] = []

    def counting(*args: Any) -> Any:
        pooled.append(1)
        return real(*args)

    monkeypatch.setattr(extract, "_render_on_pool", counting)
    for workers in (1, 2):
        snap = tmp_path / f"w{workers}"
        import_archives("synth", warcs, snap, ImportOptions(progress=False))
        extract_snapshot(snap, workers=workers, progress=False)
        assert len(pooled) == workers - 1  # the pool rendered, and only with 2 workers
        outputs[workers] = [(snap / name).read_bytes() for name in OUTPUTS]
    assert outputs[1] == outputs[2]
    assert outputs[1][0].count(b"\n") == 300
