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

# The package and the extras the tests and the docs build use, in one pip call (one
# resolution, one editable build).
install: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test,docs,beam,ctranslate2,bench,subword-nmt]"

# Vocabulary, a few minutes of training, export to saved_models/quickstart, translation
# through the SavedModel and BLEU (examples/quickstart/quickstart.py).
quickstart: install-core
	$(BIN)/python examples/quickstart/quickstart.py

# tcmalloc where the system has it (Debian's libtcmalloc-minimal4); nothing otherwise.
# Tracing and compiling allocate and free small objects all the time: two heavy test files
# took 181 s of test time with it against 202 s with glibc's malloc (2026-12-05).
TCMALLOC := $(firstword $(wildcard /usr/lib/*/libtcmalloc_minimal.so.4))

# The docs build first, strictly (a docstring griffe cannot read fails it), into build/.
test: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site
	$(if $(TCMALLOC),LD_PRELOAD=$(TCMALLOC)) $(BIN)/python -m pytest -q -n 2 --dist loadfile \
		--no-loadscope-reorder tests

docs: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) site build *.egg-info
