"""A consume-transform-produce service under chaos: does every order become exactly one
invoice while brokers die and the service itself crashes?

    python examples/copy_service.py        # both variants, about three minutes

Two versions of the same small service read ``orders`` and write one ``invoices`` record per
order:

- ``transactional=True``: each batch's invoices and the consumer offsets are committed in one
  Kafka transaction (``send_offsets_to_transaction``); a crash before the commit leaves an
  open transaction that the next incarnation's ``init_transactions`` aborts, so its invoices
  are never read by a read_committed reader and the batch is done again. Exactly once.
- ``transactional=False``: invoices are produced and flushed, then the offsets committed; a
  crash between the two makes the next incarnation do the batch again. At least once: the
  pipeline check reports the duplicated orders.

The service "crashes" every ``crash_every``-th batch (its clients are abandoned without a
commit, as if the process died) and restarts on any Kafka error, while brokers are killed
and paused at random. It also restarts when a transactional call blocks well past its own
timeout, as a supervisor's liveness check would: librdkafka's
``send_offsets_to_transaction`` can block forever once the group coordinator was down
(librdkafka#5456, open; seen here when a killed broker led ``__consumer_offsets``). And it
restarts when its consumer read nothing for ``stall_s`` while the group is behind the
orders' end: a suite run saw a freshly assigned consumer read nothing for 216 s after the
faults had ended, and the next stall's librdkafka statistics showed both partitions assigned
(group steady) but never started: fetch_state ``none``, committed offset unknown, every
broker up — the consumer never got its committed offsets: librdkafka#5586 (open), an
OffsetFetch answered NOT_COORDINATOR as a whole is never retried.
``on_stall`` lets a caller describe the stall.
``chaos.check_pipeline`` then drains both topics and the checker decides
(checkers/pipeline.py). The recorded producer's ``source=msg`` stamps each invoice with the
identity of the order it came from.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

if TYPE_CHECKING:
    from chaos.plugin_result import ChaosResult
    from chaos.user_api import ChaosSession
    from workloads.recording import RecordingConsumer, RecordingProducer

ORDERS, INVOICES = "orders", "invoices"
#: How much longer than its own timeout a transactional call may block before the service
#: counts it as hung and restarts (librdkafka#5456).
HUNG_GRACE_S = 15.0


class Hung(Exception):
    """A client call blocked past its timeout and the grace: the incarnation is stuck."""


def bounded(call: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """``call()`` (a client call with its own ``timeout_s``) on a daemon thread: its result,
    its exception, or :class:`Hung`. A hung call's thread stays blocked in librdkafka and
    keeps its client alive until the process exits; the service just moves on."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the caller as is
            box["error"] = e

    worker = threading.Thread(target=target, name=f"copy-service {what}", daemon=True)
    worker.start()
    worker.join(timeout_s + HUNG_GRACE_S)
    if worker.is_alive():
        raise Hung(f"{what} blocked for {timeout_s + HUNG_GRACE_S:.0f}s "
                   f"(its timeout: {timeout_s:.0f}s)")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def invoice_of(order: bytes) -> bytes:
    """The transform: an order in, its invoice out."""
    o = json.loads(order)
    return json.dumps({"order": o["id"], "total_cents": o["amount_cents"] * 119 // 100}).encode()


@dataclass
class CopyService:
    """The service: one incarnation at a time (``start``), each a consumer in group
    ``invoicer`` and a producer (transactional.id ``invoicer`` when transactional)."""

    chaos: ChaosSession
    transactional: bool
    orders: str = ORDERS
    invoices: str = INVOICES
    group: str = "invoicer"
    batch: int = 50
    crash_every: int = 4
    incarnations: int = 0
    batches: int = 0
    restarts: dict[str, int] = field(default_factory=dict)
    consumer: RecordingConsumer | None = None
    producer: RecordingProducer | None = None
    #: seconds without a record, the group behind the end, before the incarnation restarts
    stall_s: float = 30.0
    consumer_conf: dict[str, Any] = field(default_factory=dict)  # added to the consumer's
    on_stall: Callable[[], str] | None = None  # describes a stall (kept in ``stalls``)
    stalls: list[str] = field(default_factory=list)
    _read_at: float = 0.0

    def start(self) -> None:
        self.incarnations += 1
        self.consumer = self.chaos.consumer({
            "group.id": self.group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "isolation.level": "read_committed",
            "session.timeout.ms": 6000, **self.consumer_conf})
        self.consumer.subscribe([self.orders])
        self._read_at = time.monotonic()
        conf: dict[str, Any] = {"acks": "all", "enable.idempotence": True,
                                "message.timeout.ms": 20000}
        if self.transactional:
            conf |= {"transactional.id": self.group, "transaction.timeout.ms": 20000}
        self.producer = self.chaos.producer(conf)
        if self.transactional:
            self.producer.init_transactions(30)  # fences and aborts the last incarnation's

    def crash(self, why: str) -> None:
        """Abandon this incarnation without committing anything (as a killed process)."""
        self.restarts[why] = self.restarts.get(why, 0) + 1
        self.stop()

    def stop(self) -> None:
        """Close this incarnation's clients (nothing more is committed)."""
        for client in (self.producer, self.consumer):
            if client is not None:
                # a dying process does not get to finish either
                with contextlib.suppress(KafkaException):
                    client.close()
        self.producer = self.consumer = None

    def step(self) -> int:
        """One batch: read up to ``batch`` orders, write their invoices, commit. Returns
        how many orders it read."""
        assert self.consumer is not None and self.producer is not None
        msgs = [m for m in self.consumer.consume(self.batch, 1.0) if m.error() is None]
        if not msgs:
            return 0
        self._read_at = time.monotonic()
        self.batches += 1
        crash = self.batches % self.crash_every == 0
        p, c = self.producer, self.consumer
        if self.transactional:
            p.begin_transaction()
        failed: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                failed.append(err)

        for m in msgs:
            p.produce(self.invoices, invoice_of(m.value() or b"{}"), key=m.key(), source=m,
                      on_delivery=delivered)
            p.poll(0)
        if self.transactional:
            if crash:
                p.flush(20)  # the invoices are in the log, the transaction still open
                self.crash("planned")
                return len(msgs)
            offsets, group = c.position(c.assignment()), c.consumer_group_metadata()
            bounded(lambda: p.send_offsets_to_transaction(offsets, group, 20), 20,
                    "send_offsets_to_transaction")
            bounded(lambda: p.commit_transaction(30), 30, "commit_transaction")
        else:
            if p.flush(30) > 0 or failed:
                # never commit the offsets of an order whose invoice is not in the log
                raise KafkaException(failed[0] if failed else "invoices not delivered in 30 s")
            if crash:
                self.crash("planned")
                return len(msgs)
            c.commit(asynchronous=False)
        return len(msgs)

    def caught_up(self, end: dict[int, int]) -> bool:
        """Whether the group's committed offsets reached every partition's end."""
        assert self.consumer is not None
        done = self.consumer.committed([TopicPartition(self.orders, p) for p in end], 10)
        return all(tp.offset >= end[tp.partition] for tp in done)

    def run(self, end: dict[int, int], deadline_s: float) -> None:
        """Run (restarting after crashes and errors) until every order is committed."""
        stop = time.monotonic() + deadline_s
        while time.monotonic() < stop:
            if self.consumer is None:
                try:
                    self.start()
                except KafkaException:
                    self.crash("start failed")
                    continue
            try:
                if self.step() == 0:
                    if self.caught_up(end):
                        return
                    if time.monotonic() - self._read_at > self.stall_s:
                        self.stalls.append(self.on_stall() if self.on_stall else "")
                        print(f"copy service: restarting: read nothing for {self.stall_s:.0f}"
                              f" s, the group behind the end ({self.stalls[-1]})",
                              file=sys.stderr)
                        self.crash("stalled")
            except KafkaException as e:
                err = e.args[0] if e.args else None
                self.crash(err.name() if isinstance(err, KafkaError) else str(err))
            except Hung as e:
                print(f"copy service: restarting: {e}", file=sys.stderr)
                self.crash("hung")
        raise TimeoutError(f"the service did not finish within {deadline_s:.0f}s")


def write_orders(chaos: ChaosSession, n: int, topic: str = ORDERS) -> dict[int, int]:
    """The upstream: ``n`` orders in the application's own JSON; the end offset of each
    partition of ``orders`` afterwards."""
    producer = chaos.producer(acks="all", enable_idempotence=True)
    for i in range(n):
        order = {"id": i, "amount_cents": 100 + i % 900}
        producer.produce(topic, json.dumps(order).encode(), key=str(i).encode())
        producer.poll(0)
    if producer.flush(60) > 0:
        raise RuntimeError("orders not delivered within 60 s")
    producer.close()
    probe = Consumer({"bootstrap.servers": chaos.cluster.bootstrap_servers,
                      "group.id": "orders-probe"})
    try:
        parts = probe.list_topics(topic, timeout=10).topics[topic].partitions
        return {p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in parts}
    finally:
        probe.close()


def copy_under_chaos(chaos: ChaosSession, *, transactional: bool, orders: int = 1000,
                     topics: tuple[str, str] = (ORDERS, INVOICES), faults: bool = True,
                     say: Callable[[str], Any] = print,
                     consumer_conf: dict[str, Any] | None = None,
                     on_stall: Callable[[], str] | None = None,
                     targets: list[str | int] | None = None) -> ChaosResult:
    """Orders in, the service through crashes and random broker faults (at ``targets``,
    default any broker), the pipeline check out. The topics (orders, invoices) must exist
    (``create_topics``). ``consumer_conf`` and ``on_stall`` go to :class:`CopyService`."""
    end = write_orders(chaos, orders, topics[0])
    service = CopyService(chaos, transactional, topics[0], topics[1],
                          group=f"invoicer-{topics[1]}", consumer_conf=consumer_conf or {},
                          on_stall=on_stall)
    if faults:
        with chaos.random(kinds=["kill", "pause"], interval=6, duration=18, topic=topics[1],
                          targets=targets):
            service.run(end, deadline_s=240)
    else:
        service.run(end, deadline_s=240)
    service.stop()
    say(f"service: {service.incarnations} incarnations, {service.batches} batches, "
        f"restarts {service.restarts}")
    return chaos.check_pipeline(topics[0], topics[1], delivery="exactly-once")


def create_topics(cluster: Any, topics: tuple[str, str] = (ORDERS, INVOICES)) -> None:
    for topic in topics:
        cluster.create_topic(topic, partitions=2, replication_factor=3,
                             config={"min.insync.replicas": "2"})


def main() -> int:
    from chaos.user_api import ChaosSession
    from compose.cluster import KafkaCluster
    from compose.config import FAST_FAULTS, ClusterConfig

    verdicts = {}
    for transactional in (True, False):
        with KafkaCluster(ClusterConfig(brokers=3, broker_config=dict(FAST_FAULTS))) as cluster:
            create_topics(cluster)
            name = "copy-transactional" if transactional else "copy-plain"
            with ChaosSession.open(cluster, out="runs/user", name=name, seed=1) as chaos:
                result = copy_under_chaos(chaos, transactional=transactional)
        print(result.describe())
        verdicts[transactional] = result.pipeline.get("valid")
    # the transactional service keeps exactly-once; the plain one duplicates
    return 0 if verdicts == {True: True, False: False} else 1


if __name__ == "__main__":
    sys.exit(main())
