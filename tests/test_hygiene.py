"""The suite's hygiene plugin (tests/hygiene.py) in pytest sessions of its own: a test that
uses a cluster fixture is marked ``cluster``; a test not marked ``cluster`` that creates a
kafka-chaos container fails the session; a ``cluster`` test that leaves a network fails."""

from __future__ import annotations

import os
from pathlib import Path

import docker
import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
SUITE = """
import uuid
import docker
import pytest
from compose.cleanup import labels
from compose.image import DEFAULT_KAFKA_VERSION, resolve_image

@pytest.fixture
def cluster():
    raise AssertionError("a cluster fixture must never run under -m 'not cluster'")

def test_unmarked_creates_a_container():
    client = docker.from_env()
    c = client.containers.create(resolve_image(DEFAULT_KAFKA_VERSION, None), command="true",
                                 labels=labels("kc-hyg-" + uuid.uuid4().hex[:6], "helper"))
    c.remove(force=True)

def test_uses_the_cluster_fixture(cluster):
    pass

@pytest.mark.cluster
def test_marked_leaves_a_network():
    name = "kc-hyg-" + uuid.uuid4().hex[:6]
    docker.from_env().networks.create(name + "-net", labels=labels(name, "network"))
    print("NETWORK", name + "-net")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makeini("[pytest]\nmarkers =\n    cluster: starts a cluster\n")
    pytester.makepyfile(test_suite=SUITE)
    return pytester


@pytest.mark.cluster  # creates labelled Docker resources (no Kafka started)
def test_unmarked_container_fails_the_session_and_cluster_fixtures_are_marked(
        suite: pytest.Pytester) -> None:
    res = suite.runpytest_subprocess("-p", "tests.hygiene", "-m", "not cluster")
    # the fixture test was marked from its fixture and deselected; the other test passed,
    # yet the session fails because it started a kafka-chaos container unmarked
    res.assert_outcomes(passed=1, deselected=2)
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*test_unmarked_creates_a_container: started a kafka-chaos "
                              "container but is not marked cluster*"])


@pytest.mark.cluster
def test_a_leaked_network_fails_its_test_and_is_removed(
        suite: pytest.Pytester, docker_client: docker.DockerClient) -> None:
    res = suite.runpytest_subprocess("-p", "tests.hygiene", "-s", "-k", "network")
    res.assert_outcomes(passed=1, errors=1)
    res.stdout.fnmatch_lines(["*left behind by this test:*", "*network kc-hyg-*-net*"])
    name = res.stdout.str().split("NETWORK ", 1)[1].split()[0]
    assert not docker_client.networks.list(names=[name])


CLIENTS = """
import logging
import pytest
from confluent_kafka import KafkaException, Producer

KEPT = []

def _producer():
    # an address nothing listens on: the client's threads run, it never connects
    return Producer({"bootstrap.servers": "127.0.0.1:9", "log_level": 0})

@pytest.mark.cluster
def test_keeps_a_client_open():
    KEPT.append(_producer())

@pytest.mark.cluster
def test_drops_its_client():
    p = _producer()
    p.flush(0)

@pytest.mark.cluster
def test_logs_an_exception_raised_beside_a_client():
    # pytest keeps the call's log records (and the frames their exceptions hold, this
    # one's producer among them) until the test's teardown is over: not a client left open
    p = _producer()
    try:
        raise KafkaException("no broker")
    except KafkaException as e:
        logging.getLogger("t").warning("failed: %s", e)
    assert p is not None
"""


@pytest.mark.cluster  # the no_leaks fixture needs a Docker engine (no container is made)
def test_a_client_left_open_fails_the_session_naming_its_test(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makeini("[pytest]\nmarkers =\n    cluster: starts a cluster\n")
    pytester.makepyfile(test_clients=CLIENTS)
    res = pytester.runpytest_subprocess("-p", "tests.hygiene", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=3)
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    out = res.stdout.str()
    res.stdout.fnmatch_lines(["*test_keeps_a_client_open: left 1 librdkafka client(s) open*"
                              "Producer held by list*"])
    assert "test_drops_its_client:" not in out and "test_logs_an_exception" not in out, out
    # without the test that keeps one, the same session passes
    res = pytester.runpytest_subprocess("-p", "tests.hygiene", "-p", "no:cacheprovider",
                                        "-k", "not keeps")
    res.assert_outcomes(passed=2, deselected=1)
    assert res.ret == pytest.ExitCode.OK, res.stdout.str()


def test_nightly_tests_run_only_when_asked_for_or_named(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makeini("[pytest]\nmarkers =\n    nightly: long\n    cluster: starts a cluster\n")
    pytester.makepyfile(test_n="""
import pytest

@pytest.mark.nightly
def test_long():
    pass

def test_short():
    pass
""")
    pytester.runpytest("-p", "tests.hygiene").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "tests.hygiene", "--nightly").assert_outcomes(passed=2)
    pytester.runpytest("-p", "tests.hygiene", "test_n.py").assert_outcomes(passed=2)
