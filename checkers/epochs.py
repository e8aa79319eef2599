"""Producer epoch bumps seen in the history, and the Spark column that says whether one
happened inside a time window of a record.

An idempotent librdkafka producer bumps its epoch after a write ends with one of
:data:`EPOCH_BUMP_ERRORS` (a timed-out or desynchronised in-flight batch); batches it then
resends under the new epoch cannot be deduplicated by the broker (confluentinc/librdkafka
#4953). The history shows the bump as the completion time of such a write.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

#: librdkafka errors after which an idempotent producer may bump its epoch and resend.
EPOCH_BUMP_ERRORS: frozenset[str] = frozenset(
    {
        "_MSG_TIMED_OUT",
        "_TIMED_OUT",
        "REQUEST_TIMED_OUT",
        "_PURGE_INFLIGHT",
        "_FATAL",
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "UNKNOWN_PRODUCER_ID",
        "_GAPLESS_GUARANTEE",
        "INVALID_PRODUCER_EPOCH",
    }
)

MS = 1_000_000


def epoch_bumps(writes: DataFrame) -> dict[int, list[int]]:
    """producer -> sorted distinct milliseconds (ns // 1 ms) at which one of its writes ended
    with an epoch-bump error. A timed-out batch ends many writes in the same millisecond, so
    this stays small."""
    rows = (
        writes.where(F.col("error").isin(sorted(EPOCH_BUMP_ERRORS))
                     & F.col("complete_ns").isNotNull() & F.col("producer").isNotNull())
        .select("producer", F.floor(F.col("complete_ns") / MS).cast("long").alias("ms"))
        .distinct()
        .collect()
    )
    out: dict[int, list[int]] = defaultdict(list)
    for r in rows:
        out[int(r["producer"])].append(int(r["ms"]))
    return {p: sorted(v) for p, v in out.items()}


def bump_between(bumps: dict[int, list[int]], producer: Column, lo_ns: Column,
                 hi_ns: Column) -> Column:
    """The latest epoch bump (ns, millisecond precision) of ``producer`` within
    ``[lo_ns, hi_ns]`` (both compared at millisecond precision), or null."""
    if not bumps:
        return F.lit(None).cast("long")
    # One SQL literal instead of a Column per bump: a synthetic or long run has thousands,
    # and each Column built from Python is a round trip to the JVM.
    entries = ", ".join(f"{int(p)}, array({', '.join(f'{int(t)}L' for t in times)})"
                        for p, times in sorted(bumps.items()))
    arr = F.expr(f"map({entries})")[producer]
    lo = F.floor(lo_ns / MS)
    hi = F.floor(hi_ns / MS)
    inside = F.filter(arr, lambda t: (t >= lo) & (t <= hi))
    return (F.array_max(inside) * F.lit(MS)).cast("long")
