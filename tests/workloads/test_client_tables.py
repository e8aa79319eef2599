"""The clients' error-name tables (contract/clients.py) and what the guide says of them, and
the --client values: one line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract.clients import (
    CONFLUENT_KAFKA,
    DEFINITE_FAILURES,
    FRANZ_GO,
    JAVA,
    SARAMA,
    ClientSpec,
    ClientSpecError,
    classify_error,
    parse_client,
    unsupported,
)
from runner.config import RunConfig, RunConfigError

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "clients.md"


def test_the_guide_lists_every_definite_failure_of_every_client() -> None:
    text = GUIDE.read_text()
    for kind, names in DEFINITE_FAILURES.items():
        missing = sorted(n for n in names if f"`{n}`" not in text)
        assert not missing, (kind, missing)


def test_only_listed_names_fail_and_unknown_ones_are_info() -> None:
    assert classify_error(JAVA, None) == "ok"
    assert classify_error(JAVA, "RecordTooLargeException") == "fail"
    assert classify_error(JAVA, "TimeoutException") == "info"  # may be in flight
    assert classify_error(JAVA, "NotEnoughReplicasException") == "info"  # retried: ambiguous
    assert classify_error(JAVA, "NOT_ENOUGH_REPLICAS") == "info"  # another client's name
    assert classify_error(CONFLUENT_KAFKA, "NOT_ENOUGH_REPLICAS") == "fail"
    assert classify_error("nobody", "RecordTooLargeException") == "info"


def test_client_values() -> None:
    assert parse_client("java:4.1.1") == ClientSpec(JAVA, "4.1.1")
    assert parse_client("confluent-kafka") == ClientSpec(CONFLUENT_KAFKA, None)
    for bad, words in (("kotlin:1.0", "unknown client"), ("java", "needs its version"),
                       ("java:latest", "not a version")):
        with pytest.raises(ClientSpecError, match=words):
            parse_client(bad)
    assert unsupported(ClientSpec(JAVA, "4.1.1"), transactional=True,
                       partitioner="round-robin", consumer_modes=["subscribe"]) is None
    assert unsupported(ClientSpec(JAVA, "4.1.1"), transactional=False,
                       partitioner="round-robin", consumer_modes=["restart"]) is None
    why = unsupported(ClientSpec(FRANZ_GO, "1.22.3"), transactional=False,
                      partitioner="round-robin", consumer_modes=["restart"])
    assert why is not None and "restart" in why
    # KIP-848 groups: sarama has none, franz-go from 1.22.0; an assign-mode reader has no group
    for spec, refused in ((ClientSpec(SARAMA, "1.61.1"), True),
                          (ClientSpec(FRANZ_GO, "1.21.0"), True),
                          (ClientSpec(FRANZ_GO, "1.22.3"), False),
                          (ClientSpec(JAVA, "4.1.1"), False)):
        why = unsupported(spec, transactional=False, partitioner="round-robin",
                          consumer_modes=["subscribe"], group_protocol="consumer")
        assert (why is not None and "KIP-848" in why) is refused, (spec, why)
    assert unsupported(ClientSpec(SARAMA, "1.61.1"), transactional=False,
                       partitioner="round-robin", consumer_modes=["assign"],
                       group_protocol="consumer") is None


@pytest.mark.parametrize("opts,words", [
    ({"client": "java"}, "needs its version"),
    ({"client": "sarama:1.61.1", "consumers": 1, "consumer_mode": "restart"}, "restart"),
    ({"client": "java:4.1.1", "client_version": "2.12.0"}, "not both"),
    ({"client": "sarama:1.61.1", "consumers": 1, "consumer_mode": "subscribe",
      "group_protocol": "consumer", "kafka_version": "4.3.1"}, "KIP-848"),
])
def test_run_config_refuses_in_one_line(opts, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RunConfigError, match=words) as e:
        RunConfig(**opts).validate()
    assert "\n" not in str(e.value)
    ok = RunConfig(client="confluent-kafka:2.12.0", client_version="2.12.0")
    assert ok.client_spec == ClientSpec(CONFLUENT_KAFKA, "2.12.0")
