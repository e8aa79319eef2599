"""The client versions the suite's tests drive (each built once per machine and cached)."""

from __future__ import annotations

#: Kafka's Java client, and the Go clients, as ``--client`` values.
JAVA = "java:4.1.1"
FRANZ_GO = "franz-go:1.22.3"
SARAMA = "sarama:1.61.1"
DRIVEN = (JAVA, FRANZ_GO, SARAMA)


def version(client: str) -> str:
    """The version part of a ``KIND:VERSION`` value."""
    return client.partition(":")[2]
