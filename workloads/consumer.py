"""One consumer process of the run, recording every record it reads into reads.parquet.

``assign`` mode reads fixed partitions from the beginning without a group; ``subscribe``
mode joins the run's consumer group (commits on, rebalances happen when brokers fail).
``restart`` mode is a group consumer alone in its own group (``<group>-<reader>``) that,
once it has caught up (its last batch ended with a partition's end event; without
enable.partition.eof, a consume() returned nothing) and ``restart_interval_s`` has passed,
closes (committing its stored offsets) and, after ``restart_pause_s`` (the time a restart
takes), starts a new consumer in the same group: the new one resumes at the committed
offsets, so it may re-read (at least once) but never skip a record (librdkafka#4844 breaks
exactly that). Every ``consume()`` call is one poll number. Rebalances are written to events.jsonl
(``kind: "rebalance"``) so the checker can tell a skip across a rebalance from one without.
librdkafka's silent seeks after truncation (offset reset to earliest) are not hidden.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from contract.events import INSTANT, REBALANCE, EventLog
from contract.schemas import READS_SCHEMA
from workloads.call_watch import CallSlot
from workloads.child_logging import SignatureWatch, configure_logging, librdkafka_logger
from workloads.client_info import client_versions
from workloads.config import ConsumerConfig, ConsumerSpec
from workloads.consumer_errors import ConsumerErrors
from workloads.history import ChunkedParquetWriter, history_dir
from workloads.record import decode, decode_header, source_of

log = logging.getLogger("kafka_chaos.workloads.consumer")


class ReadRecorder:
    """Appends reads of one reader to reads.parquet (its own part files)."""

    def __init__(self, run_dir: Path, reader: str, mode: str, chunk_rows: int = 50_000,
                 flush_interval_s: float = 2.0) -> None:
        self.reader = reader
        self.mode = mode
        self.writer = ChunkedParquetWriter(history_dir(run_dir) / "reads.parquet", READS_SCHEMA,
                                           reader, chunk_rows=chunk_rows,
                                           flush_interval_s=flush_interval_s)
        self.polls = 0
        self.records = 0
        self.invalid = 0
        # (poll, how many records of it were added): each read's poll_index
        self._in_poll = (-1, 0)

    def record(self, poll: int, msgs: list[Any]) -> int:
        """Records the data messages of one consume() call (error events are skipped);
        returns how many there were."""
        now = time.time_ns()
        before = self.records
        for m in msgs:
            if m.error() is None:
                self.add(poll, now, m.topic(), m.partition(), m.offset(), m.value(), m.headers)
        return self.records - before

    def add(self, poll: int, read_ns: int, topic: str, partition: int, offset: int,
            value: bytes | None,
            headers: Callable[[], list[tuple[str, bytes | None]] | None] | None = None) -> None:
        """One record read, in the order its poll returned them; ``headers`` gives its
        headers, asked only for a value that is not the contract's format."""
        producer, seq, valid = decode(value)
        src_producer = src_seq = None
        if producer is None and headers is not None:
            # Not our value format: an application's record whose identity (and, for a
            # derived record, its source's) travels in headers (workloads/recording.py).
            hdrs = headers()
            producer, seq, valid = decode_header(hdrs, value)
            src_producer, src_seq = source_of(hdrs)
        last, n = self._in_poll
        index = n if poll == last else 0
        self._in_poll = (poll, index + 1)
        self.writer.append_values((self.reader, self.mode, poll, read_ns, topic, partition,
                                   offset, producer, seq, valid, src_producer, src_seq, index))
        self.records += 1
        if not valid:
            self.invalid += 1

    def close(self) -> None:
        self.writer.close()


def rebalance_event(events: EventLog, reader: str, what: str, poll: int,
                    parts: list[TopicPartition] | list[str]) -> None:
    """A subscribe-mode reader's partitions (or their ``topic:partition`` names) were
    ``assigned``, ``revoked`` or ``lost``."""
    events.emit(REBALANCE, INSTANT, [], {
        "reader": reader, "what": what, "poll": poll,
        "partitions": [tp if isinstance(tp, str) else f"{tp.topic}:{tp.partition}"
                       for tp in parts]})


def consumer_client(bootstrap: str, conf: dict[str, str], client_id: str,
                    watch: SignatureWatch | None = None) -> Consumer:
    full: dict[str, Any] = {"bootstrap.servers": bootstrap, "client.id": client_id,
                            "log.connection.close": False}
    full.update(conf)
    full["logger"] = librdkafka_logger(full, watch)
    return Consumer(full)


class ConsumerProcess:
    """The read loop of one consumer: consume() until the stop event (or SIGTERM)."""

    def __init__(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                 cfg: ConsumerConfig, spec: ConsumerSpec, stop_event: Any,
                 slot: Any = None) -> None:
        self.cfg = cfg
        self.calls = CallSlot(slot)  # watched calls and reads (workloads/call_watch.py)
        self.spec = spec
        self.topic = topic
        self.stop_event = stop_event
        self.terminating = False
        self.events = EventLog(history_dir(run_dir) / "events.jsonl")
        self.reads = ReadRecorder(run_dir, spec.id, spec.mode, cfg.history_chunk_rows,
                                  cfg.history_flush_interval_s)
        self.bootstrap = bootstrap
        self.errors = ConsumerErrors(self.events, spec.id, client_versions()["librdkafka"])
        self.signatures = SignatureWatch(self.events, spec.id)
        self.last_poll_ns = 0  # when the latest consume() returned
        self.stalls = 0
        self.restarts = 0
        self.at_eof = False  # the last non-empty consume() ended with a partition's end event
        conf = cfg.kafka_config()
        if spec.mode == "restart":
            # Alone in its group: no other member can take a partition, so every resumption
            # is at the offset this reader committed.
            conf["group.id"] = f"{cfg.group_id}-{spec.id}"
        self.conf = conf
        self.eof_enabled = conf.get("enable.partition.eof", "false").lower() == "true"
        if spec.mode == "assign":
            # No group at all: nothing is committed and no rebalance can move partitions.
            conf = {k: v for k, v in conf.items() if k not in (
                "group.id", "enable.auto.commit", "auto.commit.interval.ms",
                "session.timeout.ms", "heartbeat.interval.ms", "group.protocol")}
            conf["group.id"] = f"kc-assign-{spec.id}"  # librdkafka requires one; never joined
            conf["enable.auto.commit"] = "false"
        self.client = consumer_client(bootstrap, conf, f"kc-consumer-{spec.id}",
                                      self.signatures)
        if spec.mode == "assign":
            parts = spec.partitions if spec.partitions is not None else list(range(partitions))
            self.client.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        else:
            self._subscribe()
        self.started = time.monotonic()

    def _subscribe(self) -> None:
        self.client.subscribe([self.topic], on_assign=self._on_assign,
                              on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _restart(self, down: bool = False) -> None:
        """Close (the final commit of the stored offsets) and join again as a new consumer.
        The step is recorded as a rebalance ``what: "restart"`` of the partitions it held.
        ``down`` (a consumer-down fault): answer once closed, and stay closed until the
        run lets go instead of for ``restart_pause_s``."""
        parts = self.client.assignment()
        self._rebalance("restart", parts)
        # The application's last work before it closes: no consume() meanwhile. (The stop
        # flag has no wait(): polled, as below.)
        linger = time.monotonic() + (0.0 if down else self.cfg.restart_close_delay_s)
        while time.monotonic() < linger and not self.terminating and not self.stop_event.is_set():
            time.sleep(0.05)
        try:
            with self.calls.call("close", None):
                self.client.close()
        except Exception as e:  # noqa: BLE001 - a failed close commits nothing: a re-read
            log.info("consumer %s: close before restart: %s", self.spec.id, e)
        self.restarts += 1
        self.at_eof = False
        # A restart takes time (a process or a pod comes back): the producers write on.
        # (The stop flag has no wait(): workloads.processes.StopFlag.) Held down, the
        # request lives in shared memory that has nothing to block on: it is polled.
        until = time.monotonic() + self.cfg.restart_pause_s
        if down:
            self.calls.stalled(time.time_ns())
        while ((self.calls.down_requested() if down else time.monotonic() < until)
               and not self.terminating and not self.stop_event.is_set()):
            time.sleep(0.05)
        if down:
            self.calls.stalled(0)
        self.client = consumer_client(self.bootstrap, self.conf, f"kc-consumer-{self.spec.id}",
                                      self.signatures)
        self._subscribe()
        self.started = time.monotonic()

    def _caught_up(self, msgs: list[Any]) -> bool:
        """Whether the reader has caught up: with enable.partition.eof, the last non-empty
        consume() ended with the end event (nothing read after it moved the position on);
        without, a consume() returned nothing."""
        if msgs:
            err = msgs[-1].error()
            self.at_eof = err is not None and err.code() == KafkaError._PARTITION_EOF
        return self.at_eof or (not msgs and not self.eof_enabled)

    def _rebalance(self, what: str, parts: list[TopicPartition]) -> None:
        rebalance_event(self.events, self.spec.id, what, self.reads.polls, parts)

    def _on_assign(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        self._rebalance("assigned", parts)

    def _on_revoke(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        self._rebalance("revoked", parts)

    def _on_lost(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        self._rebalance("lost", parts)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.terminating = True

    def _stall(self) -> None:
        """A poll-stall fault: no consume() until the run lets go (or the run stops), as an
        application busy with a batch; librdkafka's own threads go on heartbeating."""
        self.stalls += 1
        self.calls.stalled(self.last_poll_ns or time.time_ns())
        # The stall is the point, not a wait for something: the flag is polled, since the
        # run's request lives in shared memory that has nothing to block on.
        while (self.calls.stall_requested() and not self.terminating
               and not self.stop_event.is_set()):
            time.sleep(0.02)
        self.calls.stalled(0)

    def _consume(self, n: int, timeout: float) -> list[Any]:
        """One consume() call; its fatal and max-poll errors go into the history. A fatal
        consumer raises from then on: the loop goes on (its process must end cleanly, or
        its liveness could not be told), slowed to one call per poll timeout."""
        try:
            with self.calls.call("consume", timeout):
                msgs = self.client.consume(n, timeout)
        except KafkaException as e:
            self.errors.seen(e.args[0] if e.args else None)
            log.info("consumer %s: consume raised %s", self.spec.id, e)
            time.sleep(timeout)  # a failed call returns at once: not a busy loop
            return []
        finally:
            self.last_poll_ns = time.time_ns()
        for m in msgs:
            err = m.error()
            if err is not None:
                self.errors.seen(err)
        return msgs

    def run(self) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        n = self.cfg.max_poll_records
        timeout = self.cfg.poll_timeout_s
        try:
            while not self.terminating and not self.stop_event.is_set():
                if self.calls.stall_requested():
                    self._stall()
                    continue
                if self.calls.down_requested():
                    self._restart(down=True)
                    continue
                self.reads.polls += 1
                msgs = self._consume(n, timeout)
                if msgs:
                    if self.reads.record(self.reads.polls, msgs):
                        self.calls.progress()
                    for m in msgs:
                        err = m.error()
                        if err is not None and err.code() != KafkaError._PARTITION_EOF:
                            log.info("consumer %s: %s", self.spec.id, err)
                else:
                    self.reads.writer.maybe_flush()
                if (self.spec.mode == "restart" and self.client.assignment()
                        and time.monotonic() - self.started >= self.cfg.restart_interval_s
                        and self._caught_up(msgs)):
                    self._restart()
        finally:
            self.reads.close()
            try:
                with self.calls.call("close", None):
                    self.client.close()
            except Exception as e:  # noqa: BLE001 - closing during faults may fail; history is safe
                log.info("consumer %s: close: %s", self.spec.id, e)
            self.events.close()

    def stats(self) -> dict[str, Any]:
        return {"reader": self.spec.id, "mode": self.spec.mode, "polls": self.reads.polls,
                "records": self.reads.records, "invalid": self.reads.invalid,
                "restarts": self.restarts, "stalls": self.stalls,
                "fatal_errors": self.errors.fatal}


def consumer_main(run_dir: Path, bootstrap: str, topic: str, partitions: int,
                  cfg: ConsumerConfig, spec: ConsumerSpec, stop_event: Any,
                  stats_queue: Any, slot: Any = None) -> None:
    """Entry point of a consumer process (spawned by workloads.processes); ``slot``: its
    call-watch slot (workloads.call_watch)."""
    configure_logging(run_dir, spec.id)
    try:
        proc = ConsumerProcess(run_dir, bootstrap, topic, partitions, cfg, spec, stop_event,
                               slot)
    except Exception:  # its log says why it never read (stderr is the run's terminal)
        log.exception("consumer %s could not start", spec.id)
        raise
    try:
        proc.run()
    finally:
        if stats_queue is not None:
            stats_queue.put({**proc.stats(), "client": client_versions()})
