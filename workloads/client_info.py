"""The client library a workload process actually loaded (reported with its stats, so
run.json's ``versions`` show the children's confluent-kafka, not the orchestrator's)."""

from __future__ import annotations

import sys
from typing import Any

import confluent_kafka


def version_string(v: Any) -> str:
    """``version()``/``libversion()`` give a (str, int) pair, but a plain string in some
    releases (2.12.0's wheels)."""
    return v if isinstance(v, str) else str(v[0])


def client_versions() -> dict[str, str]:
    """The confluent-kafka and librdkafka versions this process imported, and its Python."""
    return {"confluent_kafka": version_string(confluent_kafka.version()),
            "librdkafka": version_string(confluent_kafka.libversion()),
            "python": sys.executable}
