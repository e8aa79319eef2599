"""Classifying a produce attempt's outcome from librdkafka's error code (DESIGN.md §3).

Delivery reports never carry ``retriable()`` (KAFKA-FACTS §4.2), so only the code counts.
Only errors that prove the record was never appended are ``fail`` (the table and its reasons
are the contract's, contract/clients.py); everything else is ``info``.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from contract.clients import CONFLUENT_KAFKA
from contract.clients import DEFINITE_FAILURES as DEFINITE_FAILURES_BY_CLIENT

OK = "ok"
FAIL = "fail"
INFO = "info"


def _codes(*names: str) -> frozenset[int]:
    # getattr: a code absent from this client's build is simply not in the set (=> info).
    return frozenset(getattr(KafkaError, n) for n in names if hasattr(KafkaError, n))


#: Codes that prove the record was not (and will never be) appended: the contract's
#: table of librdkafka error names (contract/clients.py, with the reasons).
DEFINITE_FAILURES: frozenset[int] = _codes(*DEFINITE_FAILURES_BY_CLIENT[CONFLUENT_KAFKA])


def classify(err: KafkaError | None) -> str:
    """``ok`` for no error, ``fail`` for a definite failure, ``info`` otherwise."""
    if err is None:
        return OK
    return FAIL if err.code() in DEFINITE_FAILURES else INFO
