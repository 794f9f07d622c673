# Two commands do all the set-up: `make run` (the bot; the console chat when no tokens are set)
# and `make test` (every test). Both create .venv and install what they need: `make run` only
# what running needs (.[demo]: torch, matplotlib...), with pip's progress shown; `make test`
# adds the dev extras (pytest, mypy, ruff, selenium...). Each set has its own stamp, so
# `make run` after `make test` installs nothing again, and `make test` after `make run` adds
# only the dev extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# torch is pinned to 2.13.0. On Linux, PyPI's wheel is a CUDA build (several GB); for a
# CPU-only machine run e.g. `make run TORCH_INDEX=https://download.pytorch.org/whl/cpu`.
TORCH_INDEX ?=
TORCH_FLAGS := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
# Extra flags for pip (e.g. PIP_FLAGS=--no-compile). Installing without bytecode was tried: the
# suite's many short-lived processes then compile on import, and `make test` took longer.
PIP_FLAGS ?=

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) $(TORCH_FLAGS) torch==2.13.0
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[demo]'
	touch $(RUN_STAMP)

$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[demo,dev]'
	touch $(TEST_STAMP)

run: $(RUN_STAMP)
	$(BIN)/studybot run

# The suite on every core, one test file per worker at a time (pytest-xdist); PYTEST_WORKERS=0
# runs it in this one process. Hypothesis draws fewer examples unless CI is set (tests/conftest.py).
PYTEST_WORKERS ?= auto
test: $(TEST_STAMP)
	$(BIN)/studybot questions lint
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

lint: $(TEST_STAMP)
	$(BIN)/ruff check bot demos tests bench
	$(BIN)/lint-imports --no-cache
	$(BIN)/studybot questions lint

bench: $(RUN_STAMP)
	$(BIN)/python bench/answers.py
	$(BIN)/python bench/demo.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis
