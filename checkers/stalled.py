"""stalled-lso: committed writes a read_committed reader can never reach, because the
partition's last stable offset (LSO) is stuck at a transaction its producer saw decided.

The LSO of a partition is the first offset of the oldest transaction its leader holds open.
A transaction stays open on a replica until that replica holds its COMMIT or ABORT marker,
so the LSO stops below the high watermark (HW) legitimately only while a producer has a
transaction open there. The final drain of a transactional run records both per partition
(its end event's ``last_stable_offsets`` and ``high_watermarks``, read after every producer
stopped and settled its last transaction). A drain that found LSO < HW, with a record at the
LSO whose producer learned its transaction's outcome (committed or aborted), shows a leader
that lacks that transaction's marker (KAFKA-20716: an unclean election to a follower that
fetched the records but not the marker): every committed write at or above the LSO and below
the HW is in the log and unreadable for read_committed readers.

Which writes are there: those acknowledged at an offset in [LSO, HW), each the last write
acknowledged at its offset (an earlier one at the same offset was truncated and its offset
reused). These are few (one stalled range), so they are found on the driver's side of a
small query and handed to the identity check as a broadcast table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.events import END, PHASE, Event

from .observations import PartitionHistory

DECIDED = ("committed", "aborted")


@dataclass(frozen=True)
class Stall:
    """A partition the read_committed drain found held: its LSO below its HW, and the write
    acknowledged at the LSO part of a transaction its producer saw decided."""

    topic: str
    partition: int
    lso: int
    hw: int
    txn: str  # the decided transaction whose record lies at the LSO
    outcome: str
    txn_first_ns: int  # that transaction's first attempt
    unclean_ns: int | None  # the first unclean election of the partition after it, if any

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    def brief(self) -> dict[str, Any]:
        return {"partition": self.key, "last_stable_offset": self.lso,
                "high_watermark": self.hw, "txn": self.txn, "txn_outcome": self.outcome,
                "unclean_election_ns": self.unclean_ns}


def held_ranges(events: list[Event]) -> dict[str, tuple[int, int]]:
    """``"topic:partition"`` -> (LSO, HW) where the read_committed drain's end event found
    the LSO below the HW."""
    out: dict[str, tuple[int, int]] = {}
    for e in events:
        d = e.detail
        if e.kind != PHASE or e.phase != END or d.get("name") != "drain":
            continue
        if d.get("isolation_level") != "read_committed":
            continue
        hws, lsos = d.get("high_watermarks") or {}, d.get("last_stable_offsets") or {}
        for key, lso in lsos.items():
            hw = hws.get(key)
            if isinstance(lso, int) and isinstance(hw, int) and 0 <= lso < hw:
                out[key] = (lso, hw)
    return out


def _last_acks(writes: DataFrame) -> DataFrame:
    """Acknowledged writes with an offset, each the last one acknowledged at its offset."""
    acked = writes.where((F.col("outcome") == "ok") & F.col("offset").isNotNull())
    latest = Window.partitionBy("topic", "partition", "offset").orderBy(
        F.col("complete_ns").desc_nulls_last())
    return acked.select("*", F.row_number().over(latest).alias("rn")).where(F.col("rn") == 1)


def _in_ranges(ranges: dict[str, tuple[int, int]], at_lso: bool) -> Any:
    cond = F.lit(False)
    for key, (lso, hw) in ranges.items():
        topic, _, part = key.rpartition(":")
        here = (F.col("topic") == topic) & (F.col("partition") == int(part))
        off = (F.col("offset") == lso) if at_lso else (
            (F.col("offset") >= lso) & (F.col("offset") < hw))
        cond = cond | (here & off)
    return cond


def stalls(writes: DataFrame, events: list[Event], history: PartitionHistory) -> list[Stall]:
    """The held partitions whose record at the LSO is a decided transaction's."""
    ranges = held_ranges(events)
    if not ranges:
        return []
    at = (_last_acks(writes).where(_in_ranges(ranges, True)
                                   & F.col("txn_outcome").isin(*DECIDED))
          .select("topic", "partition", "txn", "txn_outcome").collect())
    if not at:
        return []
    txns = sorted({r["txn"] for r in at if r["txn"] is not None})
    first = {r["txn"]: r["first"] for r in writes.where(F.col("txn").isin(*txns))
             .groupBy("txn").agg(F.min("invoke_ns").alias("first")).collect()}
    out: list[Stall] = []
    for r in at:
        key = f"{r['topic']}:{r['partition']}"
        lso, hw = ranges[key]
        began = int(first.get(r["txn"]) or 0)
        out.append(Stall(r["topic"], int(r["partition"]), lso, hw, r["txn"],
                         r["txn_outcome"], began, _unclean_after(history, key, began)))
    return out


def unclean_elections(history: PartitionHistory) -> dict[str, list[int]]:
    """``"topic:partition"`` -> when the observer first saw a replica outside the partition's
    last ISR become its leader (few: one per unclean election)."""
    out: dict[str, list[int]] = {}
    for key, changes in history.by_tp.items():
        for c in changes:
            if (c.leader >= 0 and c.prev_isr is not None and c.leader != c.prev_leader
                    and c.leader not in c.prev_isr):
                out.setdefault(key, []).append(c.ts_ns)
    return out


def elected_between(elections: dict[str, list[int]], lo: Any, hi: Any) -> Any:
    """True on rows of a partition with an unclean election after ``lo`` and before
    ``hi`` (columns)."""
    tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
    out = F.lit(False)
    for key, times in sorted(elections.items()):
        for ts in times:
            out = out | ((tp == key) & (lo < F.lit(ts)) & (hi > F.lit(ts)))
    return F.coalesce(out, F.lit(False))


def _unclean_after(history: PartitionHistory, key: str, after_ns: int) -> int | None:
    """When the observer first saw a replica outside the partition's last ISR become its
    leader after ``after_ns``."""
    for c in history.between(key, after_ns + 1, 2**63 - 1):
        if (c.leader >= 0 and c.prev_isr is not None and c.leader != c.prev_leader
                and c.leader not in c.prev_isr):
            return c.ts_ns
    return None


def held_writes(writes: DataFrame, found: list[Stall]) -> DataFrame | None:
    """(producer, seq) of the acknowledged writes in the stalled ranges (the last one
    acknowledged at each offset), or None without a stall."""
    if not found:
        return None
    ranges = {s.key: (s.lso, s.hw) for s in found}
    return (_last_acks(writes).where(_in_ranges(ranges, False))
            .select("producer", "seq", F.lit(True).alias("held")).distinct())


def as_stalled(rows: DataFrame, held: DataFrame | None) -> DataFrame:
    """Identity anomaly rows with ``lost`` (never read) and ``vanished`` (read live before
    the stable offset stuck, gone from the drain's read) turned into ``stalled-lso`` for
    held writes: they are in the log, not gone."""
    if held is None:
        return rows
    joined = rows.join(F.broadcast(held), ["producer", "seq"], "left")
    kind = F.when(F.col("kind").isin("lost", "vanished")
                  & F.coalesce(F.col("held"), F.lit(False)),
                  F.lit("stalled-lso")).otherwise(F.col("kind"))
    return joined.withColumn("kind", kind).drop("held").select(*rows.columns)
