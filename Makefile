# Quick start: `make demo` (set up + run the main job), `make test` (lint, types, tests).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0

.PHONY: setup demo test test-fast soak lint clean

$(BIN)/spotwise: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_PIN)"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

setup: $(BIN)/spotwise

demo: setup
	$(BIN)/spotwise demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Three workers on two cores: many tests wait (subprocess start-up, notice leads, gloo
# timeouts), and a third worker fills those waits (full tier 6:42 against 7:34 with two).
test: lint
	$(BIN)/pytest -q -n 3 --dist loadgroup

test-fast: lint
	$(BIN)/pytest -q -n 3 --dist loadgroup -m "not slow"

# Minutes of many processes on one store (CI runs it after `make test`).
soak: setup
	$(BIN)/pytest -q --soak -rA tests/soak

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
