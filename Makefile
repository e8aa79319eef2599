# kafka-chaos: `make demo` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The Kafka versions whose images are built before tests (default first: compose.image).
KAFKA_VERSIONS ?= 4.3.1 3.9.1
PYTEST_ARGS ?=
NIGHTLY_ARGS ?=

.PHONY: setup host venv image demo test lint bench nightly clean-docker

setup: host venv image

host:
	bash compose/setup-host.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

image: host venv
	for v in $(KAFKA_VERSIONS); do $(BIN)/python -m compose.image build --kafka-version $$v || exit 1; done

demo: setup
	$(BIN)/kafka-chaos run --scenario safe-config-chaos

# Two workers: one runs every cluster test in turn (one cluster at a time), the other the
# tests that start none (tests/hygiene.py groups them). XDIST= runs everything in one process.
XDIST ?= -n 2 --dist loadgroup
test: setup
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy contract chaos workloads checkers reports compose bench kafka_chaos_testing

bench: setup
	$(BIN)/python -m bench

# The long repetitions the suite leaves out (tests marked nightly: examples/, older Kafka
# versions of the scenarios), then the nightly chaos matrix.
nightly: setup
	$(BIN)/python -m pytest --nightly -m nightly $(PYTEST_ARGS)
	$(BIN)/python -m chaos.nightly $(NIGHTLY_ARGS)

# Removes every container, network and volume kafka-chaos labelled (never anything else).
clean-docker: venv
	$(BIN)/python -m compose.cleanup
