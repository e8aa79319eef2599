"""Producer epoch bumps seen in the history, and the Spark column that says whether one
happened inside a time window of a record.

An idempotent librdkafka producer bumps its epoch after a write ends with one of
:data:`EPOCH_BUMP_ERRORS` (a timed-out or desynchronised in-flight batch), and also, failing
no write, after an OUT_OF_ORDER_SEQUENCE answer from a new leader; batches it then resends
under the new epoch cannot be deduplicated by the broker (confluentinc/librdkafka#4953). The
history shows a bump as the completion time of such a write, or as a ``producer-epoch`` event
(the client's statistics) whose change happened between two statistics snapshots.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.events import PRODUCER_EPOCH, Event

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


#: producer -> sorted (earliest, latest) milliseconds of each of its epoch bumps
Bumps = dict[int, list[tuple[int, int]]]


def epoch_bumps(writes: DataFrame, events: Sequence[Event] = ()) -> Bumps:
    """Every epoch bump of every producer: a write that ended with an epoch-bump error (at
    its completion millisecond; a timed-out batch ends many writes in the same millisecond,
    so this stays small), and every ``producer-epoch`` event of a bump (between the
    statistics snapshot before it and the one that showed it)."""
    rows = (
        writes.where(F.col("error").isin(sorted(EPOCH_BUMP_ERRORS))
                     & F.col("complete_ns").isNotNull() & F.col("producer").isNotNull())
        .select("producer", F.floor(F.col("complete_ns") / MS).cast("long").alias("ms"))
        .distinct()
        .collect()
    )
    out: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for r in rows:
        out[int(r["producer"])].add((int(r["ms"]), int(r["ms"])))
    for producer, span in stats_bumps(events):
        out[producer].add(span)
    return {p: sorted(v) for p, v in out.items()}


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


def _span_sql(lo_ms: int, hi_ms: int) -> str:
    return f"named_struct('lo', {int(lo_ms)}L, 'hi', {int(hi_ms)}L)"


def bump_between(bumps: Bumps, producer: Column, lo_ns: Column, hi_ns: Column) -> Column:
    """The earliest moment (ns, millisecond precision) within ``[lo_ns, hi_ns]`` at which
    the latest epoch bump of ``producer`` that may have happened inside it did, or null."""
    if not bumps:
        return F.lit(None).cast("long")
    # One SQL literal instead of a Column per bump: a synthetic or long run has thousands,
    # and each Column built from Python is a round trip to the JVM.
    entries = ", ".join(f"{int(p)}, array({', '.join(_span_sql(a, b) for a, b in spans)})"
                        for p, spans in sorted(bumps.items()))
    arr = F.expr(f"map({entries})")[producer]
    lo = F.floor(lo_ns / MS)
    hi = F.floor(hi_ns / MS)
    inside = F.filter(arr, lambda t: (t["lo"] <= hi) & (t["hi"] >= lo))
    starts = F.transform(inside, lambda t: F.greatest(t["lo"], lo))
    return (F.array_max(starts) * F.lit(MS)).cast("long")
