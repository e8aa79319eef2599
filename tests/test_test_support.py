"""The test-support histories (tests/support/) are written in the contract's format and
emit only what real runs emit: the contract's schemas, known event kinds, integer node ids as
targets, the phases the orchestrator writes and the detail keys the fault classes write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from contract.events import END, INSTANT, OTHER_KINDS, PHASE, START
from contract.faults import CLOSERS, FAULTS
from contract.schemas import TABLES
from tests.support.bench_data import Spec, generate
from tests.support.client_state import ConsumerStats
from tests.support.hand_run import hand_results, write_hand_run
from tests.support.literal import History
from tests.support.synthetic import PlannedFault, SyntheticSpec, write_synthetic_run

#: Phase events the orchestrator and the drain write (runner/orchestrator.py, workloads/drain.py);
#: "check" is in RUN_PHASES but no run writes it (the checker runs after the history closes).
WRITTEN_PHASES = {"setup", "workload", "liveness", "heal", "drain"}
#: Detail keys each fault class writes on its start/end events (nemesis/faults/process.py,
#: power.py, network.py).
FAULT_DETAIL_KEYS = {
    "kill": {"target"}, "stop": {"target"}, "pause": {"target"},
    "power-loss": {"target", "lost", "isr_before"},
    "partition": {"shape", "target", "cuts"},
}


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "history" / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def assert_like_a_real_run(run_dir: Path, tables: tuple[str, ...] = tuple(TABLES)) -> None:
    for name in tables:
        path = run_dir / "history" / f"{name}.parquet"
        assert ds.dataset(path).schema.remove_metadata() == TABLES[name], name
    events = read_events(run_dir)
    assert events
    for e in events:
        assert set(e) == {"ts_ns", "kind", "phase", "targets", "detail"}
        assert e["kind"] in FAULTS or e["kind"] in CLOSERS or e["kind"] in OTHER_KINDS, e
        assert e["phase"] in (START, END, INSTANT), e
        assert all(isinstance(t, int) for t in e["targets"]), e
        if e["kind"] == PHASE:
            assert e["detail"]["name"] in WRITTEN_PHASES, e
        elif e["kind"] in FAULTS:
            assert e["phase"] in (START, END), e  # real faults record a start/end pair
            assert set(e["detail"]) <= FAULT_DETAIL_KEYS[e["kind"]], e


def test_a_synthetic_run_looks_like_a_real_one(tmp_path: Path) -> None:
    spec = SyntheticSpec(writes=3_000, duration_s=30.0, seed=3, lost=5, unseen=3, duplicate=2,
                         inconsistent=1,
                         faults=[PlannedFault("kill", [2], 5, 9),
                                 PlannedFault("pause", [3], 12, 16),
                                 PlannedFault("partition", [1], 18, 22),
                                 PlannedFault("power-loss", [1], 25, None)])
    run = write_synthetic_run(spec, tmp_path / "run")
    assert_like_a_real_run(run)
    drain_end = [e for e in read_events(run)
                 if e["kind"] == PHASE and e["phase"] == END and e["detail"]["name"] == "drain"]
    assert len(drain_end) == 1
    ends = drain_end[0]["detail"]["end_offsets"]
    assert set(ends) == {f"chaos:{p}" for p in range(spec.partitions)}
    assert all(v > 0 for v in ends.values())  # one past the last acknowledged offset


def test_an_unknown_fault_kind_is_refused(tmp_path: Path) -> None:
    spec = SyntheticSpec(writes=500, faults=[PlannedFault("meteor", [1], 1, 2)])
    with pytest.raises(ValueError, match="unknown fault kind 'meteor'"):
        write_synthetic_run(spec, tmp_path / "run")


def test_the_bench_history_looks_like_a_real_one(tmp_path: Path) -> None:
    sizes = generate(Spec(writes=4_000, part_files=2), str(tmp_path))
    assert sizes["writes"] == 4_000 and sizes["reads"] > 3_000
    assert_like_a_real_run(tmp_path, ("writes", "reads"))  # it writes no observations
    assert len(list((tmp_path / "history" / "writes.parquet").glob("*.parquet"))) == 2


def test_the_hand_run_and_literal_histories_use_the_contract(tmp_path: Path) -> None:
    assert_like_a_real_run(write_hand_run(tmp_path / "hand", hand_results()))
    h = History().write(0, 0, offset=0).drain(0, 0, 0, 0).observe(0, 0, 1, [1, 2, 3], epoch=1)
    h.event("kill", START, 10, [2], target="2").drain_end()
    assert_like_a_real_run(Path(h.save(tmp_path / "literal", parts=2)))


def _stats(join_state: str, fetch_state: str, committed: int, assigned: int = 1) -> str:
    return json.dumps({
        "cgrp": {"join_state": join_state, "assignment_size": assigned},
        "topics": {"orders": {"partitions": {
            "-1": {"fetch_state": "none", "committed_offset": -1001},
            "0": {"fetch_state": fetch_state, "committed_offset": committed},
            "1": {"fetch_state": "active", "committed_offset": 40}}}}})


@pytest.mark.parametrize(("join_state", "fetch_state", "committed", "assigned", "expect"), [
    ("steady", "none", -1001, 2, [0]),  # librdkafka#5586: waits for its offset forever
    ("steady", "active", -1001, 2, []),  # fetching from auto.offset.reset
    ("steady", "none", 12, 2, []),  # its offset known
    ("wait-assign-call", "none", -1001, 2, []),  # the assignment not applied yet
    ("steady", "none", -1001, 0, []),  # nothing assigned
])
def test_consumer_stats_name_a_fetcher_that_never_started(
        join_state: str, fetch_state: str, committed: int, assigned: int,
        expect: list[int]) -> None:
    stats = ConsumerStats()
    assert stats.never_started("orders") == []  # no statistics yet
    stats._on_stats(_stats(join_state, fetch_state, committed, assigned))
    assert stats.never_started("orders") == expect
    assert stats.never_started("invoices") == []
