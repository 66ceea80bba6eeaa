# drarena: the user-facing commands. `make tournament OFFLINE=1` is the main job (once it
# exists); `make test` sets everything up and runs the tests.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
CORPUS ?= pydocs
SETUP_STAMP := $(VENV)/.drarena-setup

.PHONY: setup test snapshot lint setup-browser

## setup: create .venv and install drarena and everything it needs (fast when nothing changed)
setup: $(SETUP_STAMP)

$(SETUP_STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh
	touch $@

## test: set up, then run the test suite
test: setup setup-models setup-browser
	$(BIN)/python -m pytest

## setup-browser: Debian's chromium for the report's headless browser test (apt, once)
setup-browser:
	bash scripts/setup_browser.sh

## lint: ruff and mypy over the package
lint: setup
	$(BIN)/ruff check drarena tests bench
	$(BIN)/mypy drarena

# --- frozen web (issue 2) -------------------------------------------------------------
## snapshot: freeze the corpus spec corpus/$(CORPUS).yaml into snapshots/$(CORPUS)/
## (a spec with local_site serves that folder on loopback during the crawl; the Debian package
##  named there is installed with apt when missing; an up-to-date snapshot is left alone)
snapshot: setup
	$(BIN)/drarena snapshot corpus/$(CORPUS).yaml --install-local-site

# --- models (issue 5) -----------------------------------------------------------------
.PHONY: setup-models serve bench-models
## setup-models: .venv-vllm (vLLM CPU build) + SmolLM2-135M-Instruct as an HF folder (once, ~3 min)
setup-models:
	bash scripts/setup_vllm.sh

## serve: start a vLLM server on 127.0.0.1 and print its api_base; MODEL=<hf id or path> on a GPU box
serve: setup $(if $(MODEL),,setup-models)
	$(BIN)/drarena serve $(if $(MODEL),--model $(MODEL))

## bench-models: throughput at concurrency 1/4/8, client overhead, replay speed (CPU server)
bench-models: setup setup-models
	$(BIN)/python bench/bench_models.py

# --- tournament (issues 7, 8) -----------------------------------------------------------
.PHONY: tournament
OFFLINE ?= 1
CONFIG ?= configs/demo.yaml
## tournament: the main job. Builds what the snapshot lacks (extract, trees, indexes), starts
## the model server (CPU default; MODEL=<hf id or path> serves that model with vLLM), runs the
## Swiss tournament of $(CONFIG), prints the leaderboard and the path of report.html. Re-running
## resumes an interrupted run.
tournament: setup $(if $(MODEL),,setup-models)
	$(BIN)/drarena tournament $(CONFIG) $(if $(MODEL),--model $(MODEL)) $(if $(filter 0,$(OFFLINE)),--live)

# --- corpus (issue 3) -------------------------------------------------------------------
.PHONY: extract trees bench-extract
TREES_COUNT ?= 10
TREES_SEED ?= 1
## extract: main text and links of snapshots/$(CORPUS)/ into docs.jsonl + links.jsonl (no-op when up to date)
extract: setup
	$(BIN)/drarena extract snapshots/$(CORPUS)

## trees: $(TREES_COUNT) Information Trees (seed $(TREES_SEED)) into snapshots/$(CORPUS)/trees/, extracting first if needed
trees: setup
	$(BIN)/drarena trees snapshots/$(CORPUS) --count $(TREES_COUNT) --seed $(TREES_SEED)

## bench-extract: extraction pages/s (1 process, all cores) vs trafilatura and Resiliparse; 30 trees
bench-extract: setup
	$(BIN)/python bench/bench_extract.py

# --- search (issue 4) -------------------------------------------------------------------
.PHONY: index search serve-search diagnose-retrievers bench-search
RETRIEVER ?= bm25
Q ?= how do I parse command line arguments
PORT ?= 8766
## index: passages, BM25 (Lucene via pyserini) and dense (MiniLM + FAISS) indexes of
## snapshots/$(CORPUS)/ into index/$(CORPUS)/, extracting first if needed; up-to-date indexes are
## left alone. DENSE_MODEL=<sentence-transformers folder> for another embedder.
index: setup
	$(BIN)/drarena index snapshots/$(CORPUS) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## search: Q="..." RETRIEVER=bm25|dense|hybrid: a ranked table of pages from the frozen web
search: index
	$(BIN)/drarena search snapshots/$(CORPUS) "$(Q)" --retriever $(RETRIEVER) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## serve-search: HTTP (native + SearXNG JSON) and MCP (/mcp) search over the frozen web on 127.0.0.1:$(PORT)
serve-search: index
	$(BIN)/drarena serve-search snapshots/$(CORPUS) --retriever $(RETRIEVER) --port $(PORT) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## diagnose-retrievers: recall@10 and MRR of bm25, dense and hybrid on the tree target pages, TREC runs
diagnose-retrievers: index
	$(BIN)/drarena diagnose-retrievers snapshots/$(CORPUS) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## bench-search: index build, query latency per retriever, encoding speed, Lucene vs bm25s
bench-search: setup
	$(BIN)/python bench/bench_search.py
