"""The consumer errors a run keeps in its history as they happen (``consumer-error`` events).

A consumer that dies of a fatal error reads nothing more, and its liveness check says only
that: stuck. What killed it is librdkafka's error, which the consumer sees once, on the
consume() that follows it (later calls may raise it again), so the read loop writes it down
then. ``_MAX_POLL_EXCEEDED`` is written too: it is the client's own word that the
application did not poll for longer than ``max.poll.interval.ms`` (after a poll-stall fault,
contract.faults). Other errors (a broker down, a transport error) are routine under faults
and stay in the consumer's log only.
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

from confluent_kafka import KafkaError

from contract.events import CONSUMER_ERROR, INSTANT, EventLog

#: At most one event per client and error code in this many nanoseconds: a fatal consumer
#: repeats its error on every call.
_EVERY_NS = 1_000_000_000


def is_fatal(err: KafkaError) -> bool:
    """Whether the error is fatal to the client. A consumer's fatal error reaches consume()
    as code ``_FATAL`` with ``fatal()`` false (seen with confluent-kafka 2.14.2 and 2.15.0):
    either says so."""
    return bool(err.fatal()) or err.code() == KafkaError._FATAL


def worth_recording(err: KafkaError) -> bool:
    """A fatal error, or max.poll.interval.ms exceeded."""
    return is_fatal(err) or err.code() == KafkaError._MAX_POLL_EXCEEDED


@cache
def _names_by_text() -> dict[str, str]:
    """librdkafka's description of each error code -> the code's name
    (``"Broker: Invalid request"`` -> ``INVALID_REQUEST``)."""
    out: dict[str, str] = {}
    for name in dir(KafkaError):
        code = getattr(KafkaError, name)
        if name.lstrip("_").isupper() and isinstance(code, int):
            out.setdefault(KafkaError(code).str(), name)
    return out


def fatal_cause(reason: str) -> str | None:
    """The error a fatal error's text names first, by librdkafka's description of it:
    ``"Fatal error: Broker: Invalid request: ConsumerGroupHeartbeat fatal error: ..."`` ->
    ``INVALID_REQUEST`` (None: it names none). confluent-kafka gives no other way to the
    code behind ``_FATAL``."""
    text = reason.removeprefix("Fatal error: ")
    found = [d for d in _names_by_text() if d and text.startswith(d)
             and text[len(d):len(d) + 1] in ("", ":")]
    return _names_by_text()[max(found, key=len)] if found else None


class ConsumerErrors:
    """Writes one reader's fatal and max-poll errors as ``consumer-error`` events."""

    def __init__(self, events: EventLog, reader: str, librdkafka: str) -> None:
        self.events = events
        self.reader = reader
        self.librdkafka = librdkafka
        self._last: dict[int, int] = {}  # code -> ts_ns of its last event
        self.fatal = 0  # fatal errors seen (events or not)

    def seen(self, err: Any) -> None:
        """One error a consume() returned or raised (anything else than a KafkaError, or a
        routine one, is left alone)."""
        if not isinstance(err, KafkaError) or not worth_recording(err):
            return
        fatal = is_fatal(err)
        if fatal:
            self.fatal += 1
        now = time.time_ns()
        code = int(err.code())
        if now - self._last.get(code, -_EVERY_NS) < _EVERY_NS:
            return
        self._last[code] = now
        self.events.emit(CONSUMER_ERROR, INSTANT, [], {
            "client": self.reader, "code": code, "name": err.name(),
            "fatal": fatal, "reason": err.str(),
            **({"cause": fatal_cause(err.str())} if fatal else {}),
            "librdkafka": self.librdkafka}, ts_ns=now)
