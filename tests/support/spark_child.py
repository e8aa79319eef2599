"""The environment of a test's child process that starts Spark only to watch what happens
around it (scratch directories, exit handlers, signal handlers), not to check anything big."""

from __future__ import annotations

import os


def short_lived_spark_env(**extra: str) -> dict[str, str]:
    """``os.environ`` plus a small driver heap and a JIT stopped at C1: such a JVM lives a few
    seconds, and C2 compiling code it runs once cost a third of its CPU (10 -> 6.5 CPU
    seconds each), taken from the tests running beside it."""
    opts = os.environ.get("KAFKA_CHAOS_SPARK_JAVA_OPTS", "")
    return {**os.environ, "KAFKA_CHAOS_SPARK_DRIVER_MEMORY": "512m",
            "KAFKA_CHAOS_SPARK_JAVA_OPTS": f"{opts} -XX:TieredStopAtLevel=1".strip(), **extra}
