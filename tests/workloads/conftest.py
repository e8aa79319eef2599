"""Fixtures of the workload tests: one real 3-broker cluster for this package's tests
(package scope: it is removed when they are done instead of idling to the session's end).

A missing Docker engine fails the cluster tests (KafkaCluster raises), it never skips them.
Every test writes to a topic of its own, so tests share the cluster without interfering; a
test that kills a broker restores it before it ends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from compose.cluster import KafkaCluster
from compose.config import ClusterConfig
from tests.hygiene import share

BROKER_CONFIG = {
    # Short, so a killed or paused follower leaves the ISR quickly.
    "replica.lag.time.max.ms": "5000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "5000",
}


@pytest.fixture(scope="package")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(ClusterConfig(brokers=3, broker_config=BROKER_CONFIG)) as c:
        share(c.name)
        yield c


@pytest.fixture
def topic(cluster: KafkaCluster) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=3, replication_factor=3,
                         config={"min.insync.replicas": "2"})
    return name


def read_table(run_dir: Path, name: str) -> pa.Table:
    """A history dataset (directory of part files) as one table."""
    return ds.dataset(run_dir / "history" / f"{name}.parquet", format="parquet").to_table()
