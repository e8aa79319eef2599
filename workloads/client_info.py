"""The client library a workload process actually loaded (reported with its stats, so
run.json's ``versions`` show the children's confluent-kafka, not the orchestrator's)."""

from __future__ import annotations

import sys

import confluent_kafka


def client_versions() -> dict[str, str]:
    """The confluent-kafka and librdkafka versions this process imported, and its Python."""
    return {"confluent_kafka": confluent_kafka.version()[0],
            "librdkafka": confluent_kafka.libversion()[0],
            "python": sys.executable}
