"""An idempotent producer's epoch, from its client statistics, on a real cluster: its first
producer id, then the bump librdkafka makes after writes time out in flight
(workloads/epoch_watch.py; the checker tags duplicates after such a bump, librdkafka#4953)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contract.events import PRODUCER_EPOCH
from nemesis.faults.process import Pause
from tests.faults.conftest import until
from tests.workloads.conftest import read_table
from tests.workloads.helpers import rows
from workloads import ProducerConfig, start_producers


def _events(run: Path, kind: str) -> list[dict[str, Any]]:
    path = run / "history" / "events.jsonl"
    if not path.exists():
        return []
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == kind]


def test_statistics_show_the_first_id_and_the_bump_after_in_flight_timeouts(
        cluster, ctx, tmp_path: Path) -> None:  # noqa: ANN001
    # tmp_path is the run directory: the fault's events and the producer's share its history
    # the producer outlasts every bound below (30 s + 40 s); group.stop ends it
    cfg = ProducerConfig(rate=200, duration_s=600, delivery_timeout_ms=3000,
                         request_timeout_ms=2000, linger_ms=0)
    group = start_producers(tmp_path, cluster.bootstrap_servers, ctx.topic, 1, cfg, count=1)
    try:
        until(30, lambda: _events(tmp_path, PRODUCER_EPOCH), "no producer id within 30 s")
        pause = Pause("leader:0")
        pause.start(ctx)
        try:
            until(40, lambda: any(e["detail"]["bump"]
                                  for e in _events(tmp_path, PRODUCER_EPOCH)),
                  "no epoch bump within 40 s of pausing the leader")
        finally:
            pause.stop(ctx)
    finally:
        stats = group.stop(15)
    first, *later = _events(tmp_path, PRODUCER_EPOCH)
    d = first["detail"]
    assert first["targets"] == [0] and d["producer"] == 0
    assert d["bump"] is False and d["producer_id"] >= 0 and d["epoch"] >= 0
    bump = next(e for e in later if e["detail"]["bump"])
    b = bump["detail"]
    assert (b["prev_producer_id"], b["prev_epoch"]) == (d["producer_id"], d["epoch"])
    assert (b["producer_id"], b["epoch"]) != (d["producer_id"], d["epoch"])
    (paused,) = (e for e in _events(tmp_path, "pause") if e["phase"] == "start")
    # the change lies between two snapshots, after the pause began
    assert first["ts_ns"] <= b["since_ns"] < bump["ts_ns"]
    assert bump["ts_ns"] > paused["ts_ns"]
    assert stats["p0"]["exitcode"] == 0 and stats["p0"]["epoch_changes"] == 1 + len(later)
    # what made librdkafka bump: writes that timed out in flight while the leader was paused
    errors = {w["error"] for w in rows(read_table(tmp_path, "writes"))}
    assert "_MSG_TIMED_OUT" in errors, errors
