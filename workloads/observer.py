"""The cluster observer: leader, ISR and replicas of every partition, several times a second.

A thread in the orchestrator's process. Each sample is one metadata request (cheap) and
one row per partition in observations.parquet. High watermark and leader epoch come from
ListOffsets (latest), asked per partition in the background: a partition whose leader is
paused must not hold up the others, nor the leadership samples. A row carries the HW/epoch
only when an answer arrived since the previous sample (null otherwise), so a value is never
older than one interval; the ListOffsets requests go out just before the metadata request,
so an answer usually lands in the same sample. Per-replica log end offsets are not
obtainable cheaply from the client: ``log_end_offsets`` is null. Every request has a short
timeout: the observer never hangs on a dead or paused broker.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient

from contract.schemas import OBSERVATIONS_SCHEMA
from workloads.history import ChunkedParquetWriter, history_dir, now_ns

log = logging.getLogger("kafka_chaos.workloads.observer")


class Observer:
    """Samples the partitions of ``topics`` every ``interval_s`` until ``stop()``."""

    def __init__(self, run_dir: Path, bootstrap: str, topics: list[str] | str,
                 interval_s: float = 0.25, timeout_s: float = 1.0) -> None:
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        ms = int(timeout_s * 1000)
        self.admin = AdminClient({
            "bootstrap.servers": bootstrap, "socket.timeout.ms": max(ms, 10),
            "socket.connection.setup.timeout.ms": max(ms, 1000),
            "client.id": "kc-observer", "log_level": 2})
        self.writer = ChunkedParquetWriter(history_dir(run_dir) / "observations.parquet",
                                           OBSERVATIONS_SCHEMA, "observer")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._offsets: dict[tuple[str, int], Future[Any]] = {}
        self._fresh: dict[tuple[str, int], tuple[int | None, int | None]] = {}
        self._known: list[tuple[str, int]] = []  # partitions seen in the last metadata
        self.samples = 0
        self.failed_samples = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Observer:
        self._thread = threading.Thread(target=self._run, name="kc-observer", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stops sampling and writes the last chunk."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("observer did not stop within %.0fs", timeout_s)
                return
        self.writer.close()

    def __enter__(self) -> Observer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - the observer must outlive any one bad sample
                log.exception("observer sample failed")
                self.failed_samples += 1
            next_t = max(next_t + self.interval_s, time.monotonic())
            self._stop.wait(max(0.0, next_t - time.monotonic()))
        self.writer.flush()

    # ------------------------------------------------------------------ one sample
    def sample(self) -> int:
        """Takes one sample; returns the number of rows written (0 when metadata failed)."""
        # Ask for offsets first and harvest after the metadata round trip, so most answers
        # land in this very sample.
        self._harvest_offsets()
        self._ask_offsets(self._known)
        try:
            md = self.admin.list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            log.info("observer: metadata: %s", e)
            self.failed_samples += 1
            return 0
        ts = now_ns()
        self._harvest_offsets()
        rows = 0
        wanted: list[tuple[str, int]] = []
        for topic in self.topics:
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                continue
            for p in sorted(t.partitions.values(), key=lambda p: p.id):
                hw, epoch = self._fresh.pop((topic, p.id), (None, None))
                self.writer.append_values((ts, topic, p.id, p.leader, list(p.isrs),
                                           list(p.replicas), epoch, hw, None))
                rows += 1
                wanted.append((topic, p.id))
        self._known = wanted
        self.samples += 1
        return rows

    def _harvest_offsets(self) -> None:
        for key, fut in list(self._offsets.items()):
            if not fut.done():
                continue
            del self._offsets[key]
            try:
                info = fut.result()
                epoch = info.leader_epoch if info.leader_epoch is not None and \
                    info.leader_epoch >= 0 else None
                self._fresh[key] = (info.offset, epoch)
            except KafkaException as e:
                log.debug("observer: offsets of %s: %s", key, e)

    def _ask_offsets(self, keys: list[tuple[str, int]]) -> None:
        """One ListOffsets request per partition whose previous answer has arrived."""
        # the orchestrator's client only (see drain.end_offsets: older workload venvs lack it)
        from confluent_kafka.admin import OffsetSpec

        for key in keys:
            if key in self._offsets:
                continue
            try:
                futs = self.admin.list_offsets({TP(key[0], key[1]): OffsetSpec.latest()},
                                               request_timeout=self.timeout_s)
            except KafkaException as e:
                log.debug("observer: list_offsets %s: %s", key, e)
                continue
            self._offsets[key] = next(iter(futs.values()))
