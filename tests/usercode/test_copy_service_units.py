"""The copy service's watchdog without a cluster: a transactional call that blocks past its
own timeout (librdkafka#5456: send_offsets_to_transaction once the group coordinator was
down) makes the incarnation restart instead of hanging the service; other calls pass their
result or their error through."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.usercode.copy_example import load_copy_service


def test_a_call_blocked_past_its_timeout_is_hung_and_others_pass_through(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ex = load_copy_service()
    monkeypatch.setattr(ex, "HUNG_GRACE_S", 0.2)
    release = threading.Event()
    with pytest.raises(ex.Hung, match="send_offsets_to_transaction blocked for 0s"):
        ex.bounded(lambda: release.wait(30), 0.1, "send_offsets_to_transaction")
    release.set()  # the abandoned call's thread ends with the test
    assert ex.bounded(lambda: 7, 1.0, "commit_transaction") == 7

    def refused() -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    with pytest.raises(KafkaException):
        ex.bounded(refused, 1.0, "commit_transaction")
