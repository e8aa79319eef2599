"""Checker test fixtures: one SparkSession for the whole test session.

``KAFKA_CHAOS_TEST_SPARK_MASTER=sail`` runs the session's checks on Sail instead of a local
Spark JVM (tests/checkers/test_sail_engine.py runs the checker's answer tests that way, in
a pytest session of their own: a process has one engine)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

#: The engine of this session's checker tests: local[2], or sail.
MASTER = os.environ.get("KAFKA_CHAOS_TEST_SPARK_MASTER", "local[2]")


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The shared local[2] session (or Sail's). Without Java/PySpark this fails (never
    skips)."""
    if MASTER == "sail":
        from checkers.engines import sail_session, stop_sail

        yield sail_session()
        stop_sail()
        return
    if shutil.which("java") is None:
        pytest.fail("Java is required for the Spark checker tests and was not found")
    from checkers.session import build_session, jvm_gone

    session = build_session(MASTER, shuffle_partitions=2)
    yield session
    if jvm_gone() is None:  # a dead JVM cannot be stopped (its tests failed saying why)
        session.stop()


@pytest.fixture(autouse=True)
def _spark_jvm_alive(request: pytest.FixtureRequest) -> None:
    """A test on the shared session whose JVM died fails at once, saying how it died, instead
    of with a connection error like every test after it."""
    if "spark" in request.fixturenames and MASTER != "sail":
        from checkers.session import jvm_gone

        gone = jvm_gone()
        if gone:
            pytest.fail(f"{gone}: this session's Spark tests cannot run", pytrace=False)
        if getattr(request.getfixturevalue("spark").sparkContext, "_jsc", None) is None:
            # a check started a new JVM after the shared one died (checkers.session)
            pytest.fail("the shared Spark session's JVM died earlier in this session",
                        pytrace=False)


@pytest.fixture
def check(spark: object, tmp_path):  # type: ignore[no-untyped-def]
    """check(history) -> results.json dict, using the shared session."""
    from checkers import check_run

    def run(history, parts: int = 1):  # type: ignore[no-untyped-def]
        path = history.save(tmp_path / f"run{len(list(tmp_path.iterdir()))}", parts=parts)
        results = check_run(path)
        assert "error" not in results, results.get("traceback")
        return results

    return run
