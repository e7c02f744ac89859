# The two commands of the README (make quickstart, make test). Both create .venv with
# Python 3.11 (or $(PYTHON)) and install into it.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: quickstart test docs install install-core clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install-core: $(BIN)/python
	$(BIN)/pip install --quiet -e .

# The package and the extras the tests use, in one pip call (one resolution, one editable
# build).
install: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test,beam,ctranslate2,bench,subword-nmt]"

# Vocabulary, a few minutes of training, export to saved_models/quickstart, translation
# through the SavedModel and BLEU (examples/quickstart/quickstart.py).
quickstart: install-core
	$(BIN)/python examples/quickstart/quickstart.py

test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder tests

docs: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[docs]"
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) site build *.egg-info
