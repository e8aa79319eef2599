"""What a consumer writes of its errors (workloads/consumer_errors.py), without a cluster: the
fatal error confluent-kafka 2.14.2 gave after a poll-stall (code _FATAL, ``fatal()`` false),
its cause read from librdkafka's text, _MAX_POLL_EXCEEDED, and nothing of routine errors."""

from __future__ import annotations

import json
from pathlib import Path

from confluent_kafka import KafkaError

from contract.events import EventLog
from workloads.consumer_errors import ConsumerErrors, fatal_cause, is_fatal

#: the text of the fatal error consume() returned on 2.14.2 (librdkafka#5541)
SEEN = ("Fatal error: Broker: Invalid request: ConsumerGroupHeartbeat fatal error: "
        "Broker: Invalid request")


def test_the_cause_is_the_first_error_the_text_names() -> None:
    assert fatal_cause(SEEN) == "INVALID_REQUEST"
    # the longest description that ends where the text's first part ends
    assert fatal_cause("Fatal error: Broker: Invalid message size: x") == "INVALID_MSG_SIZE"
    assert fatal_cause("Fatal error: Broker: Invalid message") == "INVALID_MSG"
    assert fatal_cause("something else") is None


def test_fatal_and_max_poll_errors_are_events_routine_ones_are_not(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    errors = ConsumerErrors(log, "c0", "2.14.2")
    fatal = KafkaError(KafkaError._FATAL, SEEN)
    assert is_fatal(fatal) and not fatal.fatal()  # as consume() hands it over
    errors.seen(KafkaError(KafkaError._MAX_POLL_EXCEEDED, "Application maximum poll interval "
                           "(6000ms) exceeded by 495ms"))
    errors.seen(fatal)
    errors.seen(fatal)  # again within a second: counted, not written again
    errors.seen(KafkaError(KafkaError._TRANSPORT, "Connection refused"))
    errors.seen(None)  # a KafkaException without an error: nothing
    log.close()
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["detail"]["name"], e["detail"]["fatal"]) for e in events] == [
        ("consumer-error", "_MAX_POLL_EXCEEDED", False), ("consumer-error", "_FATAL", True)]
    assert events[1]["detail"]["cause"] == "INVALID_REQUEST"
    assert "cause" not in events[0]["detail"]
    assert events[1]["detail"]["client"] == "c0" and events[1]["detail"]["librdkafka"] == "2.14.2"
    assert errors.fatal == 2
