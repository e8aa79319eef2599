"""The checker's JVM: the throughput collector and two malloc arenas (what keeps a 10M-write
check's process tree under 4 GB, checkers/README.md), set for the JVM only; a JVM that dies
under a check is named, and the next check gets a new one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checkers import session
from tests.support.spark_child import short_lived_spark_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
def test_the_driver_jvm_runs_parallel_gc_with_two_malloc_arenas_at_low_priority(spark: Any
                                                                             ) -> None:
    jvm = spark.sparkContext._jvm
    collectors = {b.getName() for b in jvm.java.lang.management.ManagementFactory
                  .getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}, collectors
    pid = jvm.java.lang.ProcessHandle.current().pid()
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    assert env.get("MALLOC_ARENA_MAX") == os.environ.get("MALLOC_ARENA_MAX", "2")
    # ... and this process's environment is as it started: the JVM's alone has the cap.
    assert os.environ.get("MALLOC_ARENA_MAX") == _started_with("MALLOC_ARENA_MAX")
    # Every thread of the JVM yields the CPU to a cluster (niceness 5, or this process's
    # own where that is higher: raised, never lowered).
    want = max(5, os.getpriority(os.PRIO_PROCESS, 0))
    nice = {int(stat.read_text().rpartition(")")[2].split()[16])
            for stat in Path(f"/proc/{pid}/task").glob("*/stat")}
    assert nice == {want}, nice


@pytest.mark.spark
def test_sql_functions_are_found_in_the_jvm_once(spark: Any, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    # PySpark looks each function up by reflection on every call (two JVM round trips
    # before the call); the session keeps the handles. A PySpark without the lookup we
    # patch fails here, not silently slower. (That a replaced JVM gets new handles: the
    # JVM-death test below, whose child keeps one of the first JVM's.)
    from pyspark.sql import functions as F

    client = spark.sparkContext._gateway._gateway_client
    sent: list[str] = []
    send = client.send_command

    def counted(command: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(command.split("\n", 1)[0])
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted)
    F.when(F.lit(True), 1)  # found once, then kept
    sent.clear()
    for _ in range(3):
        F.when(F.lit(True), 1)
    assert sent and "r" not in sent, sent  # calls, no reflection


def _started_with(name: str) -> str | None:
    """``name`` in the environment this process started with (os.environ's changes do not
    show in /proc/self/environ)."""
    for item in Path("/proc/self/environ").read_bytes().split(b"\0"):
        key, _, value = item.decode().partition("=")
        if key == name:
            return value
    return None


@pytest.mark.parametrize(("caller", "jvm"), [(None, "2"), ("8", "8")])
def test_sparks_launcher_gives_the_jvm_two_arenas_unless_the_caller_chose(
        caller: str | None, jvm: str) -> None:
    # Spark's own launcher script, as spark-submit runs it, with our configuration directory.
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_ARENA_MAX", "SPARK_ENV_LOADED")}
    env.update(SPARK_HOME=str(home), SPARK_CONF_DIR=str(session.SPARK_CONF))
    if caller is not None:
        env["MALLOC_ARENA_MAX"] = caller
    out = subprocess.run(["bash", "-c", f'. "{home}/bin/load-spark-env.sh" && env'], env=env,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert f"MALLOC_ARENA_MAX={jvm}" in out.splitlines(), out


def test_spark_is_pointed_at_our_conf_only_where_the_caller_configures_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    session._point_spark_at_our_conf()
    assert os.environ["SPARK_CONF_DIR"] == str(session.SPARK_CONF)
    assert (session.SPARK_CONF / "spark-env.sh").is_file()

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # the caller's own
    session._point_spark_at_our_conf()
    assert os.environ["SPARK_CONF_DIR"] == str(tmp_path)

    monkeypatch.delenv("SPARK_CONF_DIR")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))  # a Spark without conf/: ours
    session._point_spark_at_our_conf()
    assert os.environ["SPARK_CONF_DIR"] == str(session.SPARK_CONF)

    monkeypatch.delenv("SPARK_CONF_DIR")
    (tmp_path / "conf").mkdir()  # a Spark with its own conf/ keeps it
    session._point_spark_at_our_conf()
    assert "SPARK_CONF_DIR" not in os.environ


@pytest.mark.parametrize(("opts", "added"), [
    ("", "-XX:+UseParallelGC "),
    ("-Xss4m", "-XX:+UseParallelGC "),
    ("-XX:+UseGCOverheadLimit", "-XX:+UseParallelGC "),
    ("-XX:+UseG1GC", ""),
    ("-Xss4m -XX:+UseZGC", ""),
])
def test_a_collector_the_user_chose_is_not_doubled(opts: str, added: str) -> None:
    assert session._collector(opts) == added


# One child process for both tests below: each JVM start costs ~6 s of CPU. The JVM the
# first check kills is replaced by the second check, whose new SparkContext must keep the
# guard the process installed.
_CHILD = """
import os, signal, sys
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
from pyspark import SparkContext
import checkers.check as check
from checkers import session
from checkers.check import check_run
from checkers.session import build_session, jvm_gone
from checkers.warmup import write_tiny_history
from compose.stop_signals import StopSignals, install

build_session("local[1]")
from pyspark.sql import functions as F
F.lit(1)  # a function handle of this JVM is kept (session._keep_function_handles)
print("python's default replaced:", signal.getsignal(signal.SIGINT) is not
      signal.default_int_handler, flush=True)
stop = StopSignals(interrupt=True)
install(stop, lambda sig, handler: True)
print("gone while running:", jvm_gone(), flush=True)
run = Path(sys.argv[1]) / "run"
write_tiny_history(run)
started, scratch, first = check.build_session, [], SparkContext._gateway.proc.pid

def dies_once_started(*args, **kwargs):  # the JVM dies under the check (as the OOM killer does)
    spark = started(*args, **kwargs)
    scratch.extend(session._SCRATCH)
    jvm = SparkContext._gateway.proc
    os.kill(jvm.pid, signal.SIGKILL)
    jvm.wait(timeout=60)
    return spark

check.build_session = dies_once_started
print("error:", check_run(run, write_results=False).get("error"), flush=True)
check.build_session = started
res = check_run(run, write_results=False)
print("next check:", res.get("error"), res["valid"], "lost:", res["anomalies"]["lost"]["count"],
      "new jvm:", SparkContext._gateway.proc.pid != first, jvm_gone(), flush=True)
print("dead jvm's scratch left:", [p for p in scratch if Path(p).exists()],
      "new one:", session._SCRATCH != scratch and Path(session._SCRATCH[0]).is_dir(), flush=True)
print("guard kept:", signal.getsignal(signal.SIGINT) == stop.handle, flush=True)
"""


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> str:
    # The bound is for a hang only: two JVM starts and a check on a cold JVM took 137-165 s
    # inside suites (load ~16 beside the cluster lanes; 180 s was the bound then).
    tmp = tmp_path_factory.mktemp("jvm")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(tmp)], cwd=ROOT,
                         env=short_lived_spark_env(TMPDIR=str(tmp)), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_a_new_spark_context_keeps_a_sigint_guard_the_process_installed(child: str) -> None:
    # PySpark's SparkContext installs its own SIGINT handler (raise on every Ctrl-C); the
    # pytest plugin's guard, which lets only the first Ctrl-C raise, must survive a check
    # that starts Spark in the session, or a second Ctrl-C could cut a cluster's removal.
    # The first line proves the second could fail: Spark does replace a default handler.
    assert "python's default replaced: True" in child, child
    assert "guard kept: True" in child, child


def test_a_check_whose_jvm_died_says_how_and_the_next_check_gets_a_new_one(child: str
                                                                          ) -> None:
    # A JVM killed under a session (the OOM killer, a signal to the process group) made
    # that check fail with "Connection refused" and nothing else, and every later check too
    assert "gone while running: None" in child, child
    # py4j's own words vary with the moment (a refused or a broken connection); ours do not
    error = child.split("error: ", 1)[1].splitlines()[0]
    assert "(the checker's JVM (pid " in error and "was killed by SIGKILL" in error, error
    # the next check runs on a new JVM and finds what the tiny history holds (a lost write)
    assert "next check: None False lost: 1 new jvm: True None" in child, child
    assert "dead jvm's scratch left: [] new one: True" in child, child
