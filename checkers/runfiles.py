"""Paths of a run directory, local or a URI that Spark (Hadoop) can read.

Local paths use plain Python I/O; URIs (``hdfs://``, ``s3a://``, ``file://`` …) go through
Hadoop's FileSystem inside the Spark JVM, so a Spark cluster can check runs kept on shared
storage.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from contract.atomic_files import read_regular, write_atomic

from .engines import is_connect

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


#: The largest text file (run.json, events.jsonl) a check reads: far above what a run
#: writes, far below what would exhaust the driver's memory.
MAX_TEXT_BYTES = 1 << 30


def is_uri(path: str) -> bool:
    """True for ``scheme://…`` paths (a Windows drive letter is not a scheme)."""
    return bool(_SCHEME.match(path))


@dataclass(frozen=True)
class RunDir:
    """A run directory; ``root`` is a local path or a URI."""

    root: str

    @property
    def local(self) -> str | None:
        """The local filesystem path, or None when the run lives behind a non-file URI."""
        if not is_uri(self.root):
            return os.path.abspath(self.root)
        parsed = urlparse(self.root)
        return parsed.path if parsed.scheme == "file" else None

    def uri(self, rel: str) -> str:
        """A path Spark can read for ``rel`` inside the run."""
        base = self.root.rstrip("/")
        if not is_uri(base):
            return os.path.join(os.path.abspath(base), rel)
        return f"{base}/{rel}"

    def local_path(self, rel: str) -> str | None:
        loc = self.local
        return None if loc is None else os.path.join(loc, rel)

    # --- Hadoop FileSystem for non-local URIs -------------------------------------------

    @staticmethod
    def _hadoop(spark: SparkSession, uri: str) -> tuple[Any, Any]:
        if is_connect(spark):
            raise ValueError(f"{uri}: the Sail engine reads local run directories only; "
                             "check a run behind a URI on a Spark master")
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j gateway, the only way to Hadoop FS
        conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
        assert jvm is not None
        path = jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(conf), path

    def exists(self, rel: str, spark: SparkSession | None = None) -> bool:
        loc = self.local_path(rel)
        if loc is not None:
            return os.path.exists(loc)
        assert spark is not None, "a URI run directory needs the SparkSession"
        fs, path = self._hadoop(spark, self.uri(rel))
        return bool(fs.exists(path))

    def read_text(self, rel: str, spark: SparkSession | None = None) -> str | None:
        """The file's text, or None when it does not exist or is no regular file of at
        most :data:`MAX_TEXT_BYTES` (a FIFO would block the check, ``/dev/zero`` never end;
        the checker then reports the file missing, as for a crashed run)."""
        loc = self.local_path(rel)
        if loc is not None:
            return read_regular(loc, MAX_TEXT_BYTES)
        assert spark is not None, "a URI run directory needs the SparkSession"
        if not self.exists(rel, spark):
            return None
        rows = spark.read.text(self.uri(rel), wholetext=True).collect()
        return "".join(r[0] for r in rows)

    def write_text(self, rel: str, text: str, spark: SparkSession | None = None) -> None:
        """Write ``text`` atomically where the filesystem allows it (tmp + rename locally)."""
        loc = self.local_path(rel)
        if loc is not None:
            os.makedirs(os.path.dirname(loc), exist_ok=True)
            write_atomic(loc, text)
            return
        assert spark is not None, "a URI run directory needs the SparkSession"
        fs, path = self._hadoop(spark, self.uri(rel))
        out = fs.create(path, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
