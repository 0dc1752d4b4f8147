# Two entry points: `make demo` and `make test`. Both create .venv when missing.
# `make test` is the whole gate: ruff, mypy --strict, then pytest on every core with coverage
# (README.md's Development section says what it costs; the figure it prints is the line coverage
# of engine/ and lint/). pytest's "no tests collected" fails it, like any other non-zero exit.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# pytest-xdist workers: one per core and one more, which runs while another waits on a process,
# a timeout or the Ray cluster (on 2 cores: 3 workers, about 15 s less than 2)
JOBS ?= $(shell $(PY) -c 'import os; print((os.cpu_count() or 1) + 1)')

.PHONY: demo test test-deep lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,ray]'
	$(BIN)/python -m compileall -q engine lint >/dev/null
	touch $@ $(VENV)/.installed

# The demo runs in ./demo-run/ (created afresh, with its own .loops/ so that it is its own project
# root rather than this repository), so its run directory is there to look at after.
demo: $(VENV)/.installed
	rm -rf demo-run && mkdir -p demo-run/.loops
	cd demo-run && $(CURDIR)/$(BIN)/ll-loop run fix-until-green-demo
	@echo "the demo ran in ./demo-run/: its run is in demo-run/.loops/runs/ (ll-loop status --all there)"

test: $(VENV)/.installed-dev
	@test -x /usr/bin/chromium || echo "warning: no /usr/bin/chromium; the browser test will fail (apt-get install -y chromium)" >&2
	$(BIN)/ruff check engine lint tests bench
	$(BIN)/ruff format --check engine lint tests bench
	$(BIN)/mypy
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(JOBS) --dist loadgroup --cov --cov-report=
	@echo "coverage: $$($(BIN)/python -m coverage report --format=total)% of the lines of engine/ and lint/"

# The gate's tests with every property test at its full example count (tests/properties.py).
test-deep: $(VENV)/.installed-dev
	LL_DEEP_TESTS=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadgroup

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .coverage demo-run
