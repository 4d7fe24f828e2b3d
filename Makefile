# xmrgate: `make dev` starts a regtest playground, `make test` runs every test,
# `make unit` every test that needs no regtest network (it does use the local PostgreSQL,
# Chromium and zbarimg: see scripts/install-system-deps). docs/architecture.md, "Tests".
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# Every dependency's version, transitive ones included, as the tests last passed with.
LOCK := requirements.lock

.PHONY: dev test unit lint bench install lock system-deps clean

# The virtualenv with xmrgate installed editable, its test extras included, every
# dependency at the version of requirements.lock; redone when either file changes.
$(BIN)/xmrgate: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c $(LOCK) -e '.[test]'
	touch $@

# Resolve pyproject.toml's ranges again to the newest releases and rewrite
# requirements.lock (uv's resolver, for every platform); then run make test.
lock: install
	$(BIN)/pip install -q uv
	$(BIN)/uv pip compile pyproject.toml --extra test --universal --python-version 3.11 \
		--upgrade --no-header -o $(LOCK)

# Make the virtualenv (above) if it is missing or stale.
install: $(BIN)/xmrgate

# Install from Debian what the tests and benchmarks need and is missing: monerod and
# wallet-rpc, Chromium's headless shell and driver, zbarimg, node, a C compiler, ...
system-deps:
	scripts/install-system-deps

# Start the regtest playground (`xmrgate dev`), installing monerod and wallet-rpc first.
dev: install
	scripts/install-system-deps --monero-only
	$(BIN)/xmrgate dev

# Every test, tests/integration/ (regtest) included, printing the 15 slowest.
# Three processes, each with its own regtest network (a module's tests stay in one, with
# its gateway): a third fills one's waits on the chain with another's work. The slowest
# modules first, in tests/conftest.py's order (--no-loadscope-reorder). Bytecode is cached
# even where the environment says not to: the gateways and migration children the tests
# start would compile the sources again. Temporary files go to TEST_TMPDIR (below).
test: install system-deps
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) PYTHONDONTWRITEBYTECODE= \
		$(BIN)/python -m pytest -n 3 --dist loadscope --no-loadscope-reorder --durations=15

# Temporary files of the test runs on tmpfs: /dev/shm when it has 2 GiB free (a
# container's is often 64 MB, too small for a devnet's files); empty otherwise, and then
# the usual folder is used. TEST_TMPDIR= or UNIT_TMPDIR= keeps the usual folder.
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && \
	[ "$$(df -Pk /dev/shm | awk 'NR == 2 {print $$4}')" -ge 2097152 ] 2>/dev/null && \
	echo /dev/shm)
UNIT_TMPDIR ?= $(TEST_TMPDIR)
# The tests that need no regtest network: tests/unit and tests/db (tests/integration/ is
# not collected). Three processes, the slowest modules first, as make test; bytecode
# cached; the pytest plugins no unit test uses not loaded; the expensive property tests
# run a quarter of their examples (the `dev` profile: testsupport/properties.py).
unit: install
	$(if $(UNIT_TMPDIR),TMPDIR=$(UNIT_TMPDIR)) PYTHONDONTWRITEBYTECODE= \
		$(BIN)/python -m pytest -m "not integration" --ignore=tests/integration \
		-p no:schemathesis -p no:anyio --hypothesis-profile=dev -n 3 --dist loadscope \
		--no-loadscope-reorder

# ruff's lint and format check, then mypy --strict.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The default benchmarks (python -m bench: tick, read, create, callbacks); docs/benchmarks.md.
bench: install system-deps
	$(BIN)/python -m bench

# Remove the playground's network (.devnet), the default SQLite database's folder (data)
# and the tests' screenshots (test-artifacts).
clean:
	rm -rf .devnet data test-artifacts
