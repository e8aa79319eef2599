"""One producer process: sequenced records to explicit partitions, every attempt recorded.

A producer stops by itself at the end of its duration, after ``max_records``, or when the
shared stop event is set. It ignores SIGINT (the orchestrator owns Ctrl-C and sets the event);
SIGTERM, the orchestrator's last resort, cuts the waits short but still writes the history.
At the end of the produce phase it flushes (bounded), purges what is left and records those
attempts by their purge error, so no attempt is missing from writes.parquet.
"""

from __future__ import annotations

import functools
import gc
import logging
import random
import signal
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from contract.events import CLIENT_ERROR, INSTANT, RECORDED_CLIENT_ERRORS, EventLog
from workloads.call_watch import CallSlot
from workloads.child_logging import SignatureWatch, configure_logging, librdkafka_logger
from workloads.client_info import client_versions
from workloads.config import ProducerConfig
from workloads.epoch_watch import EpochWatch, watched
from workloads.history import history_dir
from workloads.record import encode
from workloads.write_recorder import make_recorder

log = logging.getLogger("kafka_chaos.workloads.producer")

# Flat out, the stop/deadline checks and poll() run once per this many records.
_FLAT_OUT_BATCH = 64
# Automatic garbage collection is off in producer processes: every attempt allocates
# container objects (rows, callbacks) and the collector's generational scans of the
# in-flight ones cost about a third of the recording overhead. Nothing here makes reference
# cycles on purpose; a full collection at this interval reclaims any that appear.
_GC_INTERVAL_S = 10.0


class StopSignal(Exception):
    """Raised inside the producer loop when the process should wind down at once."""


def client_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError a client call failed with, or None when it is not the client's.

    confluent-kafka sometimes leaves a fatal error set while it runs a delivery callback;
    Python then reports a SystemError whose cause is the KafkaException (seen in a flush
    after an all-replicas power loss), so the cause is looked at too."""
    for e in (exc, exc.__cause__):
        if isinstance(e, KafkaException):
            err = e.args[0] if e.args else None
            return err if isinstance(err, KafkaError) else None
    return None


class ProducerProcess:
    """The state of one producer process: its client, its recorder, its stop conditions."""

    def __init__(self, run_dir: Path | None, bootstrap: str, topic: str, partitions: int,
                 cfg: ProducerConfig, producer_id: int, stop_event: Any = None,
                 slot: Any = None) -> None:
        self.cfg = cfg
        self.calls = CallSlot(slot)  # watched calls and acknowledgements (call_watch.py)
        self.bootstrap = bootstrap
        self.topic = topic
        self.id = producer_id
        self.stop_event = stop_event
        self.parts = list(cfg.partitions) if cfg.partitions is not None else list(range(partitions))
        if not self.parts:
            raise ValueError("a producer needs at least one partition")
        self.rng = random.Random(cfg.seed * 1_000_003 + producer_id)
        self.recorder = make_recorder(run_dir, producer_id, topic, record=cfg.record_history,
                                      transactional=cfg.transactional,
                                      chunk_rows=cfg.history_chunk_rows,
                                      flush_interval_s=cfg.history_flush_interval_s,
                                      round_robin=(None if cfg.partitioner == "random"
                                                   else self.parts))
        self.seq = 0
        self.terminating = False  # SIGTERM seen
        self.fatal: KafkaError | None = None
        self.deadline = time.monotonic() + cfg.duration_s
        self._next_gc = time.monotonic() + _GC_INTERVAL_S
        # Epoch bumps librdkafka makes without failing a write (workloads/epoch_watch.py).
        self.events = (EventLog(history_dir(run_dir) / "events.jsonl")
                       if run_dir is not None and cfg.record_history else None)
        self.epochs = EpochWatch(self.events if cfg.idempotent else None, producer_id)
        self.signatures = (SignatureWatch(self.events, f"p{producer_id}")
                           if self.events is not None else None)
        self.client = self.new_client()
        # a group consumer whose positions each transaction sends (workloads/txn_offsets.py)
        self.offsets: Any = None
        group = cfg.offsets_groups.get(producer_id) if cfg.transactional else None
        if group is not None:
            from workloads.txn_offsets import OffsetsSource
            self.offsets = OffsetsSource(bootstrap, topic, group, producer_id)

    # ------------------------------------------------------------------ client
    def client_config(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap,
                                "client.id": f"kc-producer-{self.id}",
                                "error_cb": self._on_error,
                                # Faults make brokers unreachable; that is not news.
                                "log.connection.close": False}
        conf.update(self.cfg.kafka_config(self.id))
        conf["logger"] = librdkafka_logger(conf, self.signatures)
        # a statistics.interval.ms of the user's (extra) is kept
        return watched(conf, self.epochs) if self.epochs.events is not None else conf

    def new_client(self) -> Producer:
        self.fatal = None
        self.epochs.reset(self.seq)
        return Producer(self.client_config())

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            log.error("producer %d: fatal client error %s", self.id, err)
            self.fatal = err
        else:
            log.info("producer %d: client error %s", self.id, err)
        if self.events is not None and err.name() in RECORDED_CLIENT_ERRORS:
            self.events.emit(CLIENT_ERROR, INSTANT, [], {
                "client": f"p{self.id}", "name": err.name(), "reason": err.str()})

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.terminating = True

    def poll(self, timeout: float = 0.0) -> None:
        """Serves delivery reports. A fatal client error raised here is kept for the loop
        (the client is then recreated) instead of ending the process."""
        try:
            with self.calls.call("poll", timeout):
                self.client.poll(timeout)
        except (KafkaException, SystemError) as e:
            err = client_error(e)
            if err is None:
                raise
            log.warning("producer %d: poll: %s", self.id, err)
            if err.fatal():
                self.fatal = err
        finally:
            if self.recorder.last_ack_ns:
                self.calls.progress(self.recorder.last_ack_ns)

    def housekeeping(self) -> None:
        """Time-based chores of the loops: history flush and the periodic collection."""
        self.recorder.maybe_flush()
        now = time.monotonic()
        if now >= self._next_gc:
            self._next_gc = now + _GC_INTERVAL_S
            gc.collect()

    # ------------------------------------------------------------------ stop conditions
    def should_stop(self) -> bool:
        if self.terminating or time.monotonic() >= self.deadline:
            return True
        if self.cfg.max_records and self.seq >= self.cfg.max_records:
            return True
        return self.stop_event is not None and self.stop_event.is_set()

    def next_partition(self) -> int:
        if self.cfg.partitioner == "random":
            return self.rng.choice(self.parts)
        return self.parts[self.seq % len(self.parts)]

    # ------------------------------------------------------------------ sending
    def send_one(self) -> None:
        """Produces record ``self.seq`` (waiting while the local queue is full)."""
        seq = self.seq
        part = self.next_partition()
        value = encode(self.id, seq, self.cfg.record_size)
        cb = functools.partial(self.recorder.on_delivery, seq)
        while True:
            invoke = time.time_ns()
            try:
                self.client.produce(self.topic, value, partition=part, on_delivery=cb)
            except BufferError:
                # Queue full: not an attempt yet; let deliveries drain, then try again.
                self.poll(0.05)
                if self.terminating:
                    raise StopSignal() from None
                continue
            except KafkaException as e:
                self.recorder.refused(seq, part, invoke, e.args[0] if e.args else None)
                self.seq += 1
                raise
            break
        self.recorder.invoked(seq, part, invoke)
        self.seq += 1

    def run_plain(self) -> None:
        """The non-transactional produce loop, paced at ``cfg.rate`` (0: flat out), after
        the producer's idle start (``cfg.idle_s``): serving its client, sending nothing."""
        idle_until = time.monotonic() + self.cfg.idle_s.get(self.id, 0.0)
        while time.monotonic() < idle_until and not self.should_stop():
            self.poll(min(0.2, max(0.0, idle_until - time.monotonic())))
            self.housekeeping()
        interval = 1.0 / self.cfg.rate if self.cfg.rate > 0 else 0.0
        next_t = time.monotonic()
        while not self.should_stop():
            if self.fatal is not None:
                self.recreate_client()
            if interval:
                wait = next_t - time.monotonic()
                if wait > 0:
                    self.poll(min(wait, 0.1))
                    self.housekeeping()
                    continue
                # Behind schedule (e.g. blocked on a full queue): catch up by at most 1 s.
                next_t = max(next_t + interval, time.monotonic() - 1.0)
                self._send_guarded()
                self.poll(0)
                self.housekeeping()
            else:
                n = _FLAT_OUT_BATCH
                if self.cfg.max_records:
                    n = min(n, self.cfg.max_records - self.seq)
                for _ in range(n):
                    self._send_guarded()
                self.poll(0)
                self.housekeeping()

    def _send_guarded(self) -> None:
        try:
            self.send_one()
        except KafkaException as e:
            err = client_error(e)
            log.warning("producer %d: produce() refused seq %d: %s", self.id, self.seq - 1, err)
            if err is not None and err.fatal():
                self.fatal = err

    def recreate_client(self) -> None:
        """After a fatal error: every attempt the old client still holds is unknown."""
        log.warning("producer %d: recreating the client after %s", self.id, self.fatal)
        self.abandon_client()
        self.client = self.new_client()

    def abandon_client(self) -> None:
        """Purges the client, collects the purge reports, drops it."""
        try:
            with self.calls.call("purge", None):
                self.client.purge(in_queue=True, in_flight=True)
            # Purged in-flight requests report asynchronously (from the broker threads):
            # wait, bounded, until every message has had its report.
            end = time.monotonic() + 5.0
            while len(self.client) > 0 and time.monotonic() < end:
                with self.calls.call("poll", 0.1):
                    self.client.poll(0.1)
            with self.calls.call("poll", 0):
                self.client.poll(0)
        except (KafkaException, SystemError) as e:
            if client_error(e) is None:
                raise
            log.info("producer %d: purge: %s", self.id, e)
        finally:
            self.recorder.resolve_remaining()

    # ------------------------------------------------------------------ the end
    def deliver(self, timeout_s: float) -> None:
        """Serves delivery reports until nothing is outstanding, a fatal error, or the
        timeout. Not ``flush()``: after a fatal error confluent-kafka's flush goes on running
        delivery callbacks with the error still set, which fails them half-way (a
        SystemError) and loses their reports; ``poll()`` stops at the error."""
        end = time.monotonic() + timeout_s
        while len(self.client) > 0 and self.fatal is None:
            left = end - time.monotonic()
            if left <= 0:
                break
            self.poll(min(0.5, left))

    def finish(self) -> None:
        """Deliver (bounded), purge the rest, resolve unanswered attempts, write the history."""
        timeout = self.cfg.flush_timeout_s
        if self.terminating:
            timeout = min(timeout, 1.0)
        try:
            self.deliver(timeout)
            self.abandon_client()
        finally:
            if self.offsets is not None:
                self.offsets.close()
            self.recorder.close()  # whatever happened above, the attempts reach the history
            if self.events is not None:
                self.events.close()


def producer_main(run_dir: Path | None, bootstrap: str, topic: str, partitions: int,
                  cfg: ProducerConfig, producer_id: int, stop_event: Any,
                  stats_queue: Any, slot: Any = None) -> None:
    """Entry point of a producer process (spawned by workloads.processes); ``slot``: its
    call-watch slot (workloads.call_watch)."""
    configure_logging(run_dir, f"p{producer_id}")
    log.info("producer %d: client %s", producer_id, client_versions())
    gc.disable()  # see _GC_INTERVAL_S
    try:
        proc = ProducerProcess(run_dir, bootstrap, topic, partitions, cfg, producer_id,
                               stop_event, slot)
    except Exception:  # its log says why it never wrote (stderr is the run's terminal)
        log.exception("producer %d could not start", producer_id)
        raise
    proc.install_signal_handlers()
    cpu0 = time.process_time()  # imports and client set-up are not the produce phase
    try:
        if cfg.transactional:
            from workloads.txn_producer import run_transactional
            run_transactional(proc)
        else:
            proc.run_plain()
    except StopSignal:
        pass
    finally:
        proc.finish()
        stats = proc.recorder.stats()
        # CPU of the produce phase, this process's threads included (librdkafka's too).
        stats["cpu_s"] = time.process_time() - cpu0
        stats["epoch_changes"] = proc.epochs.changes
        if proc.offsets is not None:
            stats["offsets_sent"] = proc.offsets.sent
        stats["client"] = client_versions()  # what this process loaded (run.json versions)
        log.info("producer %d done: %s", producer_id, stats)
        if stats_queue is not None:
            stats_queue.put(stats)
