"""``results.json`` as typed dictionaries (DESIGN.md §3): what the checker writes and the
report, the CLI and the pytest plugin read. The keys are contract; a reader uses these names
and no others (there are no aliases to guess)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

#: File name of the checker's output in a run directory.
RESULTS_FILE = "results.json"

Valid = bool | Literal["unknown"]


class _AnomalyRequired(TypedDict):
    count: int
    allowed: bool
    examples: list[dict[str, Any]]


class Anomaly(_AnomalyRequired, total=False):
    """One anomaly kind: exact ``count``, whether the configuration ``allowed`` it and
    ``why``, the ``unit`` of the count, its ``definition``, capped ``examples``; ``excused``
    instances, ``checked: False`` when the check could not run."""

    why: str
    unit: str
    definition: str
    excused: int
    checked: bool


class WriteCounts(TypedDict):
    ok: int
    fail: int
    info: int


class _StatsRequired(TypedDict):
    writes: WriteCounts
    reads: int
    drain_complete: bool
    duration_s: float
    ack_rate_per_s: float
    unavailable_s: float


class Stats(_StatsRequired, total=False):
    """Run statistics (the first six keys are always there)."""

    reads_by_reader: dict[str, int]
    drain: dict[str, Any]
    unavailable_total_s: float
    errors: dict[str, int]
    divergence: dict[str, Any]
    partition_changes: int
    power_loss_covered_partitions: list[str]
    events: int
    events_unparsed_lines: int


class TimeseriesPoint(TypedDict):
    """One bucket: ``t_s`` seconds after ``t0_ns``; writes completed per outcome; reads;
    acknowledged-write latency percentiles (None when no write was acknowledged)."""

    t_s: float
    ok: int
    fail: int
    info: int
    reads: int
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None


#: The columns of a timeseries point, in order.
TIMESERIES_COLUMNS: tuple[str, ...] = tuple(TimeseriesPoint.__annotations__)


class Timeseries(TypedDict):
    """Non-empty buckets only, ``bucket_s`` wide, from ``t0_ns``."""

    t0_ns: int
    bucket_s: float
    columns: list[str]
    points: list[TimeseriesPoint]


class _CheckerRequired(TypedDict):
    engine: str
    master: str | None
    seconds: float


class CheckerInfo(_CheckerRequired, total=False):
    spark_version: str
    phases: dict[str, float]


class ExpectationDetail(TypedDict, total=False):
    what: str
    actual: Any
    met: bool
    error: str


class Expectations(TypedDict):
    met: bool
    details: list[ExpectationDetail]


class Mechanism(TypedDict):
    observed: bool
    details: list[dict[str, Any]]


class _ResultsRequired(TypedDict):
    valid: Valid
    anomalies: dict[str, Anomaly]
    stats: Stats
    guarantees: dict[str, str]
    checker: CheckerInfo


class Results(_ResultsRequired, total=False):
    """The whole of results.json."""

    unknown_reasons: list[str]
    timeseries: Timeseries
    expectations: Expectations
    mechanism: Mechanism
    error: str
    traceback: str


def shape_problem(doc: Any) -> str | None:
    """What makes ``doc`` no results.json a reader can trust (one phrase), or None: the
    types the report, the CLI and the plugin index into. A damaged or foreign file is
    refused in words, never a traceback."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if "valid" in doc and doc["valid"] not in (True, False, "unknown"):
        return f"valid is {doc['valid']!r}"
    anomalies = doc.get("anomalies", {})
    if not isinstance(anomalies, dict):
        return "anomalies is not an object"
    for kind, a in anomalies.items():
        if not isinstance(a, dict):
            return f"anomalies.{kind} is not an object"
        count = a.get("count", 0)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return f"anomalies.{kind}.count is {count!r}"
        examples = a.get("examples", [])
        if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
            return f"anomalies.{kind}.examples is not a list of objects"
    for key in ("stats", "expectations", "mechanism"):
        if not isinstance(doc.get(key, {}), dict):
            return f"{key} is not an object"
    writes = doc.get("stats", {}).get("writes", {})
    if not isinstance(writes, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in writes.values()):
        return "stats.writes is not an object of counts"
    return None

