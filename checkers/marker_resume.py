"""Where a restart-mode reader resumed right after a transaction marker (librdkafka#3400).

A consumer's close commits its stored offsets. librdkafka stores a control record's offset
+ 1 when it handles the record; during close it handles the control records already in its
fetch queue while it drops the data records before them, which the application never got.
The new consumer of the group then resumes right after a marker, past records nobody
returned to it. What the history keeps of that: the reader's first read of the partition
after its restart lies at an offset R whose predecessor R - 1 holds no record (no reader,
the drain included, read one there and no write was acknowledged there: in a run with
transactional producers, a control record), and the step to R skipped records (the
poll-skip row itself).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract.settings import Settings

from .history import read_order


def resumed_after_marker(spark: SparkSession, reads: DataFrame, writes: DataFrame,
                         restarts: dict[str, list[int]], settings: Settings) -> list[str]:
    """``"reader:topic:partition:offset"`` of each restart-mode reader's first read of a
    partition after one of its recorded restarts (``restarts``: known.restart_polls) whose
    offset follows one that holds no record (see the module). Empty without transactional
    producers (no control records) or restarts: no job runs."""
    rows = []
    for key, polls in restarts.items():
        reader, _, where = key.partition(":")
        topic, _, partition = where.rpartition(":")
        if settings.reader_modes.get(reader) != "restart" or not partition.isdigit():
            continue
        rows += [(reader, topic, int(partition), int(p)) for p in polls]
    if not settings.transactional or not rows:
        return []
    marks = spark.createDataFrame(rows, "reader string, topic string, partition int, rpoll long")
    mine = reads.filter(F.col("reader").isin(sorted({r[0] for r in rows})))
    # the first read after each restart: the least in read order above the restart's poll
    first = (mine.join(F.broadcast(marks), ["reader", "topic", "partition"])
             .filter(F.col("poll") > F.col("rpoll"))
             .groupBy("reader", "topic", "partition", "rpoll")
             .agg(F.min(F.struct(*read_order())).alias("at"))
             .select("reader", "topic", "partition", F.col("at.offset").alias("offset"))
             .filter(F.col("offset") > 0))
    held = (reads.select("topic", "partition", "offset")
            .unionByName(writes.filter(F.col("offset").isNotNull())
                         .select("topic", "partition", "offset")))
    before = first.select("*", (F.col("offset") - 1).alias("below"))
    empty = before.join(held.withColumnRenamed("offset", "below"),
                        ["topic", "partition", "below"], "left_anti")
    return sorted({f"{r['reader']}:{r['topic']}:{r['partition']}:{r['offset']}"
                   for r in empty.collect()})
