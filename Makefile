# Two commands do all the set-up: `make run` (the bot; the console chat when no tokens are set)
# and `make test` (every test). Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch is pinned to 2.13.0. On Linux, PyPI's wheel is a CUDA build (several GB); for a
# CPU-only machine run e.g. `make test TORCH_INDEX=https://download.pytorch.org/whl/cpu`.
TORCH_INDEX ?=
TORCH_FLAGS := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_FLAGS) torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[demo,dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/studybot run

test: $(STAMP)
	$(BIN)/studybot questions lint
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check bot demos tests bench
	$(BIN)/studybot questions lint

bench: $(STAMP)
	$(BIN)/python bench/answers.py
	$(BIN)/python bench/demo.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis
