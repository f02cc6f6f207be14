# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench guard golden clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

DEMO_ARGS ?=

demo: $(STAMP)
	$(BIN)/arena demo $(DEMO_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/engine.py --json
	$(BIN)/python bench/referee_overhead.py --json
	$(BIN)/python bench/http_caller.py --json
	$(BIN)/python bench/bot_ladder.py --json

# Engine speed guard (not part of `make test`: about a minute of callgrind runs): this tree's
# instruction count for a fixed engine workload against REF's; fails above 1.10x.
REF ?= main
guard: $(STAMP)
	$(BIN)/python bench/engine_guard.py --against $(REF)

# Do the deals and pinned games still match tests/referee/game/data/golden_deals.json?
# (Regenerate only for an intended deal change: read scripts/golden_deals.py first.)
golden: $(STAMP)
	$(BIN)/python scripts/golden_deals.py --check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
