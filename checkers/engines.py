"""The engines a check can run on, behind one PySpark DataFrame API.

- Classic Spark (``local[N]``, ``spark://…``, ``yarn``, ``k8s://…``): a JVM driver, the
  default (checkers/session.py).
- Sail (``--spark-master sail``): a native, vectorised engine written in Rust on Apache
  DataFusion that speaks the Spark Connect protocol (the ``pysail`` package). Its server
  runs in a child process in a network namespace of its own, which ends when this process
  does (checkers/sail_server.py); the check talks to it through PySpark's Spark Connect
  client over a Unix socket only we can open: the same DataFrame code, no JVM. It runs on
  this machine only.

Sail treats ``persist`` as a no-op, so a table two checks read would be computed twice;
:func:`keep` writes such a table as Parquet into this process's scratch directory and
reads it back (:func:`release` removes it), and on classic Spark persists it as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import shutil
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import grpc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.connect.client import DefaultChannelBuilder

from contract.owners import owned_dir, sweep_owned_dirs
from contract.settings import SAIL_MASTER

_LOCK = threading.Lock()
#: (server, session, scratch directory) of this process's Sail engine, once started.
_SAIL: list[Any] = []


def is_connect(spark: SparkSession) -> bool:
    """True for a Spark Connect session (Sail's), which has no SparkContext."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master_of(spark: SparkSession) -> str:
    """The session's master as results.json names it: ``sail``, or Spark's master URL."""
    return SAIL_MASTER if is_connect(spark) else str(spark.sparkContext.master)


def sail_session() -> SparkSession:
    """This process's Sail session: its server started on first use (checkers/sail_server.py:
    a child in a network namespace of its own, reached through a Unix socket in our private
    scratch, so no other local user can run queries as us), stopped at exit."""
    with _LOCK:
        if _SAIL:
            return _SAIL[1]
        sweep_owned_dirs("sail")
        scratch = owned_dir("sail")
        try:
            server = _start_server(scratch)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        # what PySpark's own builder sets for a remote session: pyspark.sql.functions then
        # build Connect columns (this process runs no JVM session: one engine per process)
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        spark: Any = ConnectSession.builder.channelBuilder(
            _UnixChannel(str(scratch / _SOCKET))).getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        _SAIL[:] = [server, spark, scratch]
        atexit.register(stop_sail)
        return spark


_SOCKET = "sail.sock"
_START_TIMEOUT_S = 60.0


def netns_command() -> list[str]:
    """The prefix that gives Sail's server a network namespace of its own: plain for root,
    through a user namespace for anyone else."""
    return ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "--net"]


def sail_unavailable() -> str | None:
    """Why Sail cannot run here (one line), or None: its server needs a private network
    namespace, and without one we refuse rather than listen where other users reach it."""
    try:
        import pysail  # noqa: F401
    except ImportError:
        return "--spark-master sail needs the pysail package (pip install pysail)"
    try:
        probe = subprocess.run([*netns_command(), "true"], capture_output=True, text=True,
                               timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        probe_error = str(e)
    else:
        if probe.returncode == 0:
            return None
        probe_error = (probe.stderr.strip().splitlines() or [f"exit {probe.returncode}"])[-1]
    return ("--spark-master sail needs a private network namespace for its server (Spark "
            "Connect has no authentication; on 127.0.0.1 any local user could run queries "
            f"as you): `{' '.join(netns_command())} true` failed: {probe_error}")


def _start_server(scratch: Path) -> subprocess.Popen[bytes]:
    # RUST_LOG: Sail logs through env_logger; its INFO/WARN lines (a session's start,
    # "persist is a no-op") would fill a check's output, as Spark's would without our log4j
    env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "error"))
    script = Path(__file__).with_name("sail_server.py")
    proc = subprocess.Popen(
        [*netns_command(), sys.executable, str(script), str(scratch / _SOCKET)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        start_new_session=True)  # a terminal's Ctrl-C reaches us; we end it (stdin EOF)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], _START_TIMEOUT_S)
    line = proc.stdout.readline() if ready else b""
    if line.strip() != b"ready":
        _end(proc)
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        raise RuntimeError("Sail's server did not start: "
                           + ((err.splitlines() or ["no output"])[-1]))
    return proc


def _end(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(Exception):
        if proc.stdin:
            proc.stdin.close()  # it exits at EOF
        proc.wait(timeout=10)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


class _UnixChannel(DefaultChannelBuilder):
    """A Spark Connect channel to our server's Unix socket (PySpark's own builder takes
    host:port URLs only)."""

    def __init__(self, path: str) -> None:
        super().__init__("sc://localhost")
        self._path = path

    @property
    def endpoint(self) -> str:
        return f"unix:{self._path}"

    def toChannel(self) -> grpc.Channel:  # noqa: N802 (PySpark's name)
        self.setChannelOption("grpc.default_authority", "localhost")
        return self._insecure_channel(self.endpoint)


def stop_sail() -> None:
    """Stop this process's Sail session and server and remove its scratch (idempotent)."""
    with _LOCK:
        if not _SAIL:
            return
        server, spark, scratch = _SAIL
        _SAIL.clear()
    with contextlib.suppress(Exception):  # a server already going down at exit
        spark.stop()
    _end(server)
    shutil.rmtree(scratch, ignore_errors=True)


def sail_version() -> str:
    """The installed Sail's version (results.json names the engine that judged)."""
    from importlib.metadata import version

    return version("pysail")


def sail_running() -> bool:
    """Whether this process has started its Sail engine."""
    return bool(_SAIL)


def keep(df: DataFrame) -> DataFrame:
    """``df`` computed once for several readers: persisted on classic Spark; on Sail (which
    ignores persist) written as Parquet under this process's scratch and read back."""
    spark = df.sparkSession
    if not is_connect(spark):
        return df.persist(StorageLevel.MEMORY_AND_DISK)
    scratch = _SAIL[2] if _SAIL else None
    if scratch is None:  # a Connect session that is not ours: nowhere of ours to write
        return df
    path = str(scratch / f"kept-{uuid.uuid4().hex}")
    _write(df, path)
    kept = spark.read.schema(df.schema).parquet(path)
    _KEPT[id(kept)] = path
    return kept


#: id(kept DataFrame) -> its Parquet directory (Sail).
_KEPT: dict[int, str] = {}
#: Parquet directories of :func:`shared` tables, removed by :func:`release_shared`.
_SHARED: list[str] = []


def shared(df: DataFrame) -> DataFrame:
    """``df`` as an input several branches of one query read. Classic Spark computes it
    once anyway (it reuses the exchange below it): unchanged. Sail repeats a shared part
    of a plan in every branch, so there it is written once (as :func:`keep` does) and
    stays until :func:`release_shared`, after the query that reads it."""
    spark = df.sparkSession
    if not is_connect(spark) or not _SAIL:
        return df
    path = str(_SAIL[2] / f"shared-{uuid.uuid4().hex}")
    _write(df, path)
    _SHARED.append(path)
    return spark.read.schema(df.schema).parquet(path)


def _write(df: DataFrame, path: str) -> None:
    # read back once or twice, soon: compressing it would cost more than it saves. (Read
    # back with its schema: an empty table leaves no file to take one from.)
    df.write.option("compression", "uncompressed").parquet(path)


def release_shared() -> None:
    """Remove the tables :func:`shared` wrote (idempotent)."""
    while _SHARED:
        shutil.rmtree(_SHARED.pop(), ignore_errors=True)


def release(df: DataFrame | None) -> None:
    """Drop what :func:`keep` made of ``df`` (idempotent; None does nothing)."""
    if df is None:
        return
    path = _KEPT.pop(id(df), None)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
    elif not is_connect(df.sparkSession):
        df.unpersist()
