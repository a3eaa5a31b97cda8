# Quick start: `make demo` (set up + run the main job), `make test` (lint, types, tests).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch by default; a GPU machine sets its own, e.g.
# make setup TORCH_PIN="torch --index-url https://download.pytorch.org/whl/cu124"
# (ROCm: .../whl/rocm6.2), or TORCH_PIN= to keep whatever torch pip resolves.
TORCH_PIN ?= torch==2.13.0

# Every install after torch's is held to the torch installed (a dev tool's resolve once swapped
# the CPU build for a 5 GB CUDA one): the constraint names the version pip just put there.
CONSTRAINTS := $(VENV)/torch-constraint.txt
HOLD_TORCH = $(BIN)/python -c "import importlib.metadata as m; print('torch==' + m.version('torch'))" \
	> $(CONSTRAINTS) 2>/dev/null || : > $(CONSTRAINTS)

# Python caches what it compiles (__pycache__/) even where the shell says not to: without the
# cache every spotwise process compiles its ~800 modules again (seconds of CPU each).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup dev demo docs style test test-fast test-e2e test-postgres test-notebooks soak lint clean notebook notebooks

# What the demo needs (1.6 GiB with the CPU torch; Python compiles what it imports as it goes,
# where pip would compile every file for 0.4 GiB more); the dev tools come with `make test`.
$(BIN)/spotwise: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(if $(strip $(TORCH_PIN)),$(BIN)/pip install --quiet --no-compile $(TORCH_PIN))
	$(HOLD_TORCH)
	$(BIN)/pip install --quiet --no-compile -c $(CONSTRAINTS) -e .
	touch $@

$(VENV)/.dev: $(BIN)/spotwise
	$(HOLD_TORCH)
	$(BIN)/pip install --quiet -c $(CONSTRAINTS) -e ".[dev]"
	# Azurite, Microsoft's Blob storage emulator, for the azure launcher's tests
	npm install --prefix $(VENV)/node --no-audit --no-fund --silent azurite@3.37.0
	touch $@

setup: $(BIN)/spotwise

dev: $(VENV)/.dev

demo: setup
	$(BIN)/spotwise demo

# The user's guide (docs/, mkdocs.yml) built as a site into site/: --strict fails on a broken
# link or anchor, and on a page left out of the nav (CI runs it after `make test`).
docs: dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

style: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

lint: style
	$(BIN)/mypy

# pytest with mypy beside it: mypy takes a minute of one core in a clean clone, and the tests
# leave a core idle much of the time (subprocesses starting, notice leads); its report follows
# the tests', and either failing fails the target.
PYTEST_BESIDE_MYPY = { $(BIN)/mypy > $(VENV)/mypy.log 2>&1 & types=$$!; \
	$(BIN)/pytest -q $(1); tests=$$?; wait $$types; typed=$$?; \
	cat $(VENV)/mypy.log; [ $$tests = 0 ] && [ $$typed = 0 ]; }

# Three workers on two cores: many tests wait (subprocess start-up, notice leads, gloo
# timeouts), and a third worker fills those waits (three beat two and four, measured side by
# side). The end-to-end jobs are `make test-e2e`.
test: style
	$(call PYTEST_BESIDE_MYPY,-n 3 --dist loadgroup)

# The fast tier waits little: two workers, each collecting once (1:52 against 2:02 with three).
# Types are `make test`'s and `make lint`'s: a clean clone's first mypy takes a core for a
# minute, which put this tier over its two minutes.
test-fast: style
	$(BIN)/pytest -q -n 2 --dist loadgroup -m "not slow"

# Jobs end to end: the demo, the sweep demo and the resume bench, torchrun jobs that lose a
# node, a DCP resume, the guard's resume after SIGTERM, a sweep worker killed mid-trial, and a job on each cloud's local servers (launch, a notice, a checkpoint in
# the cloud's store, a bit-exact resume on a new instance, logs back: AWS on moto, GCP and Azure
# on their emulators and fakes); minutes of boots and trainings, so apart from `make test` (CI
# runs it next).
test-e2e: dev
	$(BIN)/pytest -q -n 3 --dist loadgroup --e2e

# The tests of the jobs, ledger and forecasts again, with those tables in PostgreSQL (a local
# throwaway server, a fresh database per test; CI runs it after `make test`).
POSTGRES_TESTS := tests/pricing/test_operational.py tests/executor/ledger/test_journal.py \
	tests/executor/supervise/test_supervisor.py tests/executor/supervise/test_supervisor_stops.py \
	tests/executor/ledger/test_prices.py tests/executor/clouds/aws/test_launcher.py \
	tests/pricing/forecast/test_run.py tests/dashboard/test_app.py tests/executor/test_demo.py \
	tests/executor/sweeps/test_sweep.py::test_a_pruned_trial_stops_at_once_and_the_ledger_says_pruned \
	tests/executor/sweeps/test_sweep.py::test_a_queue_shard_killed_twice_completes_once_and_writes_once
test-postgres: dev
	$(BIN)/pytest -q -n 3 --dist loadgroup --operational-store postgresql $(POSTGRES_TESTS)
	$(BIN)/pytest -q --e2e --operational-store postgresql tests/executor/test_demo.py

# The notebooks run top to bottom (a minute of documentation; CI runs it after `make test`).
test-notebooks: dev
	$(BIN)/pytest -q --notebooks tests/test_notebooks.py

# Minutes of many processes on one store, then the same with PostgreSQL (CI runs it last).
soak: dev
	$(BIN)/pytest -q --soak -rA tests/soak
	$(BIN)/pytest -q --soak -rA --operational-store postgresql tests/soak

# Open the forecasting notebook in JupyterLab (installed into the venv the first time).
notebook: dev
	$(BIN)/python -c "import jupyterlab" 2>/dev/null || $(BIN)/pip install --quiet jupyterlab
	$(BIN)/jupyter lab notebooks/forecasting.ipynb

# Run the notebooks top to bottom and store them with their outputs.
notebooks: dev
	MPLBACKEND= $(BIN)/python notebooks/execute.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
