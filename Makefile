# Two commands do all set-up on a fresh machine: `make demo` and `make check`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Test processes for the test runs (pytest-xdist).  Most tests wait on bots, servers and
# subprocesses rather than compute, so a two-core machine runs four at once comfortably.
# Tests are handed out one or two at a time (`--maxschedchunk 1`): with xdist's default
# chunks the long drills of one module (tests/arena/test_threadpool_worker.py) sat queued
# behind each other on one process and ran alone at the end for minutes.
TEST_WORKERS ?= 4

# Byte-code for the test run, in the venv (never beside the sources): each of the test
# processes imports every test module (pytest rewrites their asserts) and the tests start
# many `python -m arena ...` children.  With PYTHONDONTWRITEBYTECODE set (as in some
# sandboxes and CI images) all of them compiled everything again: ~18 s of CPU to collect the
# suite per process instead of ~5 s, and ~0.15 s per child (children inherit the setting).
TEST_PYCACHE := $(CURDIR)/$(VENV)/pycache

.PHONY: demo test drills check durations lint bench guard golden clean constraints starters

# Installs exactly the versions in constraints.txt (CI and deploy/Dockerfile do the same).
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade -c constraints.txt pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

DEMO_ARGS ?=

demo: $(STAMP)
	$(BIN)/arena demo $(DEMO_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# The test tiers (docs/contributing.md, "Test tiers"): `make test` is the edit loop, the fast
# tier (every test not marked `drill`, property tests with the `fast` Hypothesis profile);
# `make drills` the real multi-process drills; `make check` lint and ONE run of everything with
# the full `ci` profile: what CI runs (.ci/run).  PYTEST_ARGS: more pytest options.
PYTEST_ARGS ?= --durations=20
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(TEST_PYCACHE) \
	  $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist load --maxschedchunk 1

test: lint
	$(PYTEST) -m "not drill" --hypothesis-profile=fast $(PYTEST_ARGS)

drills: $(STAMP)
	$(PYTEST) -m drill --hypothesis-profile=ci $(PYTEST_ARGS)

check: lint
	$(PYTEST) --hypothesis-profile=ci $(PYTEST_ARGS)

# Refresh tests/durations.json (the longest-first order and the ten-second rule of
# tests/test_tiers.py): each tier once with --durations=0 (the suite once, in two runs), each
# test's figure from its own tier's run; failed tests keep their old entry.  Commit the file.
durations: $(STAMP)
	$(PYTEST) -m "not drill" --hypothesis-profile=fast --durations=0 | tee $(VENV)/durations-fast.log
	$(PYTEST) -m drill --hypothesis-profile=ci --durations=0 | tee $(VENV)/durations-drills.log
	$(BIN)/python -m tests.scheduling $(VENV)/durations-fast.log $(VENV)/durations-drills.log

# The starter bots (starters/): each one built and tested with its own toolchain and its own
# test command.  A missing toolchain fails here (CI installs them in .ci/run); `make check` runs
# tests/starters, which builds and plays them for real (its drills: `make drills`).
starters:
	@command -v node >/dev/null && node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' \
	  || { echo "make starters: Node.js 20 or later is needed (starters/javascript)"; exit 1; }
	@command -v npm >/dev/null || { echo "make starters: npm is needed (starters/javascript)"; exit 1; }
	@command -v go >/dev/null || { echo "make starters: go is needed: apt-get install golang-go"; exit 1; }
	@command -v javac >/dev/null || { echo "make starters: a JDK 17 is needed: apt-get install openjdk-17-jdk-headless"; exit 1; }
	cd starters/javascript && npm ci --no-audit --no-fund && npm test
	cd starters/go && go vet ./... && go test ./...
	$(MAKE) -C starters/java test

bench: $(STAMP)
	$(BIN)/python bench/engine.py --json
	$(BIN)/python bench/referee_overhead.py --json
	$(BIN)/python bench/http_caller.py --json
	$(BIN)/python bench/bot_ladder.py --json

# Engine speed guard (not part of `make check`: about a minute of callgrind runs): this tree's
# instruction count for a fixed engine workload against REF's; fails above 1.10x.
REF ?= main
guard: $(STAMP)
	$(BIN)/python bench/engine_guard.py --against $(REF)

# Do the deals and pinned games still match tests/referee/game/data/golden_deals.json?
# (Regenerate only for an intended deal change: read scripts/golden_deals.py first.)
golden: $(STAMP)
	$(BIN)/python scripts/golden_deals.py --check

# Re-resolve pyproject.toml's bounds in a scratch venv and pin what was installed: run after
# changing a dependency (or to take new releases), then `make check`, then commit both files.
LOCK_VENV := .venv-constraints
constraints:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/pip install --quiet -e '.[dev]'
	{ echo "# Exact versions for CI, \`make\` and deploy/Dockerfile (pip install -c constraints.txt)."; \
	  echo "# Generated by \`make constraints\` with $$($(LOCK_VENV)/bin/python -V) from pyproject.toml;"; \
	  echo "# do not edit by hand."; \
	  $(LOCK_VENV)/bin/pip freeze --all --exclude-editable | grep -v '^#' \
	    | grep -vE '^(setuptools|wheel)=='; } > constraints.txt
	rm -rf $(LOCK_VENV)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
	rm -rf starters/javascript/node_modules starters/javascript/dist starters/java/build starters/java/target
