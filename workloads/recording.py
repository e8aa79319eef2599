"""Recorded clients: confluent-kafka's ``Producer`` and ``Consumer`` with the same API, writing
the history contract (DESIGN.md §3) for an application's own records.

    producer = RecordingProducer({"bootstrap.servers": ..., "acks": "all"}, run_dir, 0)
    producer.produce("orders", b'{"order": 17}', key=b"17")   # the value is yours
    producer.flush(30)
    producer.close()                                          # resolves and writes the rest

    consumer = RecordingConsumer({"bootstrap.servers": ..., "group.id": "g"}, run_dir, "c0")
    consumer.subscribe(["orders"])
    msg = consumer.poll(1.0)

Every ``produce()`` is an attempt in ``writes.parquet`` (the same rows the workload's producers
write, through :class:`workloads.write_recorder.WriteRecorder`), resolved by its delivery
report; every record a consumer returns is a row of ``reads.parquet`` (through
:class:`workloads.consumer.ReadRecorder`). A record's identity (producer, seq) travels in the
``kc-id`` header (:data:`workloads.record.IDENTITY_HEADER`), added here when the application
gives none, so the value stays the application's own. Everything else is delegated to the
wrapped client. Use one thread per client (delivery reports run in the thread that polls).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, Message, Producer, TopicPartition

from contract.events import EventLog
from workloads.call_watch import InProcessWatch, own_timeout
from workloads.epoch_watch import EpochWatch, is_idempotent, watched
from workloads.history import history_dir
from workloads.record import (
    IDENTITY_HEADER,
    SOURCE_HEADER,
    decode,
    decode_header,
    identity_header,
    parse_identity,
)
from workloads.recording_consumer import GROUP_OF_METADATA, RecordingConsumer
from workloads.write_recorder import WriteRecorder

Headers = list[tuple[str, bytes | str | None]]


def plain_config(config: dict[str, Any]) -> dict[str, str]:
    """The client settings as run.json states them: strings only, callbacks left out."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in config.items() if isinstance(v, str | int | float | bool)}


def _headers(headers: Any) -> Headers:
    if headers is None:
        return []
    if isinstance(headers, dict):
        return list(headers.items())
    return list(headers)


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")  # what confluent-kafka sends for a str value


def identity_of(msg: Message) -> tuple[int, int] | None:
    """(producer, seq) of a consumed record: from kafka-chaos's own value format or the
    ``kc-id`` header; None for a record without either."""
    value = msg.value()
    producer, seq, _ = decode(value)
    if producer is None:
        producer, seq, _ = decode_header(msg.headers(), value)  # type: ignore[arg-type]
    return None if producer is None or seq is None else (producer, seq)


class RecordingProducer:
    """A ``confluent_kafka.Producer`` that records every attempt and outcome.

    ``history``: the run directory (its ``history/`` is written). ``producer_id``: this
    producer's number in the history (unique per run directory). With a
    ``transactional.id``, call ``init_transactions`` and the transaction methods on this
    object: each record's row is written once its transaction's outcome is known.
    """

    def __init__(self, config: dict[str, Any], history: str | Path, producer_id: int = 0
                 ) -> None:
        self.config = dict(config)
        self.run_dir = Path(history)
        self.producer_id = int(producer_id)
        # Epoch bumps librdkafka makes without failing a write (workloads/epoch_watch.py).
        self._events = (EventLog(history_dir(self.run_dir) / "events.jsonl")
                        if is_idempotent(self.config) else None)
        self._epochs = EpochWatch(self._events, self.producer_id)
        self._client: Producer | _ClosedProducer = Producer(
            watched(self.config, self._epochs) if self._events is not None else dict(config))
        self._recorders: dict[str, WriteRecorder] = {}
        self._next_seq = 0
        self._closed = False
        self._txn: str | None = None  # the open transaction's name
        self._txn_no = 0
        self._in_doubt = False
        # hung calls of this client, recorded while they block (workloads/call_watch.py)
        self._watch = InProcessWatch(history_dir(self.run_dir) / "events.jsonl",
                                     f"p{self.producer_id}")
        self._calls = self._watch.slot
        # what librdkafka's transaction calls wait at most when given no timeout (-1)
        self._txn_timeout_s = float(self.config.get("transaction.timeout.ms", 60_000)) / 1000

    @property
    def kafka_config(self) -> dict[str, str]:
        """The settings this producer was made with (for run.json)."""
        return plain_config(self.config)

    def _recorder(self, topic: str) -> WriteRecorder:
        rec = self._recorders.get(topic)
        if rec is None:
            # One recorder per topic (the writes rows keep the topic per part file); each
            # writes its own part files. Sequence numbers are the producer's, across topics.
            rec = WriteRecorder(self.run_dir, self.producer_id, topic,
                                writer=f"p{self.producer_id}-{topic}")
            self._recorders[topic] = rec
            if self._txn is not None:
                rec.begin_txn(self._txn)
        return rec

    # ------------------------------------------------------------------ transactions
    def begin_transaction(self) -> None:
        """``Producer.begin_transaction``; the records produced until it ends carry the
        transaction's name (``<transactional.id>:<producer>:<n>``) and, once it ends, its
        outcome (``txn_outcome``)."""
        with self._calls.call("begin_transaction", None):
            self._client.begin_transaction()
        self._txn = f"{self.config.get('transactional.id')}:{self.producer_id}:{self._txn_no}"
        self._txn_no += 1
        self._in_doubt = False
        for rec in self._recorders.values():
            rec.begin_txn(self._txn)

    def commit_transaction(self, timeout: float = -1) -> None:
        """``Producer.commit_transaction``. Committed: the rows say so. A retriable error
        (a timeout) leaves the transaction open and its outcome in doubt: a commit may have
        reached the coordinator, so an abort after it is recorded ``unknown`` (KAFKA-17754).
        A fatal error ends it ``unknown``; an abortable one leaves it for the abort."""
        try:
            with self._txn_call("commit_transaction", timeout):
                self._client.commit_transaction(timeout)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if err is None or err.fatal():
                self._end_txn("unknown")
            elif err.retriable():
                self._in_doubt = True
            raise
        self._end_txn("committed")

    def abort_transaction(self, timeout: float = -1) -> None:
        """``Producer.abort_transaction``: ``aborted`` once it returns (``unknown`` after a
        commit whose outcome was in doubt); a fatal error ends it ``unknown``."""
        try:
            with self._txn_call("abort_transaction", timeout):
                self._client.abort_transaction(timeout)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if err is None or err.fatal():
                self._end_txn("unknown")
            raise
        self._end_txn("unknown" if self._in_doubt else "aborted")

    def _txn_call(self, name: str, timeout: float, **note: Any) -> AbstractContextManager[None]:
        """A transaction call, watched; -1 waits at most the transaction timeout."""
        return self._calls.call(name, own_timeout(timeout, self._txn_timeout_s), **note)

    def init_transactions(self, timeout: float = -1) -> None:
        """``Producer.init_transactions`` (watched)."""
        with self._txn_call("init_transactions", timeout):
            self._client.init_transactions(timeout)

    def send_offsets_to_transaction(self, positions: list[TopicPartition],
                                    group_metadata: Any, timeout: float = -1) -> None:
        """``Producer.send_offsets_to_transaction`` (watched; a hung call names the group
        when the metadata came from a :class:`RecordingConsumer`)."""
        group = (GROUP_OF_METADATA.get(bytes(group_metadata))
                 if isinstance(group_metadata, bytes) else None)
        note = {"group": group, "transactional_id": self.config.get("transactional.id")} \
            if group is not None else {}
        with self._txn_call("send_offsets_to_transaction", timeout, **note):
            self._client.send_offsets_to_transaction(positions, group_metadata, timeout)

    def _end_txn(self, outcome: str) -> None:
        if self._txn is None:
            return
        self._client.poll(0)  # delivery reports of the transaction's records first
        for rec in self._recorders.values():
            rec.end_txn(outcome)
        self._txn = None

    # ------------------------------------------------------------------ produce
    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                on_delivery: Callable[..., Any] | None = None,
                callback: Callable[..., Any] | None = None, timestamp: int = 0,
                headers: Any = None, source: Message | tuple[int, int] | None = None) -> None:
        """``Producer.produce`` with the attempt recorded (same arguments). ``source``: the
        record this one was made from (a consumed message, or its (producer, seq)), carried
        in the ``kc-src`` header for the pipeline check. A ``kc-id``
        header the caller gives (``<producer>|<seq>``) names the record; otherwise the next
        sequence number is used and the header added."""
        if self._closed:
            raise RuntimeError("produce() on a closed RecordingProducer")
        user_cb = on_delivery or callback
        hdrs = _headers(headers)
        given = [raw for name, raw in hdrs if name == IDENTITY_HEADER and raw is not None]
        if given:
            ident = parse_identity(_as_bytes(given[-1]) or b"")
            if ident is None or ident[0] != self.producer_id:
                raise ValueError(f"{IDENTITY_HEADER} header {given[-1]!r} must be "
                                 f"'{self.producer_id}|<seq>' for this producer")
            seq = ident[1]
        else:
            seq = self._next_seq
            hdrs.append((IDENTITY_HEADER, identity_header(self.producer_id, seq,
                                                          _as_bytes(value))))
        if source is not None:
            src = source if isinstance(source, tuple) else identity_of(source)
            if src is None:
                raise ValueError("the source record carries no kafka-chaos identity")
            hdrs.append((SOURCE_HEADER, b"%d|%d" % src))
        rec = self._recorder(topic)

        def delivered(err: Any, msg: Message) -> None:
            rec.on_delivery(seq, err, msg)
            if user_cb is not None:
                user_cb(err, msg)

        kwargs: dict[str, Any] = {"on_delivery": delivered, "headers": hdrs}
        if partition is not None and partition >= 0:
            kwargs["partition"] = partition
        if timestamp:
            kwargs["timestamp"] = timestamp
        part = partition if partition is not None and partition >= 0 else None
        invoke = time.time_ns()
        try:
            self._client.produce(topic, value, key, **kwargs)
        except BufferError:
            raise  # the local queue is full: not an attempt (the caller polls and retries)
        except KafkaException as e:
            rec.refused(seq, part, invoke, e.args[0] if e.args else None)
            self._advance(seq)
            raise
        rec.invoked(seq, part, invoke)  # part None: the client's partitioner chooses
        self._advance(seq)

    def _advance(self, seq: int) -> None:
        # A seq the user gave may be below ours: never hand out one already used.
        self._next_seq = max(self._next_seq, seq + 1)

    def poll(self, timeout: float = -1) -> int:
        with self._calls.call("poll", own_timeout(timeout)):
            n = self._client.poll(timeout)
        self._maybe_flush()
        return int(n)

    def flush(self, timeout: float = -1) -> int:
        with self._calls.call("flush", own_timeout(timeout)):
            n = self._client.flush(timeout)
        self._maybe_flush()
        return int(n)

    def _maybe_flush(self) -> None:
        for rec in self._recorders.values():
            rec.maybe_flush()

    # ------------------------------------------------------------------ the end
    def close(self, timeout: float = 30.0) -> None:
        """Flushes (bounded by ``timeout``), purges what is left, records every attempt
        without a report as ``info`` and writes the history. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            with self._calls.call("flush", own_timeout(timeout)):
                self._client.flush(timeout)
            with self._calls.call("purge", None):
                self._client.purge(in_queue=True, in_flight=True)
            end = time.monotonic() + 5.0  # purged in-flight requests report asynchronously
            while len(self._client) > 0 and time.monotonic() < end:
                self._client.poll(0.1)
            self._client.poll(0)
        except KafkaException:
            pass  # whatever is left unanswered is recorded as info below
        for rec in self._recorders.values():
            rec.resolve_remaining()
            rec.close()
        self._watch.close()
        if self._events is not None:
            self._events.close()
        # Dropping the last reference destroys the handle (its threads and connections) now,
        # not when the application lets go of this object: a handle kept alive reconnects to
        # brokers long gone. Not Producer.close(), which newer clients make abort an open
        # transaction; a closed recorded producer must leave one as a crashed process does.
        self._client = _ClosedProducer()

    def stats(self) -> dict[str, dict[str, Any]]:
        """The recorders' counts per topic (attempts, ok, fail, info, errors)."""
        return {topic: rec.stats() for topic, rec in self._recorders.items()}

    def __enter__(self) -> RecordingProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._client)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)  # everything not recorded is the client's own


class _ClosedProducer:
    """What a closed :class:`RecordingProducer` wraps: nothing is queued, every call raises."""

    def __len__(self) -> int:
        return 0

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"Producer.{name}: the recorded producer is closed")


__all__ = ["RecordingConsumer", "RecordingProducer", "identity_of", "plain_config"]
