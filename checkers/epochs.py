"""Producer epoch bumps seen in the history, and the Spark step that says whether one
happened inside a time window of a record.

An idempotent librdkafka producer bumps its epoch after a write ends with one of
:data:`EPOCH_BUMP_ERRORS` (a timed-out or desynchronised in-flight batch), and also, failing
no write, after an OUT_OF_ORDER_SEQUENCE answer from a new leader; batches it then resends
under the new epoch cannot be deduplicated by the broker (confluentinc/librdkafka#4953). The
history shows a bump as the completion time of such a write, or as a ``producer-epoch`` event
(the client's statistics) whose change happened between two statistics snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.events import PRODUCER_EPOCH, Event

from .engines import keep, release

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


def epoch_bumps(writes: DataFrame, events: Sequence[Event] = ()) -> DataFrame | None:
    """Every epoch bump of every producer, as rows (``producer``, ``_t`` the earliest and
    ``_bump_hi`` the latest millisecond it may have happened), persisted; None when there
    is none. A write that ended with an epoch-bump error is a bump at its completion
    millisecond; a ``producer-epoch`` event of a bump spans the statistics snapshot before
    it to the one that showed it.

    The rows stay in Spark: a long run's timed-out writes end in hundreds of thousands of
    distinct milliseconds, too many to bring to the driver and send back."""
    spark = writes.sparkSession
    from_writes = (
        writes.where(F.col("error").isin(sorted(EPOCH_BUMP_ERRORS))
                     & F.col("complete_ns").isNotNull() & F.col("producer").isNotNull())
        .select(F.col("producer").cast("int").alias("producer"),
                F.floor(F.col("complete_ns") / MS).cast("long").alias("_t"))
        .distinct()
        .select("producer", "_t", F.col("_t").alias("_bump_hi"))
    )
    spans = [(p, lo, hi) for p, (lo, hi) in stats_bumps(events)]
    if spans:
        from_writes = from_writes.unionByName(spark.createDataFrame(
            spans, "producer int, _t long, _bump_hi long")).distinct()
    bumps = keep(from_writes)
    if bumps.count() == 0:
        release(bumps)
        return None
    return bumps


def stats_bumps(events: Sequence[Event]) -> list[tuple[int, tuple[int, int]]]:
    """(producer, (earliest ms, latest ms)) of each bump a producer's statistics showed. A
    bump with no earlier snapshot of the same client (``since_ns`` null) may be as old as
    the client: its earliest is 0."""
    out: list[tuple[int, tuple[int, int]]] = []
    for e in events:
        if e.kind != PRODUCER_EPOCH or not e.detail.get("bump"):
            continue
        try:
            producer = int(e.detail["producer"])
            since = e.detail.get("since_ns")
            lo = int(since) // MS if since is not None else 0
        except (KeyError, TypeError, ValueError):
            continue
        out.append((producer, (lo, -(-e.ts_ns // MS))))
    return out


def with_bump(df: DataFrame, bumps: DataFrame | None, lo_ns: Column, hi_ns: Column,
              ask: Column, out: str = "epoch_bump_ns") -> DataFrame:
    """``df`` (with a ``producer`` column) plus ``out``: for the rows where ``ask`` holds, the
    latest moment (ns, millisecond precision) within ``[lo_ns, hi_ns]`` at which an epoch bump
    of the row's producer (``bumps``, from :func:`epoch_bumps`) may have happened; null where
    none may have, or not asked.

    One window over the rows and the bumps together, by producer, ordered by time (a bump by
    its earliest moment, a row by ``hi``): the running maximum of the bumps' latest moments
    at a row is the latest bump that began by ``hi``; it overlaps the row's window when it
    ends at or after ``lo``. A literal map of the bumps in the expression, as before, took
    minutes to plan with a long run's thousands of timed-out writes."""
    if bumps is None:
        return df.withColumn(out, F.lit(None).cast("long"))
    from pyspark.sql.window import Window

    ptype = df.schema["producer"].dataType.simpleString()
    spans = bumps.select(F.col("producer").cast(ptype).alias("producer"), "_t", "_bump_hi",
                         F.lit(True).alias("_is_bump"))
    rows = df.select("*", F.floor(lo_ns / MS).alias("_lo"), F.floor(hi_ns / MS).alias("_t"),
                     F.coalesce(ask, F.lit(False)).alias("_ask"), F.lit(False).alias("_is_bump"))
    both = rows.unionByName(spans, allowMissingColumns=True)
    upto = (Window.partitionBy("producer").orderBy(F.col("_t"), F.col("_is_bump").desc())
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    latest = F.max("_bump_hi").over(upto)
    marked = both.withColumn("_latest", latest).where(~F.col("_is_bump"))
    hit = F.col("_ask") & (F.col("_latest") >= F.col("_lo"))
    value = (F.least(F.col("_latest"), F.col("_t")) * F.lit(MS)).cast("long")
    return (marked.withColumn(out, F.when(hit, value))
            .drop("_lo", "_t", "_ask", "_is_bump", "_bump_hi", "_latest"))
