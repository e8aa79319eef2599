"""The plugin's ``kafka_cluster`` for these tests, declared shared with the suite's hygiene
check (tests/hygiene.py): it outlives single tests and is checked when the session ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.hygiene import share

if TYPE_CHECKING:
    from compose.cluster import KafkaCluster


@pytest.fixture(scope="session")
def kafka_cluster(kafka_cluster: KafkaCluster) -> KafkaCluster:
    share(kafka_cluster.name)
    return kafka_cluster
