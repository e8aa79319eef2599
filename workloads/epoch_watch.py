"""The producer id and epoch an idempotent librdkafka producer holds, from its statistics.

librdkafka bumps an idempotent producer's epoch by itself — after a timed-out batch, and
also after an OUT_OF_ORDER_SEQUENCE answer from a new leader that fails no write — and
resends what was in flight under the new epoch, which the broker cannot deduplicate
(librdkafka#4953). No delivery report shows such a bump, so the history would hold the
duplicate without its cause. The statistics (``statistics.interval.ms`` + ``stats_cb``) carry
``eos.producer_id``/``producer_epoch``; every change is a ``producer-epoch`` event, its time
bounded by the snapshot that first showed it (``ts_ns``) and the one before (``since_ns``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from contract.events import INSTANT, PRODUCER_EPOCH, EventLog

log = logging.getLogger("kafka_chaos.workloads.epochs")

#: How often librdkafka reports its statistics (ms): the precision of a bump's time.
STATS_INTERVAL_MS = 500


class EpochWatch:
    """Turns a producer's statistics into ``producer-epoch`` events (one per change)."""

    def __init__(self, events: EventLog | None, producer: int) -> None:
        self.events = events
        self.producer = producer
        self.changes = 0
        self.reset(0)

    def reset(self, first_seq: int) -> None:
        """A new client, given records from ``first_seq`` on: its first producer id is an
        assignment, not a bump."""
        self._held: tuple[int, int] | None = None
        self._last_ns: int | None = None
        self._first_seq = first_seq

    def on_stats(self, text: str) -> None:
        """The ``stats_cb``: runs in ``poll()``, so it must not raise."""
        try:
            stats = json.loads(text)
            eos = stats.get("eos") or {}
            pid, epoch = int(eos.get("producer_id", -1)), int(eos.get("producer_epoch", -1))
            taken_ns = snapshot_ns(stats)
        except (ValueError, TypeError, AttributeError) as e:
            log.warning("producer %d: unreadable statistics: %s", self.producer, e)
            return
        since, self._last_ns = self._last_ns, taken_ns
        if pid < 0 or epoch < 0 or (pid, epoch) == self._held:
            return  # not assigned yet (or between ids), or unchanged
        prev, self._held = self._held, (pid, epoch)
        self.changes += 1
        if self.events is None:
            return
        detail: dict[str, Any] = {"producer": self.producer, "producer_id": pid,
                                  "epoch": epoch, "epoch_cnt": eos.get("epoch_cnt"),
                                  "bump": prev is not None, "since_ns": since}
        if prev is not None:
            detail["prev_producer_id"], detail["prev_epoch"] = prev
        else:  # the checker tells the clients' records apart by it (a fresh id's first ones)
            detail["first_seq"] = self._first_seq
        self.events.emit(PRODUCER_EPOCH, INSTANT, [self.producer], detail, ts_ns=taken_ns)


def watched(conf: dict[str, Any], watch: EpochWatch) -> dict[str, Any]:
    """``conf`` with the statistics ``watch`` reads: a ``statistics.interval.ms`` already
    there is kept (0 turns the watch off), a ``stats_cb`` already there is still called."""
    out = dict(conf)
    out.setdefault("statistics.interval.ms", STATS_INTERVAL_MS)
    user: Callable[[str], Any] | None = out.get("stats_cb")

    def on_stats(text: str) -> None:
        watch.on_stats(text)
        if user is not None:
            user(text)

    out["stats_cb"] = on_stats
    return out


def is_idempotent(conf: dict[str, Any]) -> bool:
    """Whether a librdkafka producer configuration asks for idempotence (transactions do)."""
    flag = str(conf.get("enable.idempotence", "false")).strip().lower()
    return flag in ("true", "1") or bool(conf.get("transactional.id"))


def snapshot_ns(stats: dict[str, Any]) -> int:
    """Wall time (ns) librdkafka took the snapshot: its ``ts`` is CLOCK_MONOTONIC in µs, the
    clock of :func:`time.monotonic_ns`; the callback itself may run much later."""
    now_wall, now_mono = time.time_ns(), time.monotonic_ns()
    ts_us = stats.get("ts")
    if not isinstance(ts_us, int):
        return now_wall
    age = now_mono - ts_us * 1000
    # Another clock (or a nonsense value) would put the snapshot in the future or long ago.
    return now_wall - age if 0 <= age < 60_000_000_000 else now_wall
