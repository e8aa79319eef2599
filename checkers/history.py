"""Loading a run's history: the Parquet (or JSON-lines) tables as Spark DataFrames with the
contract's column types, and events.jsonl as small Python objects."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, overload

from pyspark.sql import DataFrame, SparkSession
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

from .runfiles import RunDir

WRITES_SCHEMA = StructType(
    [
        StructField("op_id", LongType()),
        StructField("producer", IntegerType()),
        StructField("seq", LongType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("invoke_ns", LongType()),
        StructField("complete_ns", LongType()),
        StructField("outcome", StringType()),
        StructField("offset", LongType()),
        StructField("error", StringType()),
        StructField("txn", StringType()),
        StructField("txn_outcome", StringType()),
    ]
)

READS_SCHEMA = StructType(
    [
        StructField("reader", StringType()),
        StructField("mode", StringType()),
        StructField("poll", LongType()),
        StructField("read_ns", LongType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("producer", IntegerType()),
        StructField("seq", LongType()),
        StructField("valid", BooleanType()),
    ]
)

OBSERVATIONS_SCHEMA = StructType(
    [
        StructField("ts_ns", LongType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("leader", IntegerType()),
        StructField("isr", ArrayType(IntegerType())),
        StructField("replicas", ArrayType(IntegerType())),
        StructField("leader_epoch", IntegerType()),
        StructField("high_watermark", LongType()),
    ]
)


def _conform(df: DataFrame, schema: StructType) -> DataFrame:
    """Select the schema's columns with its types; absent columns become nulls."""
    present = set(df.columns)
    cols = []
    for f in schema.fields:
        dtype: DataType = f.dataType
        if f.name in present:
            cols.append(F.col(f"`{f.name}`").cast(dtype).alias(f.name))
        else:
            cols.append(F.lit(None).cast(dtype).alias(f.name))
    return df.select(*cols)


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


@dataclass(frozen=True)
class Event:
    """One line of events.jsonl."""

    ts_ns: int
    kind: str
    phase: str
    targets: tuple[Any, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        """The phase name for ``kind == "phase"`` events."""
        value = self.detail.get("name")
        return str(value) if value is not None else None

    def brief(self) -> dict[str, Any]:
        """A JSON-ready summary for examples."""
        out: dict[str, Any] = {"kind": self.kind, "phase": self.phase, "ts_ns": self.ts_ns,
                               "targets": list(self.targets)}
        if self.detail:
            out["detail"] = self.detail
        return out


def parse_events(text: str | None) -> tuple[list[Event], int]:
    """Events sorted by time, and the number of lines that did not parse (torn last line)."""
    events: list[Event] = []
    bad = 0
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
            targets = obj.get("targets") or []
            if not isinstance(targets, list):
                targets = [targets]
            events.append(
                Event(
                    ts_ns=int(obj["ts_ns"]),
                    kind=str(obj.get("kind", "")),
                    phase=str(obj.get("phase", "instant")),
                    targets=tuple(targets),
                    detail=obj.get("detail") if isinstance(obj.get("detail"), dict) else {},
                )
            )
        except (ValueError, KeyError, TypeError):
            bad += 1
    events.sort(key=lambda e: e.ts_ns)
    return events, bad


def phase_window(events: list[Event], name: str) -> tuple[int | None, int | None]:
    """(start, end) ns of a run phase such as ``workload``, None where not recorded."""
    start = end = None
    for e in events:
        if e.kind == "phase" and e.name == name:
            if e.phase == "start" and start is None:
                start = e.ts_ns
            elif e.phase == "end":
                end = e.ts_ns
    return start, end


def drain_end(events: list[Event]) -> Event | None:
    """The drain's end event (the last one, if the drain ran twice)."""
    found = None
    for e in events:
        if e.kind == "phase" and e.phase == "end" and e.name == "drain":
            found = e
    return found
