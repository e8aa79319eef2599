"""Property tests: on random small histories the PySpark checker agrees with the plain-Python
reference implementation of the same definitions (checker_reference.py)."""

from __future__ import annotations

import pytest
from checker_reference import random_history, reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.check import find_anomalies
from checkers.history import READS_SCHEMA, WRITES_SCHEMA
from checkers.identity import IdentityInputs
from contract.settings import Settings

pytestmark = pytest.mark.spark


def _spark_counts(spark, writes, reads, complete, settings=None, power=None):  # type: ignore[no-untyped-def]
    w = spark.createDataFrame([tuple(r[f.name] for f in WRITES_SCHEMA.fields) for r in writes],
                              WRITES_SCHEMA)
    r = spark.createDataFrame([tuple(x[f.name] for f in READS_SCHEMA.fields) for x in reads],
                              READS_SCHEMA)
    topics = sorted({x["topic"] for x in writes + reads})
    readers = sorted({x["reader"] for x in reads})
    inputs = IdentityInputs(settings or Settings(), sorted(complete), power or {}, 2, topics,
                            readers)
    found = find_anomalies(w, r, inputs)
    return {k: (n, found.excused.get(k, 0)) for k, n in found.counts.items() if n}


@settings(max_examples=5, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(5, 80))
def test_spark_agrees_with_reference(spark, seed: int, n: int) -> None:  # type: ignore[no-untyped-def]
    writes, reads, complete = random_history(seed, n)
    expected = reference(writes, reads, complete)
    assert _spark_counts(spark, writes, reads, complete) == expected


@settings(max_examples=2, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1))
def test_reader_isolation_and_power_loss_agree(spark, seed: int) -> None:  # type: ignore[no-untyped-def]
    writes, reads, complete = random_history(seed, 50)
    s = Settings(default_isolation="read_uncommitted", reader_isolation={"c1": "read_committed"})
    mid = sorted(w["complete_ns"] for w in writes)[len(writes) // 2]
    power = {"a:0": mid}
    expected = reference(writes, reads, complete, read_committed={"c1": True},
                         default_rc=False, power_until=power)
    assert _spark_counts(spark, writes, reads, complete, s, power) == expected


def test_generator_covers_every_kind() -> None:
    """The random histories do exercise each kind (else agreement would prove little)."""
    seen: set[str] = set()
    for seed in range(40):
        w, r, c = random_history(seed, 60)
        seen |= set(reference(w, r, c))
    assert seen >= {"lost", "unseen", "duplicate", "inconsistent-offset", "offset-mismatch",
                    "reorder", "failed-visible", "unexpected", "poll-skip",
                    "nonmonotonic-poll", "aborted-read"}
