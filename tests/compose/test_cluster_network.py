"""Clusters of several sessions on one engine: clusters starting at the same moment each get
a /24 of their own, and a sweep is not stopped by containers another session removes."""

from __future__ import annotations

import ipaddress
import subprocess
import threading
import uuid

import docker
import pytest

from compose import cleanup
from compose.cluster import create_network
from compose.image import resolve_image

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


def test_a_sweep_ignores_containers_removed_while_it_lists_them() -> None:
    # docker-py lists the ids, then inspects each; suite 101's second lane started a
    # cluster (sweep_orphans first) while the first lane removed one, and the inspect's
    # 404 failed the fixture of seven tests.
    client = docker.from_env()
    name = f"kc-sweeprace-{uuid.uuid4().hex[:6]}"
    image = resolve_image(None, None)
    # owned by this live process: sweep_orphans lists and inspects them, removes none
    made = [client.containers.create(image, command=["true"],
                                     labels=cleanup.labels(name, "broker", node=i))
            for i in range(30)]
    removed: list[str] = []

    def remove_all() -> None:
        for c in made:
            c.remove(force=True)
            removed.append(c.id)

    remover = threading.Thread(target=remove_all)
    sweeps = 0
    try:
        remover.start()
        while remover.is_alive():
            assert cleanup.sweep_orphans(client) == 0
            sweeps += 1
        remover.join()
    finally:
        cleanup.sweep_cluster(client, name)
    assert len(removed) == 30 and sweeps >= 2, (len(removed), sweeps)
    assert not client.containers.list(
        all=True, filters={"label": f"{cleanup.LABEL_CLUSTER}={name}"})


def test_sessions_sweeping_the_same_orphans_at_once_all_go_on(
        caplog: pytest.LogCaptureFixture) -> None:
    # Each lane's cluster start sweeps orphans first; in CI run 40 two of them found the
    # same dead process's cluster, and the second's removal of a container the first was
    # removing got a 409 ("removal ... already in progress") that failed its run.
    client = docker.from_env()
    name = f"kc-orphanrace-{uuid.uuid4().hex[:6]}"
    dead = subprocess.Popen(["true"])
    dead.wait()
    image = resolve_image(None, None)
    labels = {**cleanup.labels(name, "broker"), cleanup.LABEL_OWNER: str(dead.pid)}
    client.networks.create(name, driver="bridge", labels=labels)
    client.volumes.create(name, labels=labels)
    for i in range(10):  # running in the network, the volume mounted: both in use until they go
        client.containers.run(image, command=["sleep", "600"], entrypoint=[], detach=True,
                              network=name, volumes={name: {"bind": "/data", "mode": "rw"}},
                              labels={**labels, cleanup.LABEL_NODE: str(i)})
    errors: list[BaseException] = []
    counts: list[int] = []
    start = threading.Barrier(4)

    def sweeper() -> None:
        start.wait()
        try:
            counts.append(cleanup.sweep_orphans(client))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=sweeper) for _ in range(4)]
    of_cluster = {"label": f"{cleanup.LABEL_CLUSTER}={name}"}
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        left = (client.containers.list(all=True, filters=of_cluster),
                client.networks.list(filters=of_cluster),
                client.volumes.list(filters=of_cluster))
    finally:
        cleanup.sweep_cluster(client, name)
    assert not errors, errors
    # Everything went in these sweeps, none of them giving up on what another was removing.
    # (Not how many each removed: another session's cluster start beside this test sweeps
    # these orphans too.)
    assert left == ([], [], []), left
    assert not [r for r in caplog.records if "next sweep" in r.getMessage()]
    assert len(counts) == 4, counts


def test_an_orphan_sweep_touches_only_what_it_can_prove_dead() -> None:
    """A dead pid means a dead owner only in this boot and pid namespace: a cluster of
    another host or namespace on a shared engine stays (before: removed, whoever owned it).
    Cheap resources: a labelled network each."""
    client = docker.from_env()
    dead = subprocess.Popen(["true"])
    dead.wait()
    names = {kind: f"kc-owner-{kind}-{uuid.uuid4().hex[:6]}" for kind in ("ours", "theirs")}
    for kind, name in names.items():
        labels = {**cleanup.labels(name, "broker"), cleanup.LABEL_OWNER: str(dead.pid)}
        if kind == "theirs":
            labels[cleanup.LABEL_OWNER_HOST] = "another-boot/pid:[1]"
        client.networks.create(name, driver="bridge", labels=labels)
    try:
        cleanup.sweep_orphans(client)
        left = {n.name for n in client.networks.list(names=list(names.values()))}
        assert left == {names["theirs"]}, left
    finally:
        for name in names.values():
            cleanup.sweep_cluster(client, name)
