"""Serving: the replay server over a snapshot (`serve`), read through `drarena.web.warc`.
Never imports `drarena.web.crawling`.
"""
