"""Loading a run's history: the Parquet (or JSON-lines) tables as Spark DataFrames with the
contract's column types (contract.schemas, as Spark schemas), and the run phases of
events.jsonl (parsed by contract.events)."""

from __future__ import annotations

from typing import Any, overload

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from contract import schemas
from contract.events import CONSUMERS_STOPPED, END, PHASE, Event, parse_events

from .runfiles import RunDir

__all__ = ["OBSERVATIONS_SCHEMA", "READS_SCHEMA", "WRITES_SCHEMA", "Event", "drain_end",
           "load_table", "parse_events", "phase_window", "poll_index", "read_order",
           "spark_schema"]

_SCALARS: dict[str, DataType] = {
    "int32": IntegerType(), "int64": LongType(), "string": StringType(), "bool": BooleanType(),
}


def spark_type(t: pa.DataType) -> DataType:
    """The Spark type of a contract column's pyarrow type (the types the history uses)."""
    if pa.types.is_list(t):
        return ArrayType(spark_type(t.value_type))
    return _SCALARS[str(t)]


def spark_schema(schema: pa.Schema) -> StructType:
    """A contract table's schema (contract.schemas) as a Spark schema, all nullable."""
    return StructType([StructField(f.name, spark_type(f.type)) for f in schema])


WRITES_SCHEMA = spark_schema(schemas.WRITES_SCHEMA)
READS_SCHEMA = spark_schema(schemas.READS_SCHEMA)
OBSERVATIONS_SCHEMA = spark_schema(schemas.OBSERVATIONS_SCHEMA)


def poll_index() -> Column:
    """A read's place in its poll, -1 in a history that did not record it (there a poll's
    reads are taken in offset order, as before it was recorded)."""
    return F.coalesce(F.col("poll_index"), F.lit(-1))


def read_order() -> list[Column]:
    """The order of one reader's reads of a partition, on the reads table: by poll, within a
    poll as the client returned them (a re-fetch it returned after queued records comes
    after them though its offsets are lower), then by time and offset (a history without
    ``poll_index``). Every check that steps through a reader's reads uses this order."""
    return [F.col("poll"), poll_index(), F.col("read_ns"), F.col("offset")]


def _conform(df: DataFrame, schema: StructType) -> DataFrame:
    """Select the schema's columns with its types; absent columns become nulls."""
    present = set(df.columns)
    # SQL text, not Columns built in Python: fewer JVM round trips (see rows.anomaly_rows)
    return df.selectExpr(*[
        f"CAST({f'`{f.name}`' if f.name in present else 'NULL'} AS "
        f"{f.dataType.simpleString()}) AS `{f.name}`" for f in schema.fields])


@overload
def load_table(spark: SparkSession, run: RunDir, name: str, schema: StructType) -> DataFrame: ...


@overload
def load_table(spark: SparkSession, run: RunDir, name: str, schema: StructType, *,
               absent_as_none: bool) -> DataFrame | None: ...


def load_table(spark: SparkSession, run: RunDir, name: str, schema: StructType, *,
               absent_as_none: bool = False) -> DataFrame | None:
    """``history/<name>.parquet`` (file or directory of part files) or ``<name>.jsonl``.

    Only ``*.parquet`` files are read, so part files still being written (``.tmp``) are
    ignored; an absent or empty dataset is an empty table (or None with
    ``absent_as_none``, so callers can skip work).
    """
    parquet = f"history/{name}.parquet"
    jsonl = f"history/{name}.jsonl"
    if run.exists(parquet, spark):
        try:
            df = spark.read.option("pathGlobFilter", "*.parquet").parquet(run.uri(parquet))
            return _conform(df, schema)
        except Exception as exc:  # an empty directory has no schema to infer
            if "UNABLE_TO_INFER_SCHEMA" not in str(exc) and "Unable to infer" not in str(exc):
                raise
    elif run.exists(jsonl, spark):
        df = spark.read.schema(schema).json(run.uri(jsonl))
        return _conform(df, schema)
    return None if absent_as_none else spark.createDataFrame([], schema)


def phase_window(events: list[Event], name: str) -> tuple[int | None, int | None]:
    """(start, end) ns of a run phase such as ``workload``, None where not recorded."""
    start = end = None
    for e in events:
        if e.kind == PHASE and e.name == name:
            if e.phase == "start" and start is None:
                start = e.ts_ns
            elif e.phase == "end":
                end = e.ts_ns
    return start, end


def drain_end(events: list[Event]) -> Event | None:
    """The drain's end event (the last one, if the drain ran twice)."""
    found = None
    for e in events:
        if e.kind == PHASE and e.phase == END and e.name == "drain":
            found = e
    return found


def rebalances_of(events: list[Event], what: str) -> dict[str, list[tuple[int, int]]]:
    """``"reader:topic:partition"`` -> ``(poll, ts_ns)`` of the reader's recorded rebalances
    of the partition of one kind (``rebalance`` events ``what``: assigned, revoked, lost or
    restart; workloads/consumer.py). Malformed entries are skipped."""
    out: dict[str, list[tuple[int, int]]] = {}
    for e in events:
        d = e.detail
        if e.kind != "rebalance" or d.get("what") != what:
            continue
        try:
            reader, poll = str(d["reader"]), int(d["poll"])
            keys = [f"{reader}:{p}" for p in d.get("partitions") or []]
        except (KeyError, TypeError, ValueError):
            continue
        for key in keys:
            out.setdefault(key, []).append((poll, e.ts_ns))
    return out


def exit_codes(events: list[Event]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Producer name -> exit code (the workload's end event), and reader -> exit code
    (``consumers-stopped``)."""
    producers: dict[str, Any] = {}
    consumers: dict[str, Any] = {}
    for e in events:
        if e.kind == PHASE and e.phase == END and e.name == "workload":
            stats, into = e.detail.get("producers"), producers
        elif e.kind == CONSUMERS_STOPPED:
            stats, into = e.detail.get("consumers"), consumers
        else:
            continue
        if isinstance(stats, dict):
            into.update({str(n): st.get("exitcode") for n, st in stats.items()
                         if isinstance(st, dict)})
    return producers, consumers
