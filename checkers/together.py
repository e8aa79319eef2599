"""Independent Spark queries submitted at once, from driver threads.

A small check is a few dozen tiny jobs, and most of a tiny job's time is scheduling and
driver round trips, not work: the summaries of the writes, of the reads, the partition
history and the epoch bumps do not depend on each other, so their jobs can be in flight
together (Spark runs concurrent jobs of one session; PySpark gives each Python thread its own
JVM thread). On a large history the jobs share the cores instead of taking turns.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls at once and return their results in order; the first error (in call
    order) is raised once every call has ended, so no job is left running behind it.

    Ctrl-C (or SIGTERM's exception) while waiting cancels the session's jobs, so the calls
    end at once; their threads are daemons, so none of them holds up the process's exit.
    """
    if len(calls) < 2:
        return [c() for c in calls]
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        try:
            results[i] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i, c), name=f"kafka-chaos-check-{i}",
                                daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        _cancel_jobs()
        raise
    for exc in errors:
        if exc is not None:
            raise exc
    return results


def _cancel_jobs() -> None:
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone already
            sc.cancelAllJobs()
