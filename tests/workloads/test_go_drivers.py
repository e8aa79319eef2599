"""The Go clients' drivers (workloads/go: franz-go and sarama), as the Java one's tests do.

- Each driver encodes record values byte for byte as the contract's codec does (the codec's
  shared test vectors).
- On the package's real cluster, each client's producers, an assign-mode consumer and a
  group consumer write and read a topic: every acknowledged record is in the topic at its
  offset, nothing else is, and both consumers read every one; the stats carry the version
  the driver reported.
- franz-go reads in a KIP-848 group; sarama, which has none, refuses one (exit 2).
- A version the Go module proxy does not have is one line, in seconds; a build is made
  once, redone when the driver's source changes, and a failed one leaves nothing.
- The kinds need a version, and their tables keep ambiguous errors ``info``.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from contract.clients import (
    FRANZ_GO,
    SARAMA,
    ClientSpec,
    ClientSpecError,
    classify_error,
    parse_client,
    unsupported,
)
from contract.driver_protocol import render_spec
from runner.clients import INFO_FILE, ClientVenvError
from runner.go_client import GoClient, ensure_go, go_dir
from tests.support import clients as support
from tests.support.clients import version
from tests.workloads.helpers import one_consumer_reads_all, round_trip
from workloads.config import ConsumerConfig
from workloads.drivers import ForeignDriver
from workloads.record import decode, encode

GO_CLIENTS = {FRANZ_GO: version(support.FRANZ_GO), SARAMA: version(support.SARAMA)}


@pytest.fixture(scope="module", params=sorted(GO_CLIENTS))
def go_client(request: pytest.FixtureRequest) -> GoClient:
    """The client's driver, built with go on first use (cached afterwards)."""
    return ensure_go(request.param, GO_CLIENTS[request.param], say=print)


@pytest.mark.parametrize("producer,seq,size", [
    (0, 0, 100), (7, 123456789012, 100), (63, 5, 1), (3, 42, 30), (3, 42, 31), (1, 2, 1000)])
def test_go_driver_encodes_as_the_contract(go_client, producer, seq, size):  # type: ignore[no-untyped-def]
    out = subprocess.run([*go_client.command(), "--encode", str(producer), str(seq), str(size)],
                         capture_output=True, check=True)
    value = out.stdout.rstrip(b"\n")
    assert value == encode(producer, seq, size)
    assert decode(value) == (producer, seq, True)


@pytest.mark.cluster
def test_go_clients_write_and_read_a_real_cluster(go_client, cluster, topic, tmp_path):  # type: ignore[no-untyped-def]
    driver = ForeignDriver(ClientSpec(go_client.kind, go_client.version),
                           tuple(go_client.command()))
    round_trip(driver, cluster.bootstrap_servers, topic, tmp_path)


@pytest.mark.cluster
def test_franz_go_reads_in_a_kip848_group(cluster, topic, tmp_path):  # type: ignore[no-untyped-def]
    franz = ensure_go(FRANZ_GO, GO_CLIENTS[FRANZ_GO], say=print)
    driver = ForeignDriver(ClientSpec(FRANZ_GO, franz.version), tuple(franz.command()))
    ccfg = ConsumerConfig(group_id=f"kc-848-{uuid.uuid4().hex[:6]}", group_protocol="consumer")
    _, events = one_consumer_reads_all(driver, cluster.bootstrap_servers, topic, tmp_path, ccfg,
                                       "subscribe", rate=200, duration_s=3)
    assert any(e["kind"] == "rebalance" and e["detail"]["what"] == "assigned"
               and set(e["detail"]["partitions"]) == {f"{topic}:{q}" for q in range(3)}
               for e in events), events


def test_sarama_refuses_a_kip848_group(tmp_path: Path) -> None:
    sarama = ensure_go(SARAMA, GO_CLIENTS[SARAMA], say=print)
    spec = tmp_path / "c0.spec"
    spec.write_text(render_spec(
        {"role": "consumer", "name": "c0", "bootstrap": "127.0.0.1:1", "topic": "t",
         "partitions": [0], "mode": "subscribe", "poll_timeout_ms": 100},
        {"group.id": "g", "group.protocol": "consumer"}))
    proc = subprocess.run([*sarama.command(), str(spec)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30, check=False)
    assert proc.returncode == 2, proc
    assert "sarama has no KIP-848 consumer" in proc.stderr
    assert "end" not in proc.stdout.split("\n")


def test_a_version_the_proxy_lacks_is_one_line(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing left in the real cache
    t0 = time.monotonic()
    with pytest.raises(ClientVenvError) as err:
        ensure_go(FRANZ_GO, "0.0.1", say=lambda _: None)
    assert time.monotonic() - t0 < 30
    message = str(err.value)
    assert "\n" not in message and message.startswith("--client franz-go:0.0.1: "), message
    assert "github.com/twmb/franz-go v0.0.1" in message
    assert not go_dir(FRANZ_GO, "0.0.1").exists()
    # a version go would read as a query ("the latest 1.22.x") is refused before go runs
    with pytest.raises(ClientVenvError, match="three parts"):
        ensure_go(SARAMA, "1.61", say=lambda _: None)


def test_built_once_rebuilt_when_the_driver_changes(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    calls: list[tuple[str, str]] = []

    def build(target: Path, kind: str, version: str) -> None:
        calls.append((kind, version))
        target.mkdir(parents=True)
        (target / "kc-driver").write_text("")

    first = ensure_go(FRANZ_GO, "1.22.3", say=lambda _: None, builder=build)
    again = ensure_go(FRANZ_GO, "1.22.3", say=lambda _: None, builder=build)
    assert calls == [(FRANZ_GO, "1.22.3")] and first == again
    assert first.command() == [str(go_dir(FRANZ_GO, "1.22.3") / "kc-driver")]
    info = json.loads((first.folder / INFO_FILE).read_text())
    assert (info["client"], info["version"]) == (FRANZ_GO, "1.22.3")
    # another driver source (an upgrade of kafka-chaos): the cached build is redone
    import runner.go_client as gc

    src = tmp_path / "src"
    for sub in ("common", "franz"):
        (src / sub).mkdir(parents=True)
        for path in (gc.SOURCE_DIR / sub).glob("*.go"):
            (src / sub / path.name).write_text(path.read_text() + "\n// changed\n")
    monkeypatch.setattr(gc, "SOURCE_DIR", src)
    changed = ensure_go(FRANZ_GO, "1.22.3", say=lambda _: None, builder=build)
    assert calls == [(FRANZ_GO, "1.22.3")] * 2
    # a folder of its own: the binary another checkout's drivers run from is left alone
    assert changed.folder != first.folder and (first.folder / "kc-driver").is_file()

    def broken(target: Path, kind: str, version: str) -> None:
        target.mkdir(parents=True)
        raise ClientVenvError(f"--client {kind}:{version}: go could not fetch it")

    with pytest.raises(ClientVenvError):  # a failed build leaves nothing to use
        ensure_go(SARAMA, "1.61.1", say=lambda _: None, builder=broken)
    assert [p.name for p in go_dir(SARAMA, "1.61.1").parent.iterdir()
            if p.name.startswith((".tmp", "sarama"))] == []


@pytest.mark.parametrize("kind", [FRANZ_GO, SARAMA])
def test_go_kinds_need_a_version_and_keep_ambiguous_errors_info(kind: str) -> None:
    with pytest.raises(ClientSpecError, match="needs its version"):
        parse_client(kind)
    spec = parse_client(f"{kind}:{GO_CLIENTS[kind]}")
    assert spec == ClientSpec(kind, GO_CLIENTS[kind]) and not spec.librdkafka
    assert unsupported(spec, transactional=True, partitioner="round-robin",
                       consumer_modes=[]) is not None
    assert unsupported(spec, transactional=False, partitioner="random",
                       consumer_modes=[]) is not None
    assert unsupported(spec, transactional=False, partitioner="round-robin",
                       consumer_modes=["restart"]) is not None
    assert unsupported(spec, transactional=False, partitioner="round-robin",
                       consumer_modes=["assign", "subscribe"]) is None
    # the last answer of retries, or maybe in flight: never a definite failure
    for name in ("NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT", "MESSAGE_TOO_LARGE",
                 "ErrRecordTimeout", "ErrClientClosed", "ErrShuttingDown", "ErrOutOfBrokers",
                 "net.OpError", "EOF"):
        assert classify_error(kind, name) == "info", name
    assert classify_error(kind, "TOPIC_AUTHORIZATION_FAILED") == "fail"
    assert classify_error(kind, None) == "ok"
