"""The frozen web, in three rooms (lowest first; see docs/architecture.md):

- `warc`: WARC I/O: WARC records and files, the snapshot writer and reader, its manifest and
  CDXJ index, imports of others' WARC and WACZ archives, WACZ export, the synthetic web.
- `crawling`: crawl specs, the polite fetch layer and the crawler, which write a snapshot
  through `warc`.
- `serving`: the replay server over a snapshot.

`crawling` and `serving` both sit on `warc` and never import each other; `commands.py` is the
command-line shell above the three. Start with `drarena.web.warc.snapshot.Snapshot.open(path)`;
see README ("Frozen web").
"""
