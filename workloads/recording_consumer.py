"""The recorded consumer: a ``confluent_kafka.Consumer`` that records every record it returns
(reads.parquet), its rebalances (events) and its watched calls (workloads/call_watch.py).
:mod:`workloads.recording` re-exports it beside the recorded producer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Message, TopicPartition

from contract.events import EventLog
from workloads.call_watch import InProcessWatch, own_timeout
from workloads.consumer import ReadRecorder, rebalance_event
from workloads.history import history_dir

#: Group metadata a RecordingConsumer handed out -> its group.id (confluent-kafka's metadata
#: is opaque bytes): how a recorded producer knows which group its offsets are for.
GROUP_OF_METADATA: dict[bytes, str] = {}
_MAXGROUP_OF_METADATA = 4096


class RecordingConsumer:
    """A ``confluent_kafka.Consumer`` that records every record it returns.

    ``history``: the run directory. ``reader``: this reader's name in reads.parquet (unique
    per run directory; ``drain`` is the final drain's). Its mode is ``subscribe`` or
    ``assign``, by the first of the two called. Rebalances are ``rebalance`` events.
    """

    def __init__(self, config: dict[str, Any], history: str | Path, reader: str = "c0") -> None:
        if reader == "drain":
            raise ValueError("reader 'drain' is the final drain's")
        self.config = dict(config)
        self.run_dir = Path(history)
        self.reader = reader
        self._client = Consumer(dict(config))
        self._reads: ReadRecorder | None = None
        self._events = EventLog(history_dir(self.run_dir) / "events.jsonl")
        self._closed = False
        self._watch = InProcessWatch(history_dir(self.run_dir) / "events.jsonl", reader)
        self._calls = self._watch.slot
        #: whether its group metadata was taken (for a transaction's offsets)
        self.offers_offsets = False

    @property
    def kafka_config(self) -> dict[str, str]:
        from workloads.recording import plain_config  # (it imports this module)

        return plain_config(self.config)

    @property
    def mode(self) -> str | None:
        return self._reads.mode if self._reads is not None else None

    def _recorder(self, mode: str) -> ReadRecorder:
        if self._reads is None:
            self._reads = ReadRecorder(self.run_dir, self.reader, mode)
        return self._reads

    # ------------------------------------------------------------------ assignment
    def subscribe(self, topics: list[str], on_assign: Callable[..., Any] | None = None,
                  on_revoke: Callable[..., Any] | None = None,
                  on_lost: Callable[..., Any] | None = None) -> None:
        """``Consumer.subscribe``; each rebalance is also an event of the history."""
        reads = self._recorder("subscribe")

        def hook(what: str, user: Callable[..., Any] | None) -> Callable[..., Any]:
            def cb(consumer: Consumer, parts: list[TopicPartition]) -> None:
                rebalance_event(self._events, self.reader, what, reads.polls, parts)
                if user is not None:
                    user(consumer, parts)
            return cb

        self._client.subscribe(topics, on_assign=hook("assigned", on_assign),
                               on_revoke=hook("revoked", on_revoke),
                               on_lost=hook("lost", on_lost))

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._recorder("assign")
        self._client.assign(partitions)

    # ------------------------------------------------------------------ reading
    def poll(self, timeout: float = -1) -> Message | None:
        """``Consumer.poll``: one poll number; a data message is recorded."""
        reads = self._recorder("subscribe")
        reads.polls += 1
        with self._calls.call("poll", own_timeout(timeout)):
            msg = self._client.poll(timeout)
        if msg is not None:
            reads.record(reads.polls, [msg])
        else:
            reads.writer.maybe_flush()
        return msg

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """``Consumer.consume``: one poll number; its data messages are recorded."""
        reads = self._recorder("subscribe")
        reads.polls += 1
        with self._calls.call("consume", own_timeout(timeout)):
            msgs = self._client.consume(num_messages, timeout)
        if msgs:
            reads.record(reads.polls, msgs)
        else:
            reads.writer.maybe_flush()
        return list(msgs)

    def close(self) -> None:
        """Closes the client and writes the reads recorded so far. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            with self._calls.call("close", None):
                self._client.close()
        finally:
            if self._reads is not None:
                self._reads.close()
            self._watch.close()
            self._events.close()

    def consumer_group_metadata(self) -> Any:
        """``Consumer.consumer_group_metadata``. The group it names is remembered: a recorded
        producer's ``send_offsets_to_transaction`` of it names the group in a hung-call
        event, and a session's faults record that group's coordinator
        (:attr:`offers_offsets`)."""
        metadata = self._client.consumer_group_metadata()
        group = self.config.get("group.id")
        if isinstance(metadata, bytes) and group is not None:
            if len(GROUP_OF_METADATA) >= _MAXGROUP_OF_METADATA:
                GROUP_OF_METADATA.clear()  # a bound, not a cache: only the latest matter
            GROUP_OF_METADATA[metadata] = str(group)
            self.offers_offsets = True
        return metadata

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        """``Consumer.commit`` (watched: a synchronous commit has no timeout of its own)."""
        with self._calls.call("commit", None):
            return self._client.commit(*args, **kwargs)

    @property
    def records(self) -> int:
        """Data records recorded so far."""
        return self._reads.records if self._reads is not None else 0

    def __enter__(self) -> RecordingConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)  # commit, seek, position, ... are the client's


__all__ = ["GROUP_OF_METADATA", "RecordingConsumer"]
