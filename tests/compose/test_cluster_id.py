"""Cluster ids: what kafka-storage.sh format accepts, every time."""

from __future__ import annotations

from base64 import urlsafe_b64decode

from compose.cluster import new_cluster_id


def test_cluster_ids_are_kafka_uuids_that_never_start_with_a_dash() -> None:
    # A leading '-' (1 id in 64) made kafka-storage.sh read the id as an option: the cluster
    # never started. 20 000 draws make a miss of the rule all but certain to show.
    ids = [new_cluster_id() for _ in range(20_000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 and len(urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert len(set(ids)) == len(ids)
