# Two entry points: `make demo` and `make test`. Both create .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m compileall -q engine lint >/dev/null
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	cd $$(mktemp -d) && $(CURDIR)/$(BIN)/ll-loop run fix-until-green-demo

test: $(VENV)/.installed-dev
	@test -x /usr/bin/chromium || echo "warning: no /usr/bin/chromium; the browser test will fail (apt-get install -y chromium)" >&2
	$(BIN)/ruff check engine lint tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
