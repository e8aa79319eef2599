"""Run directories for the report tests: written by hand, or by the synthetic generator.

``hand_run`` is fully literal (:mod:`tests.support.hand_run`: a dozen writes, single-file
Parquet, a torn events line), so the report's reading of the contract is tested without our own
generator in the loop. The ``*_run`` fixtures built with :mod:`tests.support.synthetic`
write Parquet datasets as directories of part files, like the workloads do (CONVENTIONS.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.hand_run import T0, S, hand_results, write_hand_run
from tests.support.synthetic import PlannedFault, SyntheticSpec, write_synthetic_run

__all__ = ["S", "T0"]  # the tests' time base (test_reading, test_series import them from here)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "reports"


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    return write_hand_run(tmp_path / "runs" / "hand-written" / "20261122T093000Z",
                          hand_results())


def valid_spec() -> SyntheticSpec:
    return SyntheticSpec(scenario="safe-config-chaos", writes=6_000, duration_s=40.0, seed=11,
                         timeseries=True,  # the checker's own per-second series
                         faults=[PlannedFault("kill", [2], 8, 14),
                                 PlannedFault("pause", [3], 22, 28)])


def invalid_spec() -> SyntheticSpec:
    """acks=all, min.insync=2, unclean=false: every planted anomaly is forbidden."""
    return SyntheticSpec(scenario="follower-restart-leader-crash", writes=12_000,
                         duration_s=60.0, seed=12, lost=45, duplicate=8, inconsistent=5,
                         divergence=3)


def unknown_spec() -> SyntheticSpec:
    return SyntheticSpec(scenario="last-replica-standing", writes=5_000, duration_s=30.0,
                         seed=13, unseen=25,
                         faults=[PlannedFault("pause", [2], 5, 12),
                                 PlannedFault("power-loss", [1], 20, None)])


def large_spec() -> SyntheticSpec:
    """Big enough to exercise downsampling and capping, light enough for a shared machine."""
    return SyntheticSpec(scenario="safe-config-chaos", writes=400_000, duration_s=900.0,
                         partitions=12, producers=4, seed=14, lost=300, acks="1",
                         faults=[PlannedFault(k, [1 + i % 3], 30 + i * 60, 50 + i * 60)
                                 for i, k in enumerate(["kill", "pause", "partition"] * 4)],
                         part_rows=100_000)


@pytest.fixture
def valid_run(tmp_path: Path) -> Path:
    return write_synthetic_run(valid_spec(), tmp_path / "valid")


@pytest.fixture
def invalid_run(tmp_path: Path) -> Path:
    return write_synthetic_run(invalid_spec(), tmp_path / "invalid")


@pytest.fixture
def unknown_run(tmp_path: Path) -> Path:
    return write_synthetic_run(unknown_spec(), tmp_path / "unknown")


@pytest.fixture(scope="session")
def large_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_run(large_spec(), tmp_path_factory.mktemp("large") / "run")


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots and rendered pages are kept for a human to look at (gitignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
