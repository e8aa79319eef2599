"""The CLI contract: bad input is one line and exit 2 before anything starts; `cluster up`
serves clients until Ctrl-C and then leaves nothing behind."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient

from tests.run.cli import CLI, start


@pytest.mark.parametrize("args,reason", [
    (["run", "--acks", "2"], "--acks"),
    # the producer rules (contract.settings.producer_settings), in the one rule's words
    (["run", "--acks", "1", "--idempotence"], "enable.idempotence=true needs acks=all"),
    (["run", "--acks", "0", "--transactions"], "transactions need acks=all, got acks=0"),
    (["run", "--transactions", "--no-idempotence"], "transactions need enable.idempotence=true"),
    (["run", "--producer-config", "acks=2"], "acks must be 0, 1 or all (-1 is all), got '2'"),
    (["run", "--acks", "0", "--producer-config", "enable.idempotence=true"],
     "enable.idempotence=true needs acks=all, got acks=0"),
    (["run", "--brokers", "12"], "--brokers must be between 1 and 9, got 12"),
    (["run", "--controllers", "2"], "--controllers must be 0 (combined), 1, 3 or 5, got 2"),
    (["run", "--faults", "kill,meteor"], "unknown kind 'meteor'"),
    (["run", "--min-insync", "4"], "--min-insync"),
    (["run", "--replication-factor", "5", "--brokers", "3"], "--replication-factor"),
    (["run", "--duration", "0"], "--duration"),
    (["run", "--kafka-version", "2.8.0"], "--kafka-version"),
    (["run", "--scenario", "no-such-scenario"], "unknown scenario"),
    (["run", "--targets", "leader:x"], "--targets"),
    (["run", "--broker-config", "novalue"], "key=value"),
    (["run", "--accept-known", "librdkafka#4953,nope#1"], "unknown known-bug id 'nope#1'"),
    (["run", "--spark-master", "sc://spark:15002"], "remote Spark Connect server is not supported"),
    (["run", "--spark-master", "spark:/x"], "--spark-master must be local[N], spark://"),
    (["run", "--nodes", "nodes.toml"], "--nodes needs --bootstrap-servers"),
    (["run", "--bootstrap-servers", "broker1"], "--bootstrap-servers must be host:port"),
    (["run", "--bootstrap-servers", "b1:9092"], "faults on an existing cluster need --nodes"),
    (["run", "--bootstrap-servers", "b1:9092", "--nodes", "/nonexistent/nodes.toml"],
     "--nodes: cannot read /nonexistent/nodes.toml"),
    (["run", "--bootstrap-servers", "b1:9092", "--faults", "cpu-throttle"],
     "--faults cpu-throttle needs a cluster kafka-chaos starts"),
    (["run", "--bootstrap-servers", "b1:9092", "--kafka-version", "4.1.1"],
     "drop --kafka-version and --image"),
    # a script's fault kinds and broker properties, against a cluster we did not start
    (["run", "--bootstrap-servers", "b1:9092", "--nodes", "NODES", "--scenario",
      "stale-txn-requests"], "scenario stale-txn-requests starts hold, which "
     "needs a cluster kafka-chaos starts (on --nodes: kill, stop, pause, partition, slow, "
     "power-loss, poll-stall, consumer-down)"),
    (["run", "--bootstrap-servers", "b1:9092", "--nodes", "NODES", "--scenario",
      "all-replicas-power-loss"], "broker properties are set when kafka-chaos starts the "
     "cluster; with --bootstrap-servers the cluster's own apply (drop "
     "log.flush.offset.checkpoint.interval.ms)"),
    (["run", "--liveness", "2"], "--liveness must be 0 (off) or 5..3600 s, got 2.0"),
    (["run", "--group-protocol", "consumer", "--kafka-version", "3.9.1"],
     "--group-protocol consumer needs Kafka 4.0 or later"),
    (["run", "--group-protocol", "eager"], "--group-protocol"),
    # librdkafka refuses a KIP-848 consumer with a classic-only property: the consumer died
    # at its start and the run ended unknown minutes later
    (["run", "--group-protocol", "consumer", "--consumers", "1", "--consumer-mode",
      "subscribe", "--consumer-config", "session.timeout.ms=30000"],
     "consumer property session.timeout.ms belongs to the classic protocol"),
    # a scenario's own classic settings are left out with KIP-848 groups; the caller's stay
    (["run", "--scenario", "coordinator-moved-on-assign", "--group-protocol", "consumer",
      "--consumer-config", "heartbeat.interval.ms=3000"],
     "consumer property heartbeat.interval.ms belongs to the classic protocol"),
    (["run", "--send-offsets"], "--send-offsets needs --transactions"),
    (["run", "--idle-producer", "-5"], "--idle-producer must be 0 (none) or up to 3600 s"),
    (["run", "--idle-producer", "30", "--producers", "1"],
     "--idle-producer needs --producers 2 or more"),
    (["run", "--idle-producer", "30", "--client", "java:4.1.1"],
     "--idle-producer runs with confluent-kafka only"),
    (["run", "--transactions", "--send-offsets", "--client", "java:4.1.1"],
     "--send-offsets runs with confluent-kafka on a cluster kafka-chaos starts only"),
    (["run", "--scenario", "max-poll-stall", "--client", "java:4.1.1"],
     "scenario max-poll-stall: --client java:4.1.1: the poll-stall fault is driven with "
     "confluent-kafka only"),
    (["check", "/nonexistent/run"], "not a run directory"),
    (["report", "/nonexistent/run"], "neither a run directory"),
    (["cluster", "up", "--brokers", "0"], "--brokers must be between 1 and 9, got 0"),
])
def test_bad_input_is_one_line_and_exit_2(args, reason, tmp_path):
    # (that no container was created is checked for every test not marked cluster, by
    # tests/hygiene.py at the session's end)
    nodes = tmp_path.parent / f"{tmp_path.name}-nodes.toml"  # the run dir must stay empty
    nodes.write_text("".join(f'[[node]]\nid = {i}\nhost = "10.0.0.1{i}"\n' for i in (1, 2, 3)))
    args = [str(nodes) if a == "NODES" else a for a in args]
    proc = subprocess.run([*CLI, *args, *(["--out", str(tmp_path)] if args[0] == "run" else [])],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], proc.stderr
    assert not list(tmp_path.iterdir()), "a refused run must not create a run directory"


_LIGHT_REFUSAL = """
import sys
from runner.cli import main
for argv in (["run", "--brokers", "12"], ["run", "--bug", "nope#1"],
             ["run", "--scenario", "no-such-scenario"]):
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code == 2, (argv, code)
heavy = sorted(m for m in ("docker", "testcontainers", "pyarrow", "pyspark")
               if m in sys.modules)
print("loaded:", heavy)
"""


def test_refusal_loads_no_docker_arrow_or_spark():
    # bad input is answered at once (~0.2 s, not ~0.45 s): the run's stages, and the libraries
    # they need, are imported only once the input is accepted
    proc = subprocess.run([sys.executable, "-c", _LIGHT_REFUSAL], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "loaded: []", proc.stdout


def test_unknown_option_in_config_file_is_refused(tmp_path):
    conf = tmp_path / "run.toml"
    conf.write_text("[run]\nduration = 20\nbogus = 1\n")
    proc = subprocess.run([*CLI, "run", "--config", str(conf), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kafka-chaos: error: --config: unknown run option 'bogus'"]


@pytest.mark.parametrize(("toml", "line"), [
    ("run = 5\n", "[run] must be a table of run options"),
    ("[run]\nbrokers = 2.5\n", "--brokers must be an integer, got 2.5"),
    ("[run]\nrate = nan\n", "--rate must be a finite number, got nan"),
    ("[run]\nfault_interval = inf\n", "--fault-interval must be a finite number, got inf"),
    ("[run]\ndrain_timeout = \"soon\"\n", "--drain-timeout must be a finite number"),
    ("[run]\nfaults = \"kill\"\n", "--faults must be a list of strings"),
], ids=["run-not-a-table", "fractional-brokers", "nan-rate", "infinite-interval",
        "string-timeout", "faults-not-a-list"])
def test_a_config_file_of_the_wrong_types_is_one_line_and_exit_2(tmp_path, toml, line):
    """Before: a traceback (run = 5), a cluster started and run with rate NaN or an infinite
    fault interval, 2.5 brokers refused for the replication factor instead."""
    conf = tmp_path / "c.toml"
    conf.write_text(toml)
    proc = subprocess.run([*CLI, "run", "--config", str(conf), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout
    (err,) = proc.stderr.strip().splitlines()
    assert err.startswith("kafka-chaos: error: ") and line in err, err
    assert not (tmp_path / "r").exists()


def test_scenarios_lists_one_line_each():
    proc = subprocess.run([*CLI, "scenarios"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert "safe-config-chaos" in names and len(names) == len(set(names))


@pytest.mark.cluster
def test_cluster_up_serves_clients_and_cleans_up_on_ctrl_c():
    proc = start(["cluster", "up", "--brokers", "3"], stdout=subprocess.PIPE,
                 stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        line = ""
        for line in proc.stdout:  # blocks until the cluster is up (bounded by its own waits)
            if line.startswith("bootstrap servers:"):
                break
        assert line.startswith("bootstrap servers:"), "cluster up never printed its address"
        bootstrap = line.split(":", 1)[1].strip()
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=20)
        assert len(md.brokers) == 3
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0  # and nothing left: tests/hygiene.py's no_leaks checks


def test_check_refuses_spark_connect_before_starting_spark(tmp_path):
    (tmp_path / "history").mkdir()
    proc = subprocess.run([*CLI, "check", str(tmp_path), "--spark-master", "sc://h:15002"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "remote Spark Connect server is not supported" in lines[0], proc.stderr
    assert not (tmp_path / "results.json").exists()
