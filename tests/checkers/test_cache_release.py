"""A check's persisted tables do not outlive it in a shared session (pytest, nightly: one JVM
checks many runs), whether its context is released after the checks or fails half-way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.literal import History

pytestmark = pytest.mark.spark


def _bumped_run(tmp_path: Path) -> Any:
    """A run whose idempotent producer timed out once: the check persists its epoch bump."""
    from checkers.runfiles import RunDir

    h = History()  # idempotent producers (the default settings)
    h.write(1, 0, offset=0, at_ms=0)
    h.write(1, 1, outcome="info", error="_MSG_TIMED_OUT", at_ms=5)
    h.drain(0, 0, 1, 0)
    h.drain_end(complete=True)
    return RunDir(str(h.save(tmp_path / "run")))


def _persisted(spark: Any) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


def test_epoch_bumps_are_persisted_for_the_check_and_released(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from checkers.context import load_context

    run = _bumped_run(tmp_path)
    before = _persisted(spark)
    ctx = load_context(spark, run)
    try:
        assert ctx.inputs.epoch_bumps is not None
        assert _persisted(spark) == before + 1  # the bumps, materialised
    finally:
        ctx.release()  # also when an assertion fails: the session outlives this test
    assert _persisted(spark) == before


def test_a_context_failing_after_the_summaries_leaves_nothing_persisted(  # type: ignore[no-untyped-def]
        spark, tmp_path, monkeypatch) -> None:
    import checkers.context as context

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("drain state unreadable")

    monkeypatch.setattr(context, "drain_state", unreadable)
    run = _bumped_run(tmp_path)
    before = _persisted(spark)
    with pytest.raises(RuntimeError, match="drain state unreadable"):
        context.load_context(spark, run)
    assert _persisted(spark) == before
