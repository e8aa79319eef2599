"""The built Kafka image starts its JVMs light: C1 only, the serial collector and the class-data
archive made at build time (compose/image/bin/kc-class-archive.sh). A cluster of three
brokers starts on two cores in half the time, and a restarted broker serves sooner."""

from __future__ import annotations

import uuid

import docker
import pytest

from compose import cleanup
from compose.image import DEFAULT_KAFKA_VERSION, build_kafka_image

# Needs the Docker engine the cluster tests use; `-m "not cluster"` runs without one.
pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("version", [DEFAULT_KAFKA_VERSION, "3.9.1"])
def test_the_image_jvms_map_the_class_archive_with_the_light_flags(version: str) -> None:
    tag = build_kafka_image(version)
    client = docker.from_env()
    name = f"kc-jvmtest-{uuid.uuid4().hex[:6]}"
    # -Xshare:on makes the JVM refuse to start unless it maps the archive it was given;
    # PrintCommandLineFlags shows the flags kafka-run-class.sh chose by default.
    out = client.containers.run(
        tag, ["bash", "-c", "/opt/kafka/bin/kafka-storage.sh random-uuid"],
        entrypoint=[], name=name, remove=True, stdout=True, stderr=True,
        environment={"KAFKA_OPTS": "-Xshare:on -XX:+PrintCommandLineFlags"},
        labels=cleanup.labels(name, "jvm-test"),
    ).decode()
    assert "-XX:TieredStopAtLevel=1" in out and "-XX:+UseSerialGC" in out, out
    assert "-XX:SharedArchiveFile=/opt/kafka/kafka.jsa" in out, out
    # the tool ran: its last line is a fresh cluster id (22 characters, base64url)
    assert len(out.strip().splitlines()[-1]) == 22, out
