"""The engines a check can run on, behind one PySpark DataFrame API.

- Classic Spark (``local[N]``, ``spark://…``, ``yarn``, ``k8s://…``): a JVM driver, the
  default (checkers/session.py).
- Sail (``--spark-master sail``): a native, vectorised engine written in Rust on Apache
  DataFusion that speaks the Spark Connect protocol (the ``pysail`` package). Its server
  runs inside this process (its own threads: nothing to leak when the process dies) and the
  check talks to it through PySpark's Spark Connect client: the same DataFrame code, no
  JVM. It runs on this machine only.

Sail treats ``persist`` as a no-op, so a table two checks read would be computed twice;
:func:`keep` writes such a table as Parquet into this process's scratch directory and
reads it back (:func:`release` removes it), and on classic Spark persists it as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import threading
import uuid
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

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
    """This process's Sail session: the in-process server started on first use (a free
    loopback port), stopped at exit."""
    with _LOCK:
        if _SAIL:
            return _SAIL[1]
        from pysail.spark import SparkConnectServer

        # Sail logs through env_logger: its INFO/WARN lines (a session's start, "persist is a
        # no-op") would fill a check's output, as Spark's would without our log4j settings
        os.environ.setdefault("RUST_LOG", "error")
        sweep_owned_dirs("sail")
        scratch = owned_dir("sail")
        server = SparkConnectServer(ip="127.0.0.1", port=0)
        server.start()
        host, port = server.listening_address
        spark = SparkSession.builder.remote(f"sc://{host}:{port}").getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        _SAIL[:] = [server, spark, scratch]
        atexit.register(stop_sail)
        return spark


def stop_sail() -> None:
    """Stop this process's Sail session and server and remove its scratch (idempotent)."""
    with _LOCK:
        if not _SAIL:
            return
        server, spark, scratch = _SAIL
        _SAIL.clear()
    with contextlib.suppress(Exception):  # a server already going down at exit
        spark.stop()
    with contextlib.suppress(Exception):
        server.stop()
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
