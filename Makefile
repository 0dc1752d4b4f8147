# Two entry points: `make demo` and `make test`. Both create .venv when missing.
# `make test` is the whole gate: ruff, mypy --strict, then pytest on every core with coverage
# (about 7.5 minutes of CPU in all, see README.md; the figure it prints is the line coverage of
# engine/ and lint/). pytest's "no tests collected" fails it, like any other non-zero exit.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# pytest-xdist workers: one per core
JOBS ?= auto

.PHONY: demo test lint typecheck bench clean

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
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(JOBS) --dist loadgroup --cov --cov-report=
	@echo "coverage: $$($(BIN)/python -m coverage report --format=total)% of the lines of engine/ and lint/"

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .coverage demo-run
