"""The history tables' columns and types (DESIGN.md §3), as pyarrow schemas.

The workloads write these, the checker reads them (its Spark schemas are derived from these in
``checkers/history.py``), the report and the test histories read and write them.
"""

from __future__ import annotations

import pyarrow as pa

#: ``history/writes.parquet``: one row per produce attempt.
WRITES_SCHEMA = pa.schema([
    ("op_id", pa.int64()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("invoke_ns", pa.int64()),
    ("complete_ns", pa.int64()),
    ("outcome", pa.string()),
    ("offset", pa.int64()),
    ("error", pa.string()),
    ("txn", pa.string()),
    ("txn_outcome", pa.string()),
])

#: ``history/reads.parquet``: one row per record read by any reader.
READS_SCHEMA = pa.schema([
    ("reader", pa.string()),
    ("mode", pa.string()),
    ("poll", pa.int64()),
    ("read_ns", pa.int64()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("valid", pa.bool_()),
    # The record this one was derived from (its ``kc-src`` header), for a
    # consume-transform-produce application's output; null otherwise.
    ("src_producer", pa.int32()),
    ("src_seq", pa.int64()),
    # The read's place among the records its consume() returned (0: the first), so that the
    # checker sees a poll's reads in the order the client gave them, not by offset. Null in
    # histories written before it was recorded.
    ("poll_index", pa.int32()),
])

#: ``reads.reader`` (and ``mode``) of the final drain: the reader that reads every partition to
#: its end after healing, so what it read is what the log holds.
DRAIN_READER = "drain"

#: ``history/observations.parquet``: the cluster observer's samples.
OBSERVATIONS_SCHEMA = pa.schema([
    ("ts_ns", pa.int64()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("leader", pa.int32()),
    ("isr", pa.list_(pa.int32())),
    ("replicas", pa.list_(pa.int32())),
    ("leader_epoch", pa.int32()),
    ("high_watermark", pa.int64()),
    ("log_end_offsets", pa.list_(pa.int64())),
])

#: Write outcomes (DESIGN.md §3): acknowledged, definitely not written, unknown.
OUTCOMES: tuple[str, ...] = ("ok", "fail", "info")

#: Table name (``history/<name>.parquet``) -> its schema.
TABLES: dict[str, pa.Schema] = {
    "writes": WRITES_SCHEMA,
    "reads": READS_SCHEMA,
    "observations": OBSERVATIONS_SCHEMA,
}
