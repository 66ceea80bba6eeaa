"""Crawling: crawl specs (`spec`), the polite fetch layer (`fetch`) and the crawler (`crawl`),
which write a snapshot through `drarena.web.warc`. Never imports `drarena.web.serving`.
"""
