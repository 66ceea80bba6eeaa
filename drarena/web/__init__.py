"""The frozen web: crawl specs, the polite crawler, WARC snapshots, verify and replay.

Start with `drarena.web.snapshot.Snapshot.open(path)`; see README ("Frozen web").
"""
