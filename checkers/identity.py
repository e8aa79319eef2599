"""Identity-based checks: one shuffle of writes and reads by (producer, seq), then three
hash aggregations on that partitioning (no further exchange).

Level 1 groups by (identity, topic, partition, offset): a write and the reads at its
acknowledged offset meet in one group. Level 2 groups by (identity, topic, partition), and
level 3 by identity. From the last level come lost/unseen, duplicate, offset-mismatch,
failed-visible, unexpected (records with no attempt), aborted-read; and the input of the
reorder check (the first offset each acknowledged write was read at in its own partition).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .config import READ_COMMITTED, Settings
from .rows import anomaly_rows

# Outcome ranks: when one identity has several attempts, the strongest outcome wins.
_RANK = {"fail": 0, "info": 1, "ok": 2}
OK = 2
FAIL = 0


def _rank(col: Column) -> Column:
    expr = F.lit(None)
    for name, rank in _RANK.items():
        expr = F.when(col == name, F.lit(rank)).otherwise(expr)
    return expr.cast("int")


def read_committed_expr(settings: Settings) -> Column:
    """True for reads by a read_committed reader (per-reader setting, else the default)."""
    default = settings.default_isolation == READ_COMMITTED
    expr: Column = F.lit(default)
    for reader, level in settings.reader_isolation.items():
        expr = F.when(F.col("reader") == reader, F.lit(level == READ_COMMITTED)).otherwise(expr)
    return expr


@dataclass(frozen=True)
class IdentityInputs:
    """What the identity checks need besides the tables."""

    settings: Settings
    complete_partitions: list[str]  # "topic:partition" keys the drain read completely
    power_loss_until: dict[str, int]  # "topic:partition" -> latest covering power loss (ns)
    partitions: int  # shuffle partitions for the identity exchange


def _tp_key(topic: Column, partition: Column) -> Column:
    return F.concat_ws(":", topic, partition.cast("string"))


def identity_table(writes: DataFrame, reads: DataFrame, inp: IdentityInputs) -> DataFrame:
    """One row per identity with everything the identity checks need."""
    w = writes.where(F.col("producer").isNotNull() & F.col("seq").isNotNull()).select(
        "producer", "seq", "topic", "partition", "offset",
        F.lit(1).alias("is_w"),
        _rank(F.col("outcome")).alias("w_rank"),
        F.col("complete_ns"),
        F.col("txn_outcome"),
        F.lit(0).alias("is_r"),
        F.lit(0).alias("rc_r"),
        F.lit(None).cast("long").alias("read_ns"),
    )
    r = reads.where(
        F.col("valid") & F.col("producer").isNotNull() & F.col("seq").isNotNull()
    ).select(
        "producer", "seq", "topic", "partition", "offset",
        F.lit(0).alias("is_w"),
        F.lit(None).cast("int").alias("w_rank"),
        F.lit(None).cast("long").alias("complete_ns"),
        F.lit(None).cast("string").alias("txn_outcome"),
        F.lit(1).alias("is_r"),
        read_committed_expr(inp.settings).cast("int").alias("rc_r"),
        F.col("read_ns"),
    )
    u = w.unionByName(r).repartition(inp.partitions, "producer", "seq")

    lvl1 = u.groupBy("producer", "seq", "topic", "partition", "offset").agg(
        F.max("is_w").alias("has_w"),
        F.max("w_rank").alias("w_rank"),
        F.max("complete_ns").alias("complete_ns"),
        F.max("txn_outcome").alias("txn_outcome"),
        F.sum("is_w").alias("n_w"),
        F.sum("is_r").alias("n_r"),
        F.sum("rc_r").alias("rc_r"),
        F.min("read_ns").alias("read_ns"),
    )
    read_here = F.col("n_r") > 0
    lvl2 = lvl1.groupBy("producer", "seq", "topic", "partition").agg(
        F.max("has_w").alias("has_w"),
        F.max("w_rank").alias("w_rank"),
        F.max("complete_ns").alias("complete_ns"),
        F.max("txn_outcome").alias("txn_outcome"),
        F.max(F.when(F.col("has_w") == 1, F.col("offset"))).alias("w_offset"),
        F.sum("n_w").alias("n_w"),
        F.sum("n_r").alias("n_r"),
        F.sum("rc_r").alias("rc_r"),
        F.sum(F.when(read_here, 1).otherwise(0)).alias("n_pos"),
        F.max(
            F.when(read_here & (F.col("has_w") == 1) & F.col("offset").isNotNull(), 1).otherwise(0)
        ).alias("at_acked"),
        F.min(F.when(read_here, F.col("offset"))).alias("min_read_off"),
        F.min("read_ns").alias("read_ns"),
    )
    has_w = F.col("has_w") == 1
    return lvl2.groupBy("producer", "seq").agg(
        F.max("w_rank").alias("w_rank"),
        F.max("complete_ns").alias("complete_ns"),
        F.max("txn_outcome").alias("txn_outcome"),
        F.max(F.when(has_w, F.col("topic"))).alias("w_topic"),
        F.max(F.when(has_w, F.col("partition"))).alias("w_partition"),
        F.max("w_offset").alias("w_offset"),
        F.sum("n_w").alias("n_w"),
        F.sum("n_r").alias("n_r"),
        F.sum("rc_r").alias("rc_r"),
        F.sum("n_pos").alias("n_pos"),
        F.max("at_acked").alias("at_acked"),
        # first read in the write's own partition: where the log stored it (for reorder)
        F.min(F.when(has_w, F.col("min_read_off"))).alias("stored_off"),
        F.min(F.when(F.col("n_pos") > 0, F.struct("topic", "partition", "min_read_off")))
        .alias("first_pos"),
        F.min("read_ns").alias("read_ns"),
    )


def identity_anomalies(ident: DataFrame, inp: IdentityInputs) -> DataFrame:
    """Anomaly rows of the identity checks: one projection of the identity table that lists
    the kinds each identity shows, exploded (an identity can be several kinds at once)."""
    ok = F.col("w_rank") == OK
    has_write = F.col("n_w") > 0
    visible = ok & (F.col("txn_outcome").isNull() | (F.col("txn_outcome") == "committed"))
    read = F.col("n_r") > 0
    tp = _tp_key(F.col("w_topic"), F.col("w_partition"))
    complete = tp.isin(inp.complete_partitions) if inp.complete_partitions else F.lit(False)
    if inp.power_loss_until:
        items = []
        for key, until in inp.power_loss_until.items():
            items += [F.lit(key), F.lit(until)]
        until_col = F.create_map(*items)[tp]
        excused_loss = until_col.isNotNull() & (F.col("complete_ns") <= until_col)
    else:
        excused_loss = F.lit(False)
    kinds = F.array_compact(F.array(
        F.when(visible & ~read, F.when(complete, "lost").otherwise("unseen")),
        F.when(has_write & (F.col("n_pos") >= 2), "duplicate"),
        F.when(ok & F.col("w_offset").isNotNull() & read & (F.col("at_acked") == 0),
               "offset-mismatch"),
        F.when((F.col("w_rank") == FAIL) & read, "failed-visible"),
        F.when(~has_write, "unexpected"),
        F.when((F.col("txn_outcome") == "aborted") & (F.col("rc_r") > 0), "aborted-read"),
    ))
    flagged = ident.select("*", F.explode(kinds).alias("kind"))
    kind = F.col("kind")
    no_write = kind == "unexpected"
    outcome = (
        F.when(F.col("w_rank") == OK, "ok").when(F.col("w_rank") == 1, "info")
        .when(F.col("w_rank") == FAIL, "fail")
    )
    return anomaly_rows(
        flagged, kind,
        producer=F.col("producer"), seq=F.col("seq"),
        topic=F.when(no_write, F.col("first_pos.topic")).otherwise(F.col("w_topic")),
        partition=F.when(no_write, F.col("first_pos.partition")).otherwise(F.col("w_partition")),
        offset=F.when(no_write, F.col("first_pos.min_read_off")).otherwise(F.col("w_offset")),
        read_offset=F.when(no_write, F.col("first_pos.min_read_off"))
        .otherwise(F.col("stored_off")),
        complete_ns=F.col("complete_ns"), event_ns=F.col("read_ns"), outcome=outcome,
        n=F.when(no_write, F.col("n_pos")).when(kind == "aborted-read", F.col("rc_r"))
        .otherwise(F.lit(1)),
        excused=(kind == "lost") & excused_loss,
    )


def reorder_anomalies(ident: DataFrame) -> DataFrame:
    """Acknowledged writes stored (first read in their partition) after a write of the same
    producer with a higher seq; one window per (producer, topic, partition)."""
    from pyspark.sql.window import Window

    stored = ident.where((F.col("w_rank") == OK) & F.col("stored_off").isNotNull()).select(
        "producer", "seq", F.col("w_topic").alias("topic"),
        F.col("w_partition").alias("partition"), "stored_off", "w_offset", "complete_ns",
        "read_ns",
    )
    win = (
        Window.partitionBy("producer", "topic", "partition")
        .orderBy("stored_off", "seq")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    before = stored.withColumn("prev_max", F.max(F.struct("seq", "stored_off")).over(win))
    found = before.where(F.col("prev_max.seq") > F.col("seq"))
    return anomaly_rows(
        found, "reorder", producer=F.col("producer"), seq=F.col("seq"), topic=F.col("topic"),
        partition=F.col("partition"), offset=F.col("w_offset"), read_offset=F.col("stored_off"),
        prev_offset=F.col("prev_max.stored_off"), other_producer=F.col("producer"),
        other_seq=F.col("prev_max.seq"), complete_ns=F.col("complete_ns"),
        event_ns=F.col("read_ns"), outcome=F.lit("ok"),
    )
