# Two commands: `make run` (the default job) and `make test` (the whole suite).
# Each creates the virtual environment .venv and installs the project when missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PEERS_PY := .venv-peers/bin/python

.PHONY: run test test-fast peers-venv lint install clean-venv

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) run.py $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# the fast loop: every test but those marked slow (over about a second of CPU time each; see
# pytest's markers in pyproject.toml); CI runs `make test`, the slow tests included
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" $(PYTEST_ARGS)

# the peers' own environment .venv-peers (diffprivlib, OpenDP), which the real-peer tests need;
# created, or repaired, only when it cannot import both peers
peers-venv: $(STAMP)
	$(PEERS_PY) -c 'import diffprivlib, opendp' 2>/dev/null || \
	  $(PY) -c 'from experiments.peers import create_peer_venv; create_peer_venv()'

# style: ruff's linter and formatter, configured in pyproject.toml (CI runs this too)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean-venv:
	rm -rf $(VENV)
