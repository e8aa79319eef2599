"""The final drain: after the last heal, read every partition from the beginning to its end.

1. wait (bounded) until every broker is registered again and every partition has a leader;
2. take each partition's end offset with ListOffsets: the high watermark for a
   read_uncommitted drain, the last stable offset for a read_committed one (both are written
   to the end event);
3. read all partitions from the beginning with a fresh, group-less consumer (reader
   ``drain``, mode ``drain``) until its position reaches the end offset, bounded in time.

A partition is complete when the consumer's position reached its end offset. Positions, not
counts: transaction markers take offsets that are never delivered, and a truncated log
start is skipped legitimately. The drain's phase events follow DESIGN.md §3.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from contract.events import EventLog
from contract.schemas import DRAIN_READER
from workloads.consumer import ReadRecorder, consumer_client

log = logging.getLogger("kafka_chaos.workloads.drain")

Isolation = Literal["read_uncommitted", "read_committed"]


class NotReady(Exception):
    """The cluster is not back yet (brokers missing or partitions without a leader)."""


@dataclass
class DrainResult:
    """What the drain reached: ``end_offsets`` keyed ``"<topic>:<partition>"`` (None when the
    end offset could not be learned), ``records`` read, and which partitions were complete."""

    complete: bool
    end_offsets: dict[str, int | None]
    records: int
    partitions_complete: dict[str, bool] = field(default_factory=dict)


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000,
                        "socket.connection.setup.timeout.ms": 3000, "log_level": 2})


def wait_ready(admin: AdminClient, topic: str, partitions: int, brokers: int,
               timeout_s: float) -> bool:
    """Waits until ``brokers`` brokers are registered and every partition has a leader."""
    try:
        for attempt in Retrying(stop=stop_after_delay(max(0.0, timeout_s)), wait=wait_fixed(0.5),
                                retry=retry_if_exception_type((KafkaException, NotReady)),
                                reraise=True):
            with attempt:
                md = admin.list_topics(topic=topic, timeout=3)
                if len(md.brokers) < brokers:
                    raise NotReady(f"{len(md.brokers)}/{brokers} brokers registered")
                t = md.topics.get(topic)
                if t is None or t.error is not None or len(t.partitions) < partitions:
                    raise NotReady(f"topic {topic} not in metadata")
                leaderless = [p.id for p in t.partitions.values() if p.leader < 0]
                if leaderless:
                    raise NotReady(f"partitions without a leader: {leaderless}")
        return True
    except (KafkaException, NotReady) as e:
        log.warning("drain: cluster not ready within %.0fs: %s", timeout_s, e)
        return False


def end_offsets(admin: AdminClient, topic: str, partitions: int, isolation: Isolation,
                timeout_s: float, renew: Callable[[], AdminClient] | None = None,
                ) -> dict[int, int | None]:
    """Each partition's end offset (ListOffsets latest), retried until known or time is up.

    After a round with failures the retry goes through ``renew()``'s new client, when given:
    librdkafka's admin ListOffsets keeps the leader epoch it cached and does not refresh its
    metadata on FENCED_LEADER_EPOCH (seen in a suite: a drain whose client read the metadata
    during a preferred-leader election got it for its whole end-offset budget, 60 s, while
    every broker agreed on the new leader a moment later; it then read until its timeout).
    A new client reads the metadata anew.
    """
    # Imported here: the drain runs on the orchestrator's client, but the workload processes
    # import this package too, and a --client-version venv before confluent-kafka 2.3
    # (2.1.0 for librdkafka#4261) has neither name.
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec

    level = (IsolationLevel.READ_COMMITTED if isolation == "read_committed"
             else IsolationLevel.READ_UNCOMMITTED)
    out: dict[int, int | None] = {p: None for p in range(partitions)}
    end = time.monotonic() + timeout_s
    while True:
        missing = [p for p, off in out.items() if off is None]
        if not missing:
            break
        futs = admin.list_offsets({TP(topic, p): OffsetSpec.latest() for p in missing},
                                  isolation_level=level, request_timeout=3)
        for tp, fut in futs.items():
            try:
                out[tp.partition] = fut.result().offset
            except KafkaException as e:
                log.info("drain: end offset of %s-%d: %s", topic, tp.partition, e)
        if time.monotonic() >= end:
            break
        if any(off is None for off in out.values()):
            time.sleep(0.5)  # pacing a retry against a recovering cluster, not synchronising
            if renew is not None:
                admin = renew()
    return out


Key = tuple[str, int]  # (topic, partition)


def _read(run_dir: Path, bootstrap: str, ends: dict[Key, int | None],
          isolation: Isolation, timeout_s: float) -> tuple[dict[Key, int], int]:
    """Reads every partition from the beginning; returns (positions reached, records)."""
    rec = ReadRecorder(run_dir, DRAIN_READER, DRAIN_READER)
    c = consumer_client(bootstrap, {
        "group.id": "kc-drain", "enable.auto.commit": "false", "auto.offset.reset": "earliest",
        "enable.partition.eof": "true", "isolation.level": isolation,
        "fetch.wait.max.ms": "100"}, "kc-drain")
    reached: dict[Key, int] = {k: -1 for k in ends}
    todo = {k for k, e in ends.items() if e is None or e > 0}
    for k, e in ends.items():
        if e == 0:
            reached[k] = 0
    c.assign([TP(t, p, OFFSET_BEGINNING) for t, p in sorted(todo)])
    end = time.monotonic() + timeout_s
    try:
        while todo and time.monotonic() < end:
            rec.polls += 1
            msgs = c.consume(1000, 0.5)
            rec.record(rec.polls, msgs)
            for m in msgs:
                err = m.error()
                topic, part, off = m.topic(), m.partition(), m.offset()
                if topic is None or part is None or off is None or (topic, part) not in reached:
                    if err is not None and err.code() != KafkaError._PARTITION_EOF:
                        log.info("drain: %s", err)
                    continue
                key = (topic, part)
                if err is None:
                    reached[key] = max(reached[key], off + 1)
                elif err.code() == KafkaError._PARTITION_EOF:
                    # The EOF offset is past trailing transaction markers too.
                    reached[key] = max(reached[key], off)
                else:
                    log.info("drain: %s", err)
            for tp in c.position([TP(t, p) for t, p in todo]):
                if tp.offset >= 0:
                    key = (tp.topic, tp.partition)
                    reached[key] = max(reached[key], tp.offset)
            todo = {k for k in todo if ends[k] is None or reached[k] < (ends[k] or 0)}
    finally:
        rec.close()
        c.close()
    return reached, rec.records


def drain(run_dir: Path, bootstrap: str, topic: str | Sequence[str],
          partitions: int | Mapping[str, int], events: EventLog, timeout_s: float = 120.0,
          isolation_level: Isolation = "read_uncommitted",
          brokers: int | None = None) -> DrainResult:
    """Runs the final drain of ``topic`` (or of several topics, read together) and writes its
    start and end phase events.

    ``partitions``: the topic's partition count (a mapping topic -> count for several).
    ``brokers``: how many brokers must be back (default: the number of bootstrap addresses).
    The end event's detail has ``complete`` and ``end_offsets`` (DESIGN.md §3) and, beyond the
    contract, ``isolation_level``, ``high_watermarks``, ``last_stable_offsets``,
    ``reached`` and ``records``.
    """
    topics = [topic] if isinstance(topic, str) else list(topic)
    counts = ({t: int(partitions) for t in topics} if isinstance(partitions, int)
              else {t: int(partitions[t]) for t in topics})
    events.phase("drain", "start", isolation_level=isolation_level)
    t_end = time.monotonic() + timeout_s
    admin = _admin(bootstrap)
    renew = partial(_admin, bootstrap)
    want = brokers if brokers is not None else len(bootstrap.split(","))
    hw: dict[Key, int | None] = {}
    lso: dict[Key, int | None] = {}
    for t in topics:
        wait_ready(admin, t, counts[t], want, t_end - time.monotonic())
    for t in topics:
        budget = max(5.0, (t_end - time.monotonic()) / 4)
        hw.update({(t, p): o for p, o in end_offsets(admin, t, counts[t], "read_uncommitted",
                                                      budget, renew).items()})
        lso.update({(t, p): o for p, o in end_offsets(admin, t, counts[t], "read_committed",
                                                       budget, renew).items()})
    ends = lso if isolation_level == "read_committed" else hw
    reached, records = _read(Path(run_dir), bootstrap, ends, isolation_level,
                             max(1.0, t_end - time.monotonic()))

    def keyed(d: Mapping[Key, Any]) -> dict[str, Any]:
        return {f"{t}:{p}": v for (t, p), v in d.items()}

    done = {f"{t}:{p}": ends[(t, p)] is not None and reached[(t, p)] >= (ends[(t, p)] or 0)
            for t, p in ends}
    complete = all(done.values())
    detail: dict[str, Any] = {
        "complete": complete, "end_offsets": keyed(ends), "isolation_level": isolation_level,
        "high_watermarks": keyed(hw), "last_stable_offsets": keyed(lso),
        "reached": keyed(reached), "records": records}
    events.phase("drain", "end", **detail)
    return DrainResult(complete, keyed(ends), records, done)
