"""The ``kafka_cluster`` fixture on a real cluster, in a pytest session of its own."""

from __future__ import annotations

import re

import docker
import pytest

from compose.cleanup import LABEL_CLUSTER
from tests.hygiene import left_behind

pytest_plugins = ["pytester"]


@pytest.mark.cluster
def test_kafka_cluster_fixture_is_shared_configurable_and_removed(
        pytester: pytest.Pytester, docker_client: docker.DockerClient) -> None:
    pytester.makepyfile("""
from confluent_kafka import Consumer, Producer

SEEN = []

def test_produce_and_consume(kafka_cluster):
    assert sorted(kafka_cluster.brokers) == [1, 2]
    kafka_cluster.create_topic("t", partitions=1, replication_factor=2)
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all"})
    p.produce("t", b"hello")
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["t"])
    msg = None
    for _ in range(60):
        msg = c.poll(1.0)
        if msg is not None and not msg.error():
            break
    c.close()
    assert msg is not None and msg.value() == b"hello"
    SEEN.append(kafka_cluster.name)

def test_same_cluster_in_the_session(kafka_cluster):
    assert SEEN == [kafka_cluster.name]
    print("CLUSTER", kafka_cluster.name)
""")
    res = pytester.runpytest("--chaos-brokers", "2", "-s")
    res.assert_outcomes(passed=2)
    found = re.search(r"CLUSTER (\w+)", res.stdout.str())
    assert found, res.stdout.str()
    name = found.group(1)
    # removed when the inner session ended, not only by the outer test's leak check
    assert not left_behind(docker_client, {LABEL_CLUSTER: name}, set())


@pytest.mark.cluster
@pytest.mark.parametrize("first", ["sigterm", "a-stopped-run"])
def test_sigterm_tears_the_session_cluster_down_and_later_signals_cannot_cut_it(
        first: str, pytester: pytest.Pytester, docker_client: docker.DockerClient) -> None:
    # SIGTERM (a CI runner's cancel, a container stop) ends the session as Ctrl-C does:
    # fixtures are torn down, so the session's cluster goes with it. An impatient user then
    # sends Ctrl-C and SIGTERM again and again while the cluster is being removed: only the
    # first signal raised; the storm after it (every 20 ms until the removal's last step)
    # is counted, so no later signal can leave the cluster behind. The first may also be
    # one a chaos run's own guard took (the run stopped, chaos_run raises KeyboardInterrupt).
    pytester.makeconftest("""
import signal, threading
import pytest
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
INTERRUPTED = threading.Event()

@pytest.hookimpl(trylast=True)
def pytest_keyboard_interrupt():  # pytest took the interrupt: its teardown comes next
    INTERRUPTED.set()
""")
    pytester.makepyfile(f"FIRST = {first!r}\n" + """
import os, signal, threading, time
from conftest import INTERRUPTED

def storm(cluster):
    INTERRUPTED.wait(120)  # the first interrupt has reached pytest: the rest are a storm
    sent, deadline = 0, time.monotonic() + 120
    while cluster.nodes and time.monotonic() < deadline:  # stop() clears them last
        os.kill(os.getpid(), signal.SIGINT if sent % 2 else signal.SIGTERM)
        sent += 1
        time.sleep(0.02)
    print(f"STORM {sent}", flush=True)  # one write: pytest writes beside it

def test_terminated(kafka_cluster):
    print("CLUSTER", kafka_cluster.name, flush=True)
    threading.Thread(target=storm, args=(kafka_cluster,)).start()
    if FIRST == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(120)
    raise KeyboardInterrupt  # what chaos_run raises when a signal stopped its run

def test_never_reached():
    pass
""")
    res = pytester.runpytest_subprocess("--chaos-brokers", "1", "-s", timeout=300)
    out, err = res.stdout.str(), res.stderr.str()
    found = re.search(r"CLUSTER (\w+)", out)
    assert found, out + err
    assert res.ret == pytest.ExitCode.INTERRUPTED, out + err
    assert ("KeyboardInterrupt: signal SIGTERM" in out) == (first == "sigterm"), out
    assert "test_never_reached" not in out
    assert not left_behind(docker_client, {LABEL_CLUSTER: found.group(1)}, set())
    storm = re.search(r"STORM (\d+)", out)
    assert storm and int(storm.group(1)) >= 4, out  # the storm overlapped the removal
    assert "stopping already (SIGINT), cleaning up first" in err, err
    assert "stopping already (SIGTERM), cleaning up first" in err, err


@pytest.mark.cluster
def test_a_signal_while_a_module_cluster_is_removed_lets_the_removal_finish(
        pytester: pytest.Pytester, docker_client: docker.DockerClient) -> None:
    # With module scope the first module's cluster is removed between two tests, while the
    # session's guard is armed (a test may still run): a Ctrl-C landing inside that removal
    # must not cut it short, and must still end the session once the cluster is gone.
    pytester.makeconftest("""
import os, signal
from compose.cluster import KafkaCluster
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
_stop = KafkaCluster.stop

def stop(self):
    if self.nodes:  # the signal arrives inside the removal, before its first step
        print("REMOVING", self.name, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
    _stop(self)

KafkaCluster.stop = stop
""")
    pytester.makepyfile(test_a="def test_one(kafka_cluster):\n    assert kafka_cluster.nodes\n",
                        test_b="def test_two(kafka_cluster):\n    pass\n")
    res = pytester.runpytest_subprocess("--chaos-brokers", "1", "--chaos-cluster-scope",
                                        "module", "-s", timeout=300)
    out, err = res.stdout.str(), res.stderr.str()
    found = re.search(r"REMOVING (\w+)", out)
    assert found, out + err
    assert res.ret == pytest.ExitCode.INTERRUPTED, out + err
    assert not left_behind(docker_client, {LABEL_CLUSTER: found.group(1)}, set())
    assert "stopping (SIGINT) once the cluster is removed" in err, err
    assert "test_b.py" not in out, out  # the session ended after the removal
