"""Identity-based checks: one shuffle of writes and reads by (producer, seq), then three
hash aggregations on that partitioning (no further exchange).

Level 1 groups by (identity, topic, partition, offset): a write and the reads at its
acknowledged offset meet in one group. Level 2 groups by (identity, topic, partition), and
level 3 by identity. From the last level come lost/unseen (stalled-lso: stalled.py),
duplicate, offset-mismatch,
failed-visible, unexpected (records with no attempt), aborted-read, read-before-write; and
the input of the reorder check (where the log stores each acknowledged write: the drain's
read in its own partition, a live reader's only where the drain did not read it fully).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract.anomalies import READ_BEFORE_WRITE_SLACK_NS
from contract.schemas import DRAIN_READER
from contract.settings import READ_COMMITTED, Settings

from .append_bound import with_append_bound
from .epochs import with_bump
from .rows import anomaly_rows, flag_kinds
from .stalled import as_stalled

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
    partitions: int  # shuffle partitions for the identity exchange
    topics: list[str] = field(default_factory=list)  # every topic in the history
    readers: list[str] = field(default_factory=list)  # every reader in the history
    # the producers' epoch bumps (checkers/epochs.py), None when there are none
    epoch_bumps: DataFrame | None = None
    # (producer, seq, held) of the writes behind a stuck last stable offset (stalled.py)
    held: DataFrame | None = None


def _tp_key(topic: Column, partition: Column) -> Column:
    return F.concat_ws(":", topic, partition.cast("string"))


# Aggregation buffers must be fixed-width for Spark's hash aggregation (strings or structs
# turn it into a sort aggregation of the whole history), so topics and transaction outcomes
# travel as small integers and are decoded on the few anomaly rows.
TXN_CODES = {"committed": 1, "unknown": 2, "aborted": 3}


def _code(col: Column, codes: dict[str, int]) -> Column:
    expr = F.lit(None).cast("int")
    for name, code in codes.items():
        expr = F.when(col == name, F.lit(code)).otherwise(expr)
    return expr


def _map(pairs: Mapping[Any, Any]) -> Column | None:
    items: list[Column] = []
    for k, v in pairs.items():
        items += [F.lit(k), F.lit(v)]
    return F.create_map(*items) if items else None


#: Up to this many names an index is a CASE over them; beyond it, a map lookup.
_CASE_NAMES = 64


def topic_id(topics: list[str], col: Column) -> Column:
    """A topic's (or any name's) index in ``topics`` (an int, for hash aggregation).

    A CASE over a few names: Sail looks a string up in a literal map about a hundred times
    slower (3 s per scan of 11M reads), and the id is computed for every row."""
    if not topics:
        return F.lit(None).cast("int")
    if len(topics) > _CASE_NAMES:
        return F.create_map(*[F.lit(x) for i, t in enumerate(topics) for x in (t, i)])[col]
    expr = F.when(col == topics[0], F.lit(0))
    for i, t in enumerate(topics[1:], 1):
        expr = expr.when(col == t, F.lit(i))
    return expr


def topic_name(topics: list[str], col: Column) -> Column:
    m = _map({i: t for i, t in enumerate(topics)})
    return m[col] if m is not None else F.lit(None).cast("string")


def identity_table(writes: DataFrame, reads: DataFrame, inp: IdentityInputs) -> DataFrame:
    """One row per identity with everything the identity checks need."""
    tid = topic_id(inp.topics, F.col("topic")).alias("tid")
    w = writes.where(F.col("producer").isNotNull() & F.col("seq").isNotNull()).select(
        "producer", "seq", tid, "partition", "offset",
        F.lit(1).alias("is_w"),
        _rank(F.col("outcome")).alias("w_rank"),
        F.col("complete_ns"),
        F.col("invoke_ns"),
        _code(F.col("txn_outcome"), TXN_CODES).alias("txn"),
        F.lit(0).alias("is_r"),
        F.lit(0).alias("rc_r"),
        F.lit(0).alias("dr_r"),
        F.lit(None).cast("long").alias("read_ns"),
    )
    r = reads.where(
        F.col("valid") & F.col("producer").isNotNull() & F.col("seq").isNotNull()
    ).select(
        "producer", "seq", tid, "partition", "offset",
        F.lit(0).alias("is_w"),
        F.lit(None).cast("int").alias("w_rank"),
        F.lit(None).cast("long").alias("complete_ns"),
        F.lit(None).cast("long").alias("invoke_ns"),
        F.lit(None).cast("int").alias("txn"),
        F.lit(1).alias("is_r"),
        read_committed_expr(inp.settings).cast("int").alias("rc_r"),
        (F.col("reader") == DRAIN_READER).cast("int").alias("dr_r"),
        F.col("read_ns"),
    )
    u = w.unionByName(r).repartition(inp.partitions, "producer", "seq")

    lvl1 = u.groupBy("producer", "seq", "tid", "partition", "offset").agg(
        F.max("is_w").alias("has_w"),
        F.max("w_rank").alias("w_rank"),
        F.max("complete_ns").alias("complete_ns"),
        F.min("invoke_ns").alias("invoke_ns"),
        F.max("txn").alias("txn"),
        F.sum("is_w").alias("n_w"),
        F.sum("is_r").alias("n_r"),
        F.sum("rc_r").alias("rc_r"),
        F.max("dr_r").alias("dr_r"),
        F.min("read_ns").alias("read_ns"),
    )
    read_here = F.col("n_r") > 0
    lvl2 = lvl1.groupBy("producer", "seq", "tid", "partition").agg(
        F.max("has_w").alias("has_w"),
        F.max("w_rank").alias("w_rank"),
        F.max("complete_ns").alias("complete_ns"),
        F.min("invoke_ns").alias("invoke_ns"),
        F.max("txn").alias("txn"),
        F.max(F.when(F.col("has_w") == 1, F.col("offset"))).alias("w_offset"),
        F.sum("n_w").alias("n_w"),
        F.sum("n_r").alias("n_r"),
        F.sum("rc_r").alias("rc_r"),
        F.sum(F.when(read_here, 1).otherwise(0)).alias("n_pos"),
        F.max(
            F.when(read_here & (F.col("has_w") == 1) & F.col("offset").isNotNull(), 1).otherwise(0)
        ).alias("at_acked"),
        F.min(F.when(read_here, F.col("offset"))).alias("min_read_off"),
        F.min(F.when(F.col("dr_r") == 1, F.col("offset"))).alias("min_drain_off"),
        F.min("read_ns").alias("read_ns"),
        # first read of the copy stored last (highest offset read): the latest copy
        F.max_by("read_ns", F.when(read_here, F.col("offset"))).alias("last_copy_ns"),
        F.max(F.when(read_here, F.col("offset"))).alias("last_copy_off"),
    )
    has_w = F.col("has_w") == 1
    read_there = F.col("n_pos") > 0
    return lvl2.groupBy("producer", "seq").agg(
        F.max("w_rank").alias("w_rank"),
        F.max("complete_ns").alias("complete_ns"),
        F.min("invoke_ns").alias("invoke_ns"),
        F.max("txn").alias("txn"),
        F.max(F.when(has_w, F.col("tid"))).alias("w_tid"),
        F.max(F.when(has_w, F.col("partition"))).alias("w_partition"),
        F.max("w_offset").alias("w_offset"),
        F.sum("n_w").alias("n_w"),
        F.sum("n_r").alias("n_r"),
        F.sum("rc_r").alias("rc_r"),
        F.sum("n_pos").alias("n_pos"),
        F.max("at_acked").alias("at_acked"),
        # where the log stores it (for reorder): the drain's read in the write's own
        # partition; a live reader's read only where the drain did not read the partition to
        # its end (a record only live readers saw in a complete partition vanished with a
        # truncated tail: its old offset says nothing about the order of the log that is)
        F.min(F.when(has_w, F.coalesce(
            F.col("min_drain_off"),
            F.when(~complete_tp(inp, F.col("tid"), F.col("partition")),
                   F.col("min_read_off"))))).alias("stored_off"),
        # somewhere it was read (for records no attempt produced; examples list the reads)
        F.min(F.when(read_there, F.col("tid"))).alias("r_tid"),
        F.min(F.when(read_there, F.col("partition"))).alias("r_partition"),
        F.min(F.when(read_there, F.col("min_read_off"))).alias("r_offset"),
        F.min("read_ns").alias("read_ns"),
        F.max("last_copy_ns").alias("last_copy_ns"),
        F.max("last_copy_off").alias("last_copy_off"),
        # where a reader read it in a partition the drain read completely without it: a
        # vanished record (the drain's complete read holds every record the log still has)
        F.min(F.when(read_there & F.col("min_drain_off").isNull()
                     & complete_tp(inp, F.col("tid"), F.col("partition")),
                     F.col("min_read_off"))).alias("van_off"),
    )


def outcome_name(rank: Column) -> Column:
    """A write's strongest outcome rank back to its name."""
    return F.when(rank == OK, "ok").when(rank == 1, "info").when(rank == FAIL, "fail")


def complete_tp(inp: IdentityInputs, tid: Column, partition: Column) -> Column:
    """True where the drain read this topic-partition to its end."""
    if not inp.complete_partitions:
        return F.lit(False)
    return _tp_key(topic_name(inp.topics, tid), partition).isin(inp.complete_partitions)


def identity_anomalies(ident: DataFrame, inp: IdentityInputs, acks: DataFrame) -> DataFrame:
    """Anomaly rows of the identity checks: one projection of the identity table that lists
    the kinds each identity shows, exploded (an identity can be several kinds at once).
    ``acks``: append_bound.acknowledged of the writes."""
    ok = F.col("w_rank") == OK
    has_write = F.col("n_w") > 0
    visible = ok & (F.col("txn").isNull() | (F.col("txn") == TXN_CODES["committed"]))
    read = F.col("n_r") > 0
    topic = topic_name(inp.topics, F.col("w_tid"))
    complete = complete_tp(inp, F.col("w_tid"), F.col("w_partition"))
    kinds: list[tuple[Column, Column | str]] = [
        (visible & ~read, F.when(complete, "lost").otherwise("unseen")),
        (has_write & (F.col("w_rank") != FAIL) & F.col("van_off").isNotNull()
         & (F.col("txn").isNull() | (F.col("txn") == TXN_CODES["committed"])), "vanished"),
        (has_write & (F.col("n_pos") >= 2), "duplicate"),
        (ok & F.col("w_offset").isNotNull() & read & (F.col("at_acked") == 0),
         "offset-mismatch"),
        ((F.col("w_rank") == FAIL) & read, "failed-visible"),
        (~has_write, "unexpected"),
        ((F.col("txn") == TXN_CODES["aborted"]) & (F.col("rc_r") > 0), "aborted-read"),
        (has_write & read & (F.col("read_ns") < F.col("invoke_ns")
                             - F.lit(READ_BEFORE_WRITE_SLACK_NS)), "read-before-write"),
    ]
    # librdkafka#4953 resends only batches in flight at the bump: the bump lies after the
    # first attempt, before the acknowledgement (the resend's, so the acknowledged offset is
    # the later copy's) and before the later copy's append
    flagged = flag_kinds(ident, kinds).withColumn("tid", F.col("w_tid")).withColumn(
        "partition", F.col("w_partition"))
    dup = F.col("kind") == "duplicate"
    flagged = _append_bound(flagged, inp, acks, F.when(dup, F.col("last_copy_off")))
    resent_ack = (F.col("w_rank") != OK) | F.col("w_offset").eqNullSafe(F.col("last_copy_off"))
    flagged = _with_bump(flagged, inp, F.col("invoke_ns"),
                         F.least(F.when(F.col("w_rank") == OK, F.col("complete_ns")),
                                 F.col("last_copy_ns"), F.col("append_bound_ns")),
                         dup & resent_ack)
    kind = F.col("kind")
    no_write = kind == "unexpected"
    outcome = outcome_name(F.col("w_rank"))
    return as_stalled(anomaly_rows(
        flagged, kind,
        producer=F.col("producer"), seq=F.col("seq"),
        topic=F.when(no_write, topic_name(inp.topics, F.col("r_tid"))).otherwise(topic),
        partition=F.when(no_write, F.col("r_partition")).otherwise(F.col("w_partition")),
        offset=F.when(no_write, F.col("r_offset")).otherwise(F.col("w_offset")),
        read_offset=F.when(no_write, F.col("r_offset"))
        .when(kind == "vanished", F.col("van_off")).otherwise(F.col("stored_off")),
        complete_ns=F.col("complete_ns"), event_ns=F.col("read_ns"), outcome=outcome,
        n=F.when(no_write, F.col("n_pos")).when(kind == "aborted-read", F.col("rc_r"))
        .otherwise(F.lit(1)),
        epoch_bump_ns=F.col("epoch_bump_ns"),
        copy_offset=F.when(kind == "duplicate", F.col("last_copy_off")),
        # the write's first attempt: read-before-write's evidence, and lost's (a leader
        # change while it was in flight, confluent-kafka-go#921)
        invoke_ns=F.when(kind.isin("read-before-write", "lost"), F.col("invoke_ns")),
    ), inp.held)


def _bumps(inp: IdentityInputs) -> DataFrame | None:
    """The epoch bumps a record can be asked about: idempotent producers only (without
    idempotence there is no epoch to bump)."""
    return inp.epoch_bumps if inp.settings.idempotence else None


def _append_bound(df: DataFrame, inp: IdentityInputs, acks: DataFrame,
                  offset: Column) -> DataFrame:
    """with_append_bound, only where an epoch bump can be asked about (_with_bump): the
    bound serves nothing else, and its scan of the acknowledgements is not free."""
    if _bumps(inp) is None:
        return df.withColumn("append_bound_ns", F.lit(None).cast("long"))
    return with_append_bound(df, acks, offset)


def _with_bump(df: DataFrame, inp: IdentityInputs, lo: Column, hi: Column,
               ask: Column) -> DataFrame:
    """``epoch_bump_ns``: an epoch bump of the row's producer between ``lo`` and ``hi``."""
    return with_bump(df, _bumps(inp), lo, hi, ask)


def reorder_anomalies(ident: DataFrame, inp: IdentityInputs, acks: DataFrame) -> DataFrame:
    """Acknowledged writes stored (first read in their partition) after a write of the same
    producer with a higher seq; one window per (producer, topic, partition). An epoch bump
    of the producer after the write's first attempt and before both its acknowledgement (at
    the stored offset) and that offset's append is noted (librdkafka#4953).

    The window sorts every stored write, so it carries only its keys; the writes it finds
    (few) get their times back from the identity table, in a hash join built on them that
    keeps the table's partitioning (no exchange of the table)."""
    topics = inp.topics
    from pyspark.sql.window import Window

    stored = ident.where((F.col("w_rank") == OK) & F.col("stored_off").isNotNull()).select(
        "producer", "seq", F.col("w_tid").alias("tid"),
        F.col("w_partition").alias("partition"), "stored_off",
    )
    # The running maximum of the seqs stored up to and including a write: above the
    # write's own seq exactly when a write stored before it has a higher one (a
    # (producer, partition) stores each seq once). One long, not a struct of two: Sail's
    # window over a struct took four times as long; the few writes found look up where
    # that higher seq was stored.
    win = (
        Window.partitionBy("producer", "tid", "partition")
        .orderBy("stored_off", "seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    found = stored.select("*", F.max("seq").over(win).alias("prev_seq")).where(
        F.col("prev_seq") > F.col("seq"))
    prev = stored.select("producer", F.col("seq").alias("prev_seq"), "tid", "partition",
                         F.col("stored_off").alias("prev_off"))
    found = prev.join(found.hint("shuffle_hash"), ["producer", "prev_seq", "tid", "partition"])
    times = ident.select("producer", "seq", "w_offset", "complete_ns", "read_ns", "invoke_ns")
    found = times.join(found.hint("shuffle_hash"), ["producer", "seq"])
    # as for a duplicate: the bump after the first attempt, before the acknowledgement of
    # the copy that is stored (the resend's) and before that copy's append
    found = _append_bound(found, inp, acks, F.col("stored_off"))
    found = _with_bump(found, inp, F.col("invoke_ns"),
                       F.least(F.col("complete_ns"), F.col("read_ns"), F.col("append_bound_ns")),
                       F.col("w_offset").eqNullSafe(F.col("stored_off")))
    return anomaly_rows(
        found, "reorder", producer=F.col("producer"), seq=F.col("seq"),
        topic=topic_name(topics, F.col("tid")),
        partition=F.col("partition"), offset=F.col("w_offset"), read_offset=F.col("stored_off"),
        prev_offset=F.col("prev_off"), other_producer=F.col("producer"),
        other_seq=F.col("prev_seq"), complete_ns=F.col("complete_ns"),
        event_ns=F.col("read_ns"), outcome=F.lit("ok"),
        epoch_bump_ns=F.col("epoch_bump_ns"),
    )
