# The two commands a newcomer needs: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What serving needs (make run), and on top of it the development toolchain (make test).
RUN_STAMP := $(VENV)/.runtime-installed
STAMP := $(VENV)/.installed
NODE_STAMP := tests/interop/node_modules/.installed
# make run PORT=8600 ARGS="--approval manual"
PORT ?= 8545
ARGS ?=

.PHONY: run test lock lint typecheck pytest bench soak clean

# Every install reads a lock file (exact versions with their hashes, from `make lock`), so that a
# developer's .venv and CI's are the same; scopecast itself goes in on top without its dependencies.
$(RUN_STAMP): requirements/run.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements/run.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(STAMP): $(RUN_STAMP) requirements/dev.lock examples/example-ledger/pyproject.toml
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements/dev.lock
	$(BIN)/python -m pip install --quiet --no-deps -e examples/example-ledger
	touch $@

# Rewrites the lock files from pyproject.toml's ranges, keeping every pin that still fits them (a
# package added to pyproject.toml gets its newest version); `make lock LOCK_ARGS=--upgrade` moves
# every package to its newest allowed version. dev.lock agrees with run.lock, bench.lock with both.
LOCK_ARGS ?=
LOCK := UV_CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/uv pip compile pyproject.toml --universal \
	--python-version 3.11 --generate-hashes --quiet $(LOCK_ARGS)
lock: $(STAMP)
	$(LOCK) -o requirements/run.lock
	$(LOCK) --extra dev -c requirements/run.lock -o requirements/dev.lock
	$(LOCK) --extra dev --extra bench -c requirements/dev.lock -o requirements/bench.lock

$(NODE_STAMP): tests/interop/package.json tests/interop/package-lock.json
	cd tests/interop && npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: $(RUN_STAMP)
	$(BIN)/scopecast serve --host 127.0.0.1 --port $(PORT) --block-time 2 $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check broker adapters schemas

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck pytest

# Benchmarks against peers (docs/benchmarks/): BENCH_QUICK=1 for the quick mode (about 6 minutes).
bench: $(STAMP)
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
	@[ $(VENV)/.bench-installed -nt requirements/bench.lock ] || { $(BIN)/python -m pip install --quiet --require-hashes -r requirements/bench.lock && touch $(VENV)/.bench-installed; }
	@[ bench/peers/node/node_modules/.installed -nt bench/peers/node/package-lock.json ] || { cd bench/peers/node && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; }
	$(BIN)/python -m bench

# Reliability in figures (docs/reliability/): faults, a soak, overload and hostile input against real
# processes. Not part of `make test`: a full run takes under 45 minutes, SOAK_QUICK=1 about 4 (busy: 7).
soak: $(STAMP)
	@command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
	@[ $(VENV)/.bench-installed -nt requirements/bench.lock ] || { $(BIN)/python -m pip install --quiet --require-hashes -r requirements/bench.lock && touch $(VENV)/.bench-installed; }
	$(BIN)/python -m soak $(SOAK_ARGS)

clean:
	rm -rf $(VENV) tests/interop/node_modules bench/peers/node/node_modules
