"""WARC I/O: the lowest room of the frozen web. WARC records (`warcfile`), a snapshot's files
written (`writer`) and read (`snapshot`), its manifest and CDXJ index, imports of WARC and WACZ
archives (`importer`, `importfile`, `scope`), WACZ export (`wacz`), URL forms (`urls`) and the
synthetic web written as WARC shards (`synth`). It imports no other room of `drarena.web`.
"""
