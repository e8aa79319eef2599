"""torn-transaction: transactions visible in part.

A transactional producer's records are committed or aborted together by the coordinator's
markers, and librdkafka sends EndTxn(COMMIT) only after every record of the transaction was
acknowledged; so whatever the producer was told, a read_committed reader sees all of a
transaction's records or none. A transaction that is visible in part was decided by
something other than its producer's own commit: a stale EndTxn of an earlier transaction
that arrived once this one had begun (KAFKA-17754; librdkafka has no KIP-890 part 2, so the
coordinator cannot tell). The producer then hears that its commit failed and its abort too:
the outcome is ``unknown`` in the history, and only those transactions are examined here
(a partly visible aborted transaction is ``aborted-read``, a committed one ``lost``).

The transactions examined are few (unknown outcomes), so their writes are broadcast to
the persisted identity table: no exchange of the history.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.schemas import DRAIN_READER
from contract.settings import READ_COMMITTED

from .identity import TXN_CODES, IdentityInputs, complete_tp, outcome_name, topic_name
from .rows import anomaly_rows

UNKNOWN = "unknown"


def examinable(inp: IdentityInputs) -> bool:
    """Whether the run can show a torn transaction: transactional producers and a
    read_committed drain (what it did not read is then not visible)."""
    s = inp.settings
    return s.transactional and s.isolation(DRAIN_READER) == READ_COMMITTED


def torn_transactions(ident: DataFrame, writes: DataFrame, inp: IdentityInputs) -> DataFrame:
    """One row per write of a partly visible unknown-outcome transaction that a
    read_committed reader read; ``other_seq`` names a write of the same transaction that no
    such reader read (the lowest), ``invoke_ns`` the transaction's first attempt."""
    txn_of = F.broadcast(
        writes.where((F.col("txn_outcome") == UNKNOWN) & F.col("txn").isNotNull()
                     & F.col("producer").isNotNull() & F.col("seq").isNotNull())
        .groupBy("producer", "seq").agg(F.max("txn").alias("txn_id")))
    rows = ident.where(F.col("txn") == TXN_CODES[UNKNOWN]).join(txn_of, ["producer", "seq"])
    seen = F.col("rc_r") > 0
    unseen_here = ~seen & complete_tp(inp, F.col("w_tid"), F.col("w_partition"))
    per_txn = Window.partitionBy("producer", "txn_id")
    marked = rows.select(
        "*",
        F.sum(unseen_here.cast("int")).over(per_txn).alias("n_unseen"),
        F.min(F.when(unseen_here, F.col("seq"))).over(per_txn).alias("missing_seq"),
        F.min("invoke_ns").over(per_txn).alias("txn_invoke_ns"),
    )
    found = marked.where(seen & (F.col("n_unseen") > 0))
    return anomaly_rows(
        found, "torn-transaction",
        producer=F.col("producer"), seq=F.col("seq"),
        topic=topic_name(inp.topics, F.col("w_tid")), partition=F.col("w_partition"),
        offset=F.col("w_offset"), read_offset=F.col("stored_off"),
        other_producer=F.col("producer"), other_seq=F.col("missing_seq"),
        complete_ns=F.col("complete_ns"), event_ns=F.col("read_ns"),
        outcome=outcome_name(F.col("w_rank")),
        invoke_ns=F.col("txn_invoke_ns"), txn=F.col("txn_id"),
    )
