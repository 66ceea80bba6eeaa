# drarena: the user-facing commands. `make tournament OFFLINE=1` is the main job (once it
# exists); `make test` sets everything up and runs the tests.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
CORPUS ?= pydocs
SETUP_STAMP := $(VENV)/.drarena-setup

.PHONY: setup test snapshot lint

## setup: create .venv and install drarena and everything it needs (fast when nothing changed)
setup: $(SETUP_STAMP)

$(SETUP_STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh
	touch $@

## test: set up, then run the test suite
test: setup
	$(BIN)/python -m pytest

## lint: ruff and mypy over the package
lint: setup
	$(BIN)/ruff check drarena tests bench
	$(BIN)/mypy drarena

# --- frozen web (issue 2) -------------------------------------------------------------
## snapshot: freeze the corpus spec corpus/$(CORPUS).yaml into snapshots/$(CORPUS)/
snapshot: setup
	$(BIN)/drarena snapshot corpus/$(CORPUS).yaml
