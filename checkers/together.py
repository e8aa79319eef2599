"""Independent Spark queries submitted at once, from driver threads.

A small check is a few dozen tiny jobs, and most of a tiny job's time is scheduling and
driver round trips, not work: the summaries of the writes, of the reads, the partition
history and the epoch bumps do not depend on each other, so their jobs can be in flight
together (Spark runs concurrent jobs of one session; PySpark gives each Python thread its own
JVM thread). On a large history the jobs share the cores instead of taking turns.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls at once and return their results in order; the first error (in call
    order) is raised once every call has ended, so no job is left running behind it."""
    if len(calls) < 2:
        return [c() for c in calls]
    pool = ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="kc-check")
    try:
        futures: list[Future[Any]] = [pool.submit(c) for c in calls]
        wait(futures)
        return [f.result() for f in futures]
    finally:
        # Reached early only by Ctrl-C (or SIGTERM's exception): the calls still running
        # end when the caller stops the session; waiting here would hold up its cleanup.
        pool.shutdown(wait=False, cancel_futures=True)
