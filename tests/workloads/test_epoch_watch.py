"""The epoch watch on literal librdkafka statistics: one event per (producer id, epoch)
change, bounded by the snapshots around it; a new client's first id is no bump."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from contract.events import EventLog
from workloads.epoch_watch import EpochWatch, is_idempotent, snapshot_ns, watched


def _stats(pid: int, epoch: int, ts_us: int | None = None) -> str:
    if ts_us is None:
        ts_us = time.monotonic_ns() // 1000
    return json.dumps({"ts": ts_us, "eos": {"producer_id": pid, "producer_epoch": epoch,
                                            "epoch_cnt": 1, "idemp_state": "Assigned"}})


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_changes_become_events_with_their_bounds(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    w = EpochWatch(log, producer=3)
    t0 = time.monotonic_ns() // 1000 - 1_000_000  # snapshots 100 ms apart, the last 0.4 s ago
    for i, (pid, epoch) in enumerate(((-1, -1), (7, 0), (7, 0), (7, 1), (7, 1))):
        w.on_stats(_stats(pid, epoch, t0 + i * 100_000))
    w.reset(1234)  # a recreated client, given seqs from 1234 on: its first id is an assignment
    w.on_stats(_stats(9, 0, t0 + 600_000))
    w.on_stats("{not json")  # ignored, never raised into poll()
    log.close()
    evs = _events(tmp_path / "events.jsonl")
    assert [(e["detail"]["producer_id"], e["detail"]["epoch"], e["detail"]["bump"])
            for e in evs] == [(7, 0, False), (7, 1, True), (9, 0, False)]
    assert all(e["kind"] == "producer-epoch" and e["targets"] == [3] for e in evs)
    first, bump, fresh = evs
    assert (bump["detail"]["prev_producer_id"], bump["detail"]["prev_epoch"]) == (7, 0)
    # the bump lies after the snapshot that still showed epoch 0, up to the one showing 1
    assert first["ts_ns"] < bump["detail"]["since_ns"] < bump["ts_ns"]
    assert 99_000_000 < bump["ts_ns"] - bump["detail"]["since_ns"] < 101_000_000
    assert fresh["detail"]["since_ns"] is None and "prev_epoch" not in fresh["detail"]
    # a client's first id names the first seq the client was given; a bump does not
    assert (first["detail"]["first_seq"], fresh["detail"]["first_seq"]) == (0, 1234)
    assert "first_seq" not in bump["detail"]
    assert w.changes == 3


def test_snapshot_time_comes_from_librdkafkas_monotonic_ts() -> None:
    now_us = time.monotonic_ns() // 1000
    before = time.time_ns()
    taken = snapshot_ns({"ts": now_us - 2_000_000})  # a snapshot 2 s old
    assert before - 2_100_000_000 < taken < before - 1_900_000_000
    # nonsense (another clock, the future) falls back to now
    for ts in (now_us + 10_000_000, 5, "x"):
        assert abs(snapshot_ns({"ts": ts}) - time.time_ns()) < 1_000_000_000


def test_watched_keeps_the_users_interval_and_callback() -> None:
    seen: list[str] = []
    w = EpochWatch(None, producer=0)
    conf = watched({"statistics.interval.ms": 2000, "stats_cb": seen.append}, w)
    assert conf["statistics.interval.ms"] == 2000
    conf["stats_cb"](_stats(5, 0))
    assert len(seen) == 1 and w.changes == 1
    assert watched({}, w)["statistics.interval.ms"] == 500
    assert is_idempotent({"enable.idempotence": True})
    assert is_idempotent({"enable.idempotence": "true"})
    assert is_idempotent({"transactional.id": "x"})
    assert not is_idempotent({"enable.idempotence": "false", "acks": "all"})
