"""Cluster networks: clusters starting at the same moment each get a /24 of their own."""

from __future__ import annotations

import ipaddress
import threading
import uuid

import docker
import pytest

from compose import cleanup
from compose.cluster import create_network

# Needs the Docker engine the cluster tests use; `-m "not cluster"` runs without one.
pytestmark = pytest.mark.cluster


def test_concurrent_cluster_networks_get_distinct_subnets() -> None:
    # Listing free subnets and creating the network are two steps; two clusters starting
    # together (two helpers' test sessions did) chose the same /24 and one start failed with
    # "Pool overlaps with other one on this address space".
    client = docker.from_env()
    name = f"kc-nettest-{uuid.uuid4().hex[:6]}"
    made: list[docker.models.networks.Network] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def create(i: int) -> None:
        start.wait()
        try:
            made.append(create_network(client, f"{name}-{i}", cleanup.labels(name, "network")))
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        subnets = [ipaddress.IPv4Network(n.attrs["IPAM"]["Config"][0]["Subnet"]) for n in made]
        assert len(subnets) == 8
        assert not [(a, b) for i, a in enumerate(subnets) for b in subnets[i + 1:]
                    if a.overlaps(b)]
        assert all(str(next(s.hosts())) == n.attrs["IPAM"]["Config"][0]["Gateway"]
                   for s, n in zip(subnets, made, strict=True))
    finally:
        for n in made:
            n.remove()
    left = client.networks.list(filters={"label": f"{cleanup.LABEL_CLUSTER}={name}"})
    assert not left
