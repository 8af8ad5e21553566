# Two commands on a fresh machine: `make demo` and `make test`.
# Each creates .venv and installs the pinned dependencies when missing.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test down venv lock clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[local,dev,infra]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/rag up
	$(BIN)/rag ingest examples/transcripts --project demo
	$(BIN)/rag search "what did we decide about the battery?" --project demo

test: $(STAMP)
	$(BIN)/python -m pytest

down:
	@if [ -x $(BIN)/rag ]; then $(BIN)/rag down; fi

# Re-pin after changing dependencies in pyproject.toml.
lock:
	$(BIN)/python -m pip freeze --exclude-editable > constraints.txt

clean: down
	rm -rf $(VENV) .local
