"""The common shape of anomaly rows, so every check's findings union into one DataFrame."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, StringType

#: Column name -> type of an anomaly row. ``n`` is how much the row adds to the kind's count;
#: ``excused`` marks an instance the guarantee model forgives (e.g. subscribe-mode readers).
ANOMALY_COLUMNS: tuple[tuple[str, DataType], ...] = (
    ("kind", StringType()),
    ("producer", IntegerType()),
    ("seq", LongType()),
    ("topic", StringType()),
    ("partition", IntegerType()),
    ("offset", LongType()),  # the acknowledged offset, or the position the anomaly is about
    ("read_offset", LongType()),  # where the record was read (first read in its partition)
    ("prev_offset", LongType()),  # previous read (poll checks) / the other record (reorder)
    ("reader", StringType()),
    ("poll", LongType()),
    ("prev_poll", LongType()),  # poll checks: the poll of the previous read
    ("complete_ns", LongType()),  # when the write was acknowledged
    ("event_ns", LongType()),  # when the anomaly showed (a read), if it did
    ("other_producer", IntegerType()),
    ("other_seq", LongType()),
    ("outcome", StringType()),
    ("n", LongType()),
    ("excused", BooleanType()),
    ("epoch_bump_ns", LongType()),  # duplicate/reorder: the producer's epoch bump before it
    ("excuse", StringType()),  # why an excused row is: rebalance, truncation, power-loss
    ("invoke_ns", LongType()),  # the write's first produce attempt, where the kind is about it
    ("txn", StringType()),  # torn-transaction: the transaction's id
    ("copy_offset", LongType()),  # duplicate: the later copy's offset (the highest read)
)
_ANOMALY_NAMES = frozenset(name for name, _ in ANOMALY_COLUMNS)


def sql_string(value: str) -> str:
    """``value`` as a Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def anomaly_rows(df: DataFrame, kind: str | Column, **cols: Column) -> DataFrame:
    """Project ``df`` to anomaly rows; columns not given are null (``n`` defaults to 1,
    ``excused`` to false)."""
    unknown = set(cols) - _ANOMALY_NAMES
    if unknown:
        raise ValueError(f"unknown anomaly columns: {sorted(unknown)}")
    given = dict(cols)
    if not isinstance(kind, str):
        given["kind"] = kind
    # The given columns are named once; the rest (casts, nulls, the literal kind, defaults)
    # is SQL text: each Column built in Python costs several JVM round trips (a function's
    # lookup, the call, a cast, an alias, later the release of each proxy; a warm check of
    # a tiny run made ~5,800), a SQL expression one.
    named = df.select(*[c.alias(name) for name, c in given.items()])
    defaults = {"kind": sql_string(kind) if isinstance(kind, str) else "NULL",
                "n": "1", "excused": "false"}
    return named.selectExpr(*[
        f"CAST({f'`{name}`' if name in given else defaults.get(name, 'NULL')}"
        f" AS {dtype.simpleString()}) AS `{name}`" for name, dtype in ANOMALY_COLUMNS])


def flag_kinds(df: DataFrame, kinds: list[tuple[Column, Column | str]]) -> DataFrame:
    """``df``'s rows that show at least one of ``kinds`` ((condition, kind name) pairs), one
    row per kind shown, the name in column ``kind``.

    Rows showing none are dropped by one cheap test first: building the array of kinds for
    every row (millions, nearly all clean) cost more than the rest of the projection."""
    shown = [F.coalesce(cond, F.lit(False)) for cond, _ in kinds]
    any_kind = shown[0]
    for s in shown[1:]:
        any_kind = any_kind | s
    names = F.array_compact(F.array(*[
        F.when(cond, F.lit(name) if isinstance(name, str) else name) for cond, name in kinds]))
    return df.where(any_kind).select("*", F.explode(names).alias("kind"))
