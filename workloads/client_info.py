"""The client library a workload process actually loaded (reported with its stats, so
run.json's ``versions`` show the children's confluent-kafka, not the orchestrator's)."""

from __future__ import annotations

import sys
from typing import Any

import confluent_kafka

from contract.clients import CONFLUENT_KAFKA


def version_string(v: Any) -> str:
    """``version()``/``libversion()`` give a (str, int) pair, but a plain string in some
    releases (2.12.0's wheels)."""
    return v if isinstance(v, str) else str(v[0])


def client_versions() -> dict[str, str]:
    """The confluent-kafka and librdkafka versions this process imported, and its Python
    (``client``/``client_version`` as every workload driver reports them)."""
    ck = version_string(confluent_kafka.version())
    return {"client": CONFLUENT_KAFKA, "client_version": ck, "confluent_kafka": ck,
            "librdkafka": version_string(confluent_kafka.libversion()),
            "python": sys.executable}
