"""Search over the frozen web: passages, BM25 (Lucene via pyserini), dense (FAISS), hybrid
(RRF), served over HTTP, SearXNG JSON and MCP. The Retriever protocol lives in base.py."""
