"""Classifying a produce attempt's outcome from librdkafka's error code (DESIGN.md §3).

Delivery reports never carry ``retriable()`` (KAFKA-FACTS §4.2), so only the code counts.
Only errors that prove the record was never appended are ``fail``; everything else,
including codes this table does not know, is ``info``: calling a written record ``fail``
would make the checker raise a false ``failed-visible`` alarm.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

OK = "ok"
FAIL = "fail"
INFO = "info"


def _codes(*names: str) -> frozenset[int]:
    # getattr: a code absent from this client's build is simply not in the set (=> info).
    return frozenset(getattr(KafkaError, n) for n in names if hasattr(KafkaError, n))


#: Codes that prove the record was not (and will never be) appended.
DEFINITE_FAILURES: frozenset[int] = _codes(
    "_TIMED_OUT_QUEUE",      # timed out in the local queue: never sent
    # Not _PURGE_QUEUE: a message whose first request got no answer waits for its retry in
    # the same queue, and purging it then reports _PURGE_QUEUE although the first attempt
    # may have been appended. Seen: unclean-election with --no-unclean, 4 records sent just
    # before their leader was killed, purged at the end of the workload while the partition
    # was offline, read once that leader came back (failed-visible, a false alarm).
    "_MSG_SIZE_TOO_LARGE",   # refused locally
    "_UNKNOWN_PARTITION",    # refused locally
    "_UNKNOWN_TOPIC",        # refused locally
    "_INVALID_ARG",
    "_STATE",                # produce refused by the (transactional) producer's state
    "NOT_ENOUGH_REPLICAS",   # the leader checks the ISR before appending
    "LEADER_NOT_AVAILABLE",  # no leader: nobody could have appended
    "MSG_SIZE_TOO_LARGE",
    "RECORD_LIST_TOO_LARGE",
    "UNKNOWN_TOPIC_OR_PART",
    "INVALID_REQUIRED_ACKS",
    "INVALID_RECORD",
    "CORRUPT_MESSAGE",
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
)


def classify(err: KafkaError | None) -> str:
    """``ok`` for no error, ``fail`` for a definite failure, ``info`` otherwise."""
    if err is None:
        return OK
    return FAIL if err.code() in DEFINITE_FAILURES else INFO
