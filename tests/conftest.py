"""Shared fixtures: a real Docker engine is required (a missing one fails, never skips)."""

from __future__ import annotations

import docker
import pytest


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure to reach the engine is fatal here
        pytest.fail(f"a Docker engine is required (run compose/setup-host.sh): {e}")
    return client


@pytest.fixture(scope="session", autouse=False)
def no_leaks_after_session(docker_client: docker.DockerClient):
    """Fails the session if any kafka-chaos container, network or volume is left behind."""
    yield
    left = docker_client.containers.list(all=True, filters={"label": "io.kafka-chaos"})
    nets = docker_client.networks.list(filters={"label": "io.kafka-chaos"})
    assert not left and not nets, f"leaked: {[c.name for c in left]} {[n.name for n in nets]}"
