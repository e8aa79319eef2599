"""What every cluster kafka-chaos works with can do through Kafka's own protocol: admin
clients, waits for brokers and partitions, topics, end offsets.

Shared by the cluster kafka-chaos starts in Docker (:mod:`compose.cluster`) and an existing
cluster reached over SSH (:mod:`compose.remote`); each supplies its nodes and addresses.
"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed


def java_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: the absolute value, 0 for the smallest int."""
    return 0 if n == -(1 << 31) else abs(n)


class _CreateTimedOut(Exception):
    """A CreateTopics request whose answer did not come (asked again)."""


def _create_once(admin: AdminClient, nt: NewTopic, timeout_s: float, first: bool) -> None:
    """One CreateTopics of ``nt``; a retry that finds the topic made it."""
    try:
        admin.create_topics([nt], operation_timeout=30)[nt.topic].result(timeout=timeout_s)
    except KafkaException as e:
        err = e.args[0] if e.args else None
        code = err.code() if isinstance(err, KafkaError) else None
        # Both leave the topic's fate unknown, so the create is asked again: a timed-out
        # answer, and a request failed because librdkafka decommissioned the broker handle it
        # was sent on (the bootstrap one, once the metadata names the brokers) - seen as the
        # first admin call of a run on a loaded machine, failing its set-up.
        if code in (KafkaError._TIMED_OUT, KafkaError._DESTROY_BROKER):
            raise _CreateTimedOut(str(e)) from e
        if code == KafkaError.TOPIC_ALREADY_EXISTS and not first:
            return
        raise


class ClusterError(RuntimeError):
    """The cluster did not come up or a wait ran out; the message says which."""


@dataclass(frozen=True)
class CollectFailure:
    """One node whose log (``what="log"``) or Kafka log directory (``"data"``) was not
    copied out, and why."""

    node: int
    what: str
    error: str


@dataclass(frozen=True)
class PartitionState:
    """Leader and replicas of one partition as the cluster's metadata reports them."""

    topic: str
    partition: int
    leader: int  # -1 when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class RoleSpec(Protocol):
    """The part of a node's description the cluster needs: its KRaft roles."""

    roles: str


class ClusterNode(Protocol):
    """A node faults can act on, wherever it runs (a local container or a host over SSH)."""

    node_id: int
    ip: str  # the address its peers and the clients reach it at
    spec: Any  # has .roles

    @property
    def client_address(self) -> str: ...

    def status(self) -> str: ...

    def pid(self) -> int: ...

    def kill(self, signal: str = "SIGKILL") -> None: ...

    def stop(self, timeout: int = 30) -> None: ...

    def start(self) -> None: ...

    def pause(self) -> None: ...

    def unpause(self) -> None: ...

    def exec(self, cmd: str, timeout_s: int = 60) -> tuple[int, str]: ...

    def logs(self) -> bytes: ...

    def copy_data_dir(self, dest: Path) -> None: ...


def ask_active_controller(nodes: list[tuple[Any, str]], brokers: str, controllers: str,
                          budget_s: float = 60.0) -> int:
    """The node id of the active KRaft controller, asked from ``nodes`` (each a
    :class:`ClusterNode` with the path of its kafka-metadata-quorum.sh) within ``budget_s``.

    It asks through the brokers first (they forward the question to the controller they
    follow): through the controllers the tool picks one at random, and one cut from the other
    voters made it hang for its whole timeout (measured with the active controller cut from
    its voters: through the controllers 40 s, 12 s and 12 s in 3 of 8 queries, through the
    brokers 0.9-1.1 s in 8 of 8; a controller-partition run waited 105 s for a new
    controller elected in 3 s). Then through the controllers, from each node in turn. With no
    quorum nothing can answer: the budget bounds the wait (it was 30 s per node).
    """
    deadline = time.monotonic() + budget_s
    tries = [(nodes[0], "--bootstrap-server", brokers, 15)] if nodes and brokers else []
    tries += [(n, "--bootstrap-controller", controllers, 30) for n in nodes]
    for (node, tool), flag, boot, timeout_s in tries:
        left = deadline - time.monotonic()
        if left < 5:
            break
        code, out = node.exec(f"{tool} {flag} {boot} describe --status",
                              int(min(timeout_s, left)))
        for line in out.splitlines():
            if line.startswith("LeaderId:") and code == 0:
                return int(line.split(":", 1)[1])
    raise ClusterError("no node could tell the active controller")


class ClusterAdmin:
    """Kafka-protocol operations on a cluster; subclasses set ``nodes`` and
    ``bootstrap_servers``."""

    nodes: dict[int, Any]

    @property
    def bootstrap_servers(self) -> str:
        raise NotImplementedError

    @property
    def brokers(self) -> dict[int, Any]:
        return {i: n for i, n in self.nodes.items() if "broker" in n.spec.roles}

    def node(self, node_id: int) -> Any:
        return self.nodes[node_id]

    def node_by_ip(self, ip: str) -> Any:
        return next((n for n in self.nodes.values() if n.ip == ip), None)

    def admin(self, timeout_ms: int = 5000) -> AdminClient:
        return AdminClient({
            "bootstrap.servers": self.bootstrap_servers,
            "socket.timeout.ms": timeout_ms,
            "socket.connection.setup.timeout.ms": timeout_ms,
            # Refused connections while brokers boot or are down are expected: keep quiet.
            "log_level": 2,
        })

    # ------------------------------------------------------------------ waits
    def registered_brokers(self, admin: AdminClient | None = None) -> set[int]:
        """Broker ids the cluster metadata lists as live (unfenced)."""
        admin = admin or self.admin()
        md = admin.list_topics(timeout=5)
        return set(md.brokers)

    def wait_brokers(self, ids: list[int], timeout_s: float = 90) -> None:
        """Waits until every broker in ``ids`` answers on its own address and is registered.

        Asking each broker directly matters after a restart: the cluster's metadata may
        still list a just-killed broker as live until its session times out."""
        want = set(ids)
        admin = self.admin()
        direct = {i: AdminClient({"bootstrap.servers": self.nodes[i].client_address,
                                  "log_level": 2}) for i in ids}
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                                retry=retry_if_exception_type((KafkaException, ClusterError)),
                                reraise=True):
            with attempt:
                for _i, client in direct.items():
                    client.list_topics(timeout=3)  # raises unless broker i itself answers
                have = self.registered_brokers(admin)
                if not want <= have:
                    raise ClusterError(f"brokers {sorted(want - have)} not registered "
                                       f"within {timeout_s:.0f}s (have {sorted(have)})")

    def transaction_coordinator(self, transactional_id: str, timeout_s: float = 2) -> int:
        """The node id of the broker coordinating ``transactional_id``'s transactions: the
        leader of its ``__transaction_state`` partition (Kafka's partitionFor: the id's Java
        hash, made non-negative, modulo the partition count). Raises ClusterError when the
        topic or a leader is not there (no transaction began yet, or a leader election)."""
        md = self.admin(int(timeout_s * 1000)).list_topics("__transaction_state",
                                                           timeout=timeout_s)
        topic = md.topics.get("__transaction_state")
        if topic is None or topic.error is not None or not topic.partitions:
            raise ClusterError("no __transaction_state topic yet")
        part = topic.partitions.get(java_abs(java_hash(transactional_id)) % len(topic.partitions))
        if part is None or part.leader < 0:
            raise ClusterError(f"transactional id {transactional_id}: no coordinator now")
        return int(part.leader)

    def group_coordinator(self, group: str, timeout_s: float = 15) -> int:
        """The node id of the broker coordinating consumer ``group`` (asked again while the
        group or its coordinator is not known yet, up to ``timeout_s``)."""
        admin = self.admin()
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                                retry=retry_if_exception_type((KafkaException, ClusterError)),
                                reraise=True):
            with attempt:
                desc = admin.describe_consumer_groups(
                    [group], request_timeout=min(5.0, max(timeout_s, 0.5)))[group]
                node = desc.result().coordinator
                if node is None or node.id < 0:
                    raise ClusterError(f"consumer group {group} has no coordinator yet")
                return int(node.id)
        raise AssertionError("unreachable")  # Retrying re-raises

    def describe(self, topic: str, admin: AdminClient | None = None,
                 timeout_s: float = 15) -> list[PartitionState]:
        """Leader, replicas and ISR of each partition, from the cluster's metadata.

        Asked again for up to ``timeout_s``: brokers learn of a new topic at slightly
        different times, so an unknown topic is not yet absent; and a request the broker
        it went to never answers (paused or stalled after the connection was made, seen
        in CI as "Broker transport failure" once socket.timeout.ms passed) says nothing
        about the cluster; the next try goes to a broker that is up. Each try may take up
        to the admin client's socket timeout (5 s by default), so the bound leaves room for
        a second and a third."""
        admin = admin or self.admin()
        t = None
        end = time.monotonic() + timeout_s
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
                                reraise=True,
                                retry=retry_if_exception_type((ClusterError, KafkaException))):
            with attempt:
                md = admin.list_topics(topic=topic,
                                       timeout=max(0.5, end - time.monotonic()))
                t = md.topics.get(topic)
                if t is None or t.error is not None:
                    raise ClusterError(
                        f"topic {topic} not in metadata: {t.error if t else 'absent'}")
        assert t is not None
        return [PartitionState(topic, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
                for p in sorted(t.partitions.values(), key=lambda p: p.id)]

    def high_watermark(self, topic: str, partition: int, admin: AdminClient | None = None,
                       timeout_s: float = 3) -> tuple[int, int | None]:
        """The partition's high watermark and leader epoch as its leader answers ListOffsets
        (latest) now; raises KafkaException, or ClusterError when no answer came within
        ``timeout_s``. One try: for polls that must see the leader of this moment."""
        admin = admin or self.admin()
        tp = TopicPartition(topic, partition)
        fut = admin.list_offsets({tp: OffsetSpec.latest()},
                                 request_timeout=timeout_s)[tp]
        try:
            info = fut.result(timeout=timeout_s + 1)
        except concurrent.futures.TimeoutError as e:
            raise ClusterError(f"no ListOffsets answer for {topic}-{partition} within "
                               f"{timeout_s:.0f}s") from e
        epoch = info.leader_epoch if info.leader_epoch is not None and \
            info.leader_epoch >= 0 else None
        return int(info.offset), epoch

    def wait_partitions(self, topic: str, timeout_s: float = 60, full_isr: bool = True) -> None:
        """Waits until every partition has a leader (and, if asked, its full ISR)."""
        admin = self.admin()
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                                retry=retry_if_exception_type((KafkaException, ClusterError)),
                                reraise=True):
            with attempt:
                for p in self.describe(topic, admin):
                    if p.leader < 0 or (full_isr and set(p.isr) != set(p.replicas)):
                        raise ClusterError(f"{topic}-{p.partition} not ready within "
                                           f"{timeout_s:.0f}s: leader={p.leader} isr={p.isr}")

    # ------------------------------------------------------------------ topics
    def create_topic(self, topic: str, partitions: int = 3, replication_factor: int = 3,
                     config: dict[str, str] | None = None, timeout_s: float = 60) -> None:
        """Creates a topic and waits until all its partitions have leaders and full ISRs."""
        if replication_factor > len(self.brokers):
            raise ClusterError(f"replication factor {replication_factor} > "
                               f"{len(self.brokers)} brokers")
        nt = NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor,
                      config={k: str(v) for k, v in (config or {}).items()})
        admin = self.admin()  # keep a reference: a collected client cancels its futures
        # A CreateTopics whose answer timed out (a controller still settling, a loaded host)
        # is asked again; one that had succeeded then answers TOPIC_ALREADY_EXISTS.
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(1),
                                retry=retry_if_exception_type(_CreateTimedOut), reraise=True):
            with attempt:
                _create_once(admin, nt, timeout_s, first=attempt.retry_state.attempt_number == 1)
        self.wait_partitions(topic, timeout_s=timeout_s)

    def add_partitions(self, topic: str, total: int, timeout_s: float = 30) -> None:
        """Grows the topic to ``total`` partitions and waits until each has a leader."""
        admin = self.admin()  # keep a reference: a collected client cancels its futures
        for future in admin.create_partitions([NewPartitions(topic, total)],
                                              request_timeout=timeout_s).values():
            future.result(timeout=timeout_s)
        self.wait_partitions(topic, timeout_s=timeout_s, full_isr=False)

    def delete_topic(self, topic: str, timeout_s: float = 30) -> None:
        """Deletes ``topic`` (a run's own topic on a cluster it did not start)."""
        admin = self.admin()
        admin.delete_topics([topic], operation_timeout=timeout_s)[topic].result(timeout=timeout_s)

    def end_offsets(self, topic: str, timeout_s: float = 30) -> dict[int, int]:
        """Each partition's end offset (high watermark), asked again across leader moves.

        Uses a consumer's watermark query: the admin client's ListOffsets was seen to hang
        for minutes after a partition's unclean recovery (librdkafka 2.16)."""
        from confluent_kafka import Consumer

        parts = [p.partition for p in self.describe(topic)]
        cons = Consumer({"bootstrap.servers": self.bootstrap_servers, "group.id": "kc-offsets",
                         "enable.auto.commit": False, "log_level": 2})
        try:
            out: dict[int, int] = {}
            for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                                    retry=retry_if_exception_type(KafkaException),
                                    reraise=True):
                with attempt:
                    for p in parts:
                        if p not in out:
                            _, high = cons.get_watermark_offsets(TopicPartition(topic, p),
                                                                 timeout=3)
                            out[p] = int(high)
            return out
        finally:
            cons.close()
