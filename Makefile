# The two commands of the README. Both create .venv with Python 3.11 (or $(PYTHON)) and install into it.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test docs install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test,docs,beam]"

test: install
	$(BIN)/python -m pytest -q -n 2 tests

docs: install
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) site build *.egg-info
