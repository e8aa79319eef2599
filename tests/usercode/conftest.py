"""One cluster for the user-code tests, from the plugin's ``kafka_cluster_config``.

It replaces the plugin's session-scoped ``kafka_cluster`` with a package-scoped one, so the
cluster is removed when these tests end instead of idling (three JVMs) through the rest of
the suite; it is declared shared with the hygiene check (tests/hygiene.py), which checks it
when it is gone.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.hygiene import share

if TYPE_CHECKING:
    from compose.cluster import KafkaCluster
    from compose.config import ClusterConfig


@pytest.fixture(scope="package")
def kafka_cluster(kafka_cluster_config: ClusterConfig) -> Iterator[KafkaCluster]:
    from compose.cluster import KafkaCluster

    cfg = dataclasses.replace(kafka_cluster_config, name="kc" + secrets.token_hex(3),
                              broker_config=dict(kafka_cluster_config.broker_config))
    with KafkaCluster(cfg) as cluster:
        share(cluster.name)
        yield cluster
