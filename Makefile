# xmrgate: `make dev` starts a regtest playground, `make test` runs every test,
# `make unit` every test that needs no regtest network (55-60 s on the faster 2-core
# machines here, 95-115 s on the slower ones; it does use the local PostgreSQL, Chromium
# and zbarimg: see scripts/install-system-deps).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: dev test unit lint bench install system-deps clean

$(BIN)/xmrgate: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(BIN)/xmrgate

system-deps:
	scripts/install-system-deps

dev: install
	scripts/install-system-deps --monero-only
	$(BIN)/xmrgate dev

# Three processes on 2 cores, each with its own regtest network; a module's tests stay in
# one process (they share its gateway). A third process fills one's waits on the chain
# with another's work: the whole suite took 11 min 52 s in three against 16-19 min in two
# (docs/architecture.md); the processes the tests start (wallet-rpc, monerod, gateways)
# now keep both cores about 90 % busy, so what saves CPU saves time. The slowest
# modules go first, in tests/conftest.py's order (--no-loadscope-reorder: xdist otherwise
# orders modules by their number of tests). Bytecode is cached even where the environment
# says not to (PYTHONDONTWRITEBYTECODE=1 here): every gateway, migration child and
# playground the tests start compiled the sources again (about 0.3 CPU-s each, hundreds of
# them; the suite is bound by CPU).
# Its temporary files (the regtest chains, wallets, gateways' SQLite files, Chromium's
# profiles) go to tmpfs as make unit's do (TEST_TMPDIR below): two paired runs of three
# regtest modules, 160 and 153 s against 164 and 163 s, user CPU 0.92x.
test: install system-deps
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) PYTHONDONTWRITEBYTECODE= \
		$(BIN)/python -m pytest -n 3 --dist loadscope --no-loadscope-reorder --durations=15

# Three processes as well (the Chromium tests wait on the browser): 1,885 tests in 79 s,
# 97 s in two, 105 s in four. For speed (figures in
# docs/architecture.md): the slowest modules go first, in the order tests/conftest.py
# gives (--no-loadscope-reorder); bytecode is cached even where the environment says not
# to (each process compiled the sources and redid pytest's assertion rewriting: 3-5 s each);
# tests/integration/ is not collected (all of it is `integration`: the same tests run); the
# pytest plugins no unit test uses (schemathesis, anyio) are not loaded; the expensive
# property tests run a quarter of their examples (the `dev` profile,
# testsupport/properties.py: `make test` above runs them in full, as CI does). Its
# temporary files (the SQLite databases, Chromium's profiles and its shared memory) go to
# tmpfs when /dev/shm is there: on disk each SQLite commit was synced and each file's
# blocks journaled (0.95x the wall time here; UNIT_TMPDIR= keeps the usual folder).
# /dev/shm only with 2 GiB free: a container's is often 64 MB, too small for a devnet's
# files (about 160 MB a run of make test, kept for the last three runs as pytest does).
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && \
	[ "$$(df -Pk /dev/shm | awk 'NR == 2 {print $$4}')" -ge 2097152 ] 2>/dev/null && \
	echo /dev/shm)
UNIT_TMPDIR ?= $(TEST_TMPDIR)
unit: install
	$(if $(UNIT_TMPDIR),TMPDIR=$(UNIT_TMPDIR)) PYTHONDONTWRITEBYTECODE= \
		$(BIN)/python -m pytest -m "not integration" --ignore=tests/integration \
		-p no:schemathesis -p no:anyio --hypothesis-profile=dev -n 3 --dist loadscope \
		--no-loadscope-reorder

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install system-deps
	$(BIN)/python -m bench

clean:
	rm -rf .devnet data test-artifacts
