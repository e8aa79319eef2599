"""The one SparkSession the checker uses: local[2] by default, quiet, sized for a small box."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from contract.owners import owned_dir, sweep_owned_dirs
from contract.settings import SAIL_MASTER

from .engines import sail_running, sail_session

DEFAULT_MASTER = "local[2]"

#: The driver's heap unless KAFKA_CHAOS_SPARK_DRIVER_MEMORY says otherwise: with the
#: throughput collector and two malloc arenas (SPARK_CONF) a 10M-write check peaks at ~3.7 GiB
#: for the whole process tree and runs as fast as with 4g (checkers/README.md).
DEFAULT_DRIVER_MEMORY = "3584m"

#: Spark's configuration directory for the driver's JVM where the caller has none: Spark's
#: launcher sources its spark-env.sh, which gives the JVM two malloc arenas. glibc gives every
#: thread that allocates natively (shuffle, Parquet codecs, Netty) its own 64 MiB arena; two
#: took ~600 MB off a 10M check's peak at no measurable cost (Hadoop sets 4 for the same
#: reason). Only the JVM and its children see it.
SPARK_CONF = Path(__file__).with_name("spark_conf")

_LOCK = threading.Lock()
#: The scratch directory of the JVM running now (removed when that JVM dies, see
#: _forget_dead_jvm).
_SCRATCH: list[str] = []


def _point_spark_at_our_conf() -> None:
    """SPARK_CONF_DIR=SPARK_CONF in this process's environment, for good, unless the caller
    configures Spark (SPARK_CONF_DIR, or a conf directory in SPARK_HOME). Only Spark's
    launcher reads it. (Adding a variable for the JVM's start and removing it afterwards
    raced other threads: os.environ.copy() lists the keys, then reads each, and a cluster
    starting beside the checker's warm-up met a key gone in between: KeyError.)"""
    if "SPARK_CONF_DIR" in os.environ:
        return
    home = os.environ.get("SPARK_HOME")
    if home and os.path.isdir(os.path.join(home, "conf")):
        return
    os.environ["SPARK_CONF_DIR"] = str(SPARK_CONF)


@contextlib.contextmanager
def _own_sigint_kept() -> Iterator[None]:
    """A new SparkContext replaces the SIGINT handler of the main thread for good (its own
    cancels every job, then raises). Python's default handler may go, but one the process
    chose stays: an ignored SIGINT (a background job), or a guard that counts a second
    Ctrl-C instead of letting it cut a cluster's removal short (compose.stop_signals, the
    pytest plugin for a whole session)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if before is not signal.default_int_handler and before is not None:
            signal.signal(signal.SIGINT, before)


# Spark prints INFO/WARN lines by the hundred; a checker run should print only its verdict.
# A local JVM writes its errors, and the tasks it lost, to a file in its own scratch
# (SPARK_LOG): a check copies its share into the run's logs and counts them
# (checkers/check.py); a JVM of a cluster master prints its errors.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""
_LOG4J2_FILE = """\
rootLogger.level = error
rootLogger.appenderRef.file.ref = file
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
"""
#: The log file of this process's local JVM, in its scratch directory.
SPARK_LOG = "checker-spark.log"


def _log4j_file(scratch: str | None) -> str:
    """The JVM's log4j configuration, written into a directory of this process's own
    (its scratch, or an owned directory): a fixed name in the shared temp directory could
    be planted by another user, and the JVM would load whatever it says."""
    where = scratch
    if where is None:
        sweep_owned_dirs("log4j")  # a killed process's
        where = str(owned_dir("log4j"))
        atexit.register(shutil.rmtree, where, True)
    path = os.path.join(where, "log4j2.properties")
    text = _LOG4J2_FILE.format(log=os.path.join(where, SPARK_LOG)) if scratch else _LOG4J2
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def spark_log() -> str | None:
    """The log file of this process's local Spark JVM (None: no local JVM with one)."""
    return os.path.join(_SCRATCH[0], SPARK_LOG) if _SCRATCH else None


def _local_cores(master: str) -> int | None:
    """Cores of a local[N] master (None for a cluster master)."""
    if not master.startswith("local"):
        return None
    inner = master[len("local") :].strip("[]")
    if inner in ("", "*"):
        return os.cpu_count() or 2
    try:
        return max(1, int(inner.split(",")[0]))
    except ValueError:
        return 2


def _scratch_dir() -> str:
    """This process's directory for a local JVM's scratch (shuffle and cached blocks, its
    temp files): Spark removes its own files at a clean exit, a killed JVM leaves them, so
    they live under one directory named after this process, removed at its exit and, if it
    is killed, by the next session any kafka-chaos process starts (contract.owners)."""
    sweep_owned_dirs("spark")
    path = owned_dir("spark")
    atexit.register(_remove_scratch_at_exit, path)
    _SCRATCH[:] = [str(path)]
    return str(path)


def _quiet_py4j_at_exit(record: logging.LogRecord) -> bool:
    """Drops py4j's report of a call cut by the JVM's kill at exit (a root-logger filter)."""
    return not str(record.msg).startswith("Exception while sending command")


def _remove_scratch_at_exit(path: Path) -> None:
    """The JVM ends only once this process has (its stdin closes), and a job may still run
    in it (a warm-up check that a short run outlived). It is killed before its scratch is
    removed, not stopped: stopping a context deletes its block manager's directories while
    running tasks still write there (Spark stops the scheduler, not the tasks), and the
    JVM printed their FileNotFoundException (temp_shuffle) or a rejected status update,
    a stack trace after the verdict. Only the context's Python side is stopped: its
    accumulator server would print an EOFError when the JVM goes."""
    # A warm-up thread's call into the JVM fails once it is killed, and py4j logs that on
    # the root logger with its traceback (java_gateway: "Exception while sending command"):
    # the process is ending, so that failure is no news.
    logging.getLogger().addFilter(_quiet_py4j_at_exit)
    sc = SparkContext._active_spark_context
    if sc is not None:
        with contextlib.suppress(Exception):  # exiting: nothing left to report to
            sc._jsc = None  # nothing of the JVM's side is stopped: it is killed below
            sc.stop()
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        with contextlib.suppress(Exception):
            proc.kill()
            proc.wait(10)
    shutil.rmtree(path, ignore_errors=True)


#: A new JVM for a history below this many bytes compiles with C1 only (see build_session).
SMALL_HISTORY_BYTES = 16 * 2**20  # ~400k writes


def session_running() -> bool:
    """Whether this process runs a SparkContext already (in any thread)."""
    return SparkContext._active_spark_context is not None


def jvm_gone() -> str | None:
    """Why this process's Spark JVM is no longer running, or None (running, or none started).

    A check whose JVM died (the kernel's OOM killer, a signal to the process group) fails
    with a connection error that says neither; this says which."""
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None:
        return None
    code = proc.poll()
    if code is None:
        return None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        oom = " (the kernel's OOM killer?)" if -code == signal.SIGKILL else ""
        return f"the checker's JVM (pid {proc.pid}) was killed by {name}{oom}"
    return f"the checker's JVM (pid {proc.pid}) exited with code {code}"


def _forget_dead_jvm() -> None:
    """Lets the next session start a new JVM after this process's died (``jvm_gone``).

    PySpark keeps its gateway to the first JVM for the life of the process, so one JVM
    killed in a long process (a nightly's or a pytest session's one session for every run)
    would fail every later check. The context's Python side is stopped, the gateway and
    sessions are forgotten, and the dead JVM's scratch files (shuffle, cached blocks)
    removed."""
    sc = SparkContext._active_spark_context
    if sc is not None:
        sc._jsc = None  # nothing to stop on the JVM's side (py4j would raise, not always Py4JError)
        sc.stop()  # the Python side: the accumulator server, the active context
    gateway = SparkContext._gateway
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    if gateway is not None:
        with contextlib.suppress(Exception):  # its peer is gone: only sockets to close
            gateway.close()
    for path in _SCRATCH:
        shutil.rmtree(path, ignore_errors=True)
    _SCRATCH.clear()


def _keep_function_handles() -> None:
    """PySpark finds each SQL function (``F.col``, ``F.when`` …) in the JVM by reflection on
    every call: two round trips before the call itself, ~1,250 of a warm tiny check's
    ~5,400. The handles name static methods and hold no state, so they are kept, per JVM
    (a replaced JVM gets new ones). Where PySpark has no such lookup, nothing changes."""
    from pyspark.sql.functions import builtin

    lookup = getattr(builtin, "_get_jvm_function", None)
    if lookup is None or getattr(lookup, "kept_by_kafka_chaos", False):
        return
    handles: dict[str, tuple[object, Any]] = {}

    def kept(name: str, sc: SparkContext) -> Any:
        jvm = sc._jvm
        hit = handles.get(name)
        if hit is None or hit[0] is not jvm:
            hit = handles[name] = (jvm, lookup(name, sc))
        return hit[1]

    kept.kept_by_kafka_chaos = True  # type: ignore[attr-defined]
    builtin._get_jvm_function = kept


def _collector(user_opts: str) -> str:
    """The throughput collector (a check is a batch job: pause times do not matter, and it
    needs less native memory than G1's remembered sets), unless the user's JVM options
    choose one: a JVM given two collectors does not start."""
    return "" if re.search(r"-XX:\+Use\w+GC\b", user_opts) else "-XX:+UseParallelGC "


def build_session(master: str | None = None, shuffle_partitions: int | None = None,
                  small_input: bool = False) -> SparkSession:
    """Start (or return) the process's SparkSession for ``master``.

    An already active session is reused when it runs on the requested master (or when no
    master is requested): tests and the CLI share one JVM. Shuffle partitions default to
    4x the local cores (few, large tasks suit 2 cores); on a cluster Spark's own setting
    stays unless ``shuffle_partitions`` is given. ``small_input`` (a new local JVM for one
    small check, as the CLI starts) stops the JIT at C1: a short-lived driver then spends
    its 2 cores checking instead of optimising code it runs once (~15% of a cold check).
    A JVM that died since the last call (``jvm_gone``) is replaced by a new one.

    ``sail`` (or no master in a process that runs Sail already) gives this process's Sail
    session instead (checkers/engines.py): one engine per process, since PySpark switches
    its functions to Spark Connect for the whole process once a Connect session exists.
    """
    if master == SAIL_MASTER or (master is None and sail_running()):
        return sail_session()
    if sail_running():
        raise RuntimeError(f"this process checks with Sail; it cannot also start Spark {master}")
    with _LOCK:
        if jvm_gone() is not None:
            _forget_dead_jvm()
        active = SparkSession.getActiveSession()
        if active is not None and (master is None or active.sparkContext.master == master):
            return active
        if active is not None:
            active.stop()
        master = master or DEFAULT_MASTER
        # A context running without being this thread's active session is returned by
        # getOrCreate below as it is: its JVM has its scratch directory already.
        scratch = _scratch_dir() if _local_cores(master) and not session_running() else None
        log4j = _log4j_file(scratch)
        user_opts = os.environ.get("KAFKA_CHAOS_SPARK_JAVA_OPTS", "")
        java_opts = (f"-Dlog4j2.configurationFile=file:{log4j} "
                     f"-Dlog4j.configurationFile=file:{log4j} "
                     + ("-XX:TieredStopAtLevel=1 " if small_input and _local_cores(master)
                        else "")
                     + _collector(user_opts)
                     + (f"-Djava.io.tmpdir={scratch} " if scratch else "")
                     + user_opts)
        builder = (
            SparkSession.builder.master(master)
            .appName("kafka-chaos-checker")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", java_opts)
            .config("spark.sql.adaptive.enabled", "true")
            # The checks share one hash partitioning per stage; these let joins and windows
            # on a superset of the keys reuse it instead of shuffling again.
            .config("spark.sql.requireAllClusterKeysForCoPartition", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.parquet.mergeSchema", "false")
            # PySpark 4 records the Python call site of every column expression for error
            # messages: ~5 JVM round trips per F.col/F.when, a third of building a check's
            # plans. Our errors name the check themselves.
            .config("spark.python.sql.dataFrameDebugging.enabled", "false")
            # The tables a check persists (identity rows, anomaly rows) are read back once or
            # twice: compressing them (dictionary statistics per column and batch) cost more
            # than it saved, ~10% of a 2M-write check.
            .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
            # Shuffle files of a finished check are deleted only once the driver's GC has
            # collected its plans; one JVM checks many runs (pytest, nightly), so collect
            # often instead of every 30 min, or the scratch directory grows run after run.
            .config("spark.cleaner.periodicGC.interval", "1min")
        )
        if scratch is not None:
            builder = builder.config("spark.local.dir", scratch)
        cores = _local_cores(master)
        if cores is not None:
            builder = builder.config("spark.driver.memory", os.environ.get(
                "KAFKA_CHAOS_SPARK_DRIVER_MEMORY", DEFAULT_DRIVER_MEMORY))
            parts = shuffle_partitions or 4 * cores
            builder = builder.config("spark.sql.shuffle.partitions", str(parts))
            builder = builder.config("spark.default.parallelism", str(parts))
        elif shuffle_partitions:
            builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        # KAFKA_CHAOS_SPARK_EXTRA_CONF="k=v,k=v": extra Spark settings (tuning, experiments)
        for item in os.environ.get("KAFKA_CHAOS_SPARK_EXTRA_CONF", "").split(","):
            if "=" in item:
                key, value = item.split("=", 1)
                builder = builder.config(key.strip(), value.strip())
        _point_spark_at_our_conf()
        with _own_sigint_kept():
            spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        _keep_function_handles()
        return spark

