# kafka-chaos: `make demo` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The Kafka versions whose images are built before tests (default first: compose.image).
KAFKA_VERSIONS ?= 4.3.1 3.9.1
PYTEST_ARGS ?=
NIGHTLY_ARGS ?=

.PHONY: setup host venv image demo test unit lint docs bench nightly clean-docker

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

# The cluster tests in LANES pytest sessions at once, sharing the test files as they go
# (tests/lanes.py: whole files, claimed in collection order), and beside them the tests that
# start none: the rest (mostly waits) in one session, the Spark tests in SPARK_LANES sessions
# sharing their files the same way (one by default: on 2 cores two JVMs ended no sooner, 29
# min each against one's 31 at a similar load, and starved the cluster tests' clients of
# CPU; a bigger machine may want 2). The lanes' brokers
# mostly wait, the Spark tests compute: those sessions run at niceness 10, so
# their Spark never starves a cluster whose faults are being timed (on a cgroup-v1 host all
# of Docker's containers weigh as much as one host thread, and controllers stalled 2-8 s,
# fencing healthy brokers, while that session ran). The first lane's output comes first,
# then the other lanes' and the other sessions' (kept in .cluster-lane-N.log,
# .spark-lane-N.log and .not-cluster-tests.log); the exit status is the first
# failure's; Ctrl-C stops them all (the trap sends SIGTERM, as background jobs ignore
# SIGINT).
# SPLIT= runs everything in one session.
SPLIT ?= 1
LANES ?= 2
SPARK_LANES ?= 1
test: setup
ifeq ($(SPLIT),1)
	@claims=$$(mktemp -d /tmp/kafka-chaos-lanes.XXXXXX); others=; \
	sparks=$$(mktemp -d /tmp/kafka-chaos-lanes.XXXXXX); \
	for n in $$(seq 2 $(LANES)); do \
	  $(BIN)/python -m pytest -m cluster --lane-claims=$$claims $(PYTEST_ARGS) \
	    > .cluster-lane-$$n.log 2>&1 & others="$$others $$!"; \
	done; \
	for n in $$(seq 1 $(SPARK_LANES)); do \
	  nice -n 10 $(BIN)/python -m pytest -m "not cluster and spark" --lane-claims=$$sparks \
	    $(PYTEST_ARGS) > .spark-lane-$$n.log 2>&1 & others="$$others $$!"; \
	done; \
	nice -n 10 $(BIN)/python -m pytest -m "not cluster and not spark" $(PYTEST_ARGS) \
	  > .not-cluster-tests.log 2>&1 & others="$$others $$!"; \
	trap 'kill -TERM $$others 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest -m cluster --lane-claims=$$claims $(PYTEST_ARGS); status=$$?; \
	n=1; for pid in $$others; do \
	  wait $$pid; s=$$?; [ $$status -ne 0 ] || status=$$s; n=$$((n + 1)); \
	  if [ $$n -le $(LANES) ]; then \
	    echo "== cluster lane $$n (run beside the first), exit $$s"; cat .cluster-lane-$$n.log; \
	  elif [ $$n -le $$(($(LANES) + $(SPARK_LANES))) ]; then \
	    k=$$((n - $(LANES))); \
	    echo "== Spark lane $$k: tests that start no cluster and use Spark (run beside), exit $$s"; \
	    cat .spark-lane-$$k.log; \
	  else \
	    echo "== the other tests that start no cluster (run beside), exit $$s"; \
	    cat .not-cluster-tests.log; \
	  fi; \
	done; \
	rm -rf $$claims $$sparks; exit $$status
else
	$(BIN)/python -m pytest $(PYTEST_ARGS)
endif

# Every test that starts no cluster (-m "not cluster"), as two sessions side by side: the
# tests on the shared SparkSession (marked spark; they keep the 2 cores busy) and the rest
# (mostly waits: network namespaces, subprocesses). Output and exit status as in make test.
unit: setup
	@log=.not-spark-tests.log; \
	$(BIN)/python -m pytest -m "not cluster and not spark" $(PYTEST_ARGS) > $$log 2>&1 & other=$$!; \
	trap 'kill -TERM $$other 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest -m "not cluster and spark" $(PYTEST_ARGS); first=$$?; \
	wait $$other; second=$$?; \
	echo "== the tests that start no cluster and use no Spark session (run beside), exit $$second"; \
	cat $$log; \
	if [ $$first -ne 0 ]; then exit $$first; fi; exit $$second

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy contract nemesis scenarios runner chaos workloads checkers reports compose bench tests/support

# The user guide (docs/, mkdocs.yml) into site/; strict: a broken link or a page missing from
# the nav fails, as it does in make test (tests/test_docs_build.py).
docs: venv
	$(BIN)/python -m mkdocs build --strict

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
