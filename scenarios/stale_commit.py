"""A group consumer that was down while its partition was truncated below its committed
offset, and comes back once the producers have written past that offset again
(librdkafka#5158: librdkafka resumes at the committed offset without validating it against
its leader epoch, so it skips the records written at the offsets the truncation reused; the
Java client validates it, KIP-320, and resumes at the truncation point).

The truncation is KIP-966's (last-replica-standing): Kafka 3.9.1 without Eligible Leader
Replicas, the ISR shrunk to the leader, which loses power and is re-elected with what its
disk kept.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from compose.admin import ClusterError, java_abs, java_hash
from contract.events import REBALANCE, parse_events
from contract.known_bugs import KIP_966, LEADER_MOVE_CLIENT_BUGS
from contract.settings import DEFAULT_GROUP_ID
from nemesis.faults.network import Partition
from nemesis.faults.power import PowerLoss
from nemesis.faults.stall import ConsumerDown
from scenarios import replication_steps as st
from scenarios.base import Scenario, librdkafka_shows

log = logging.getLogger("kafka_chaos.scenarios")

#: The restart-mode consumer of the run and its group (alone in it: workloads/consumer.py).
READER = "c0"
GROUP = f"{DEFAULT_GROUP_ID}-{READER}"
#: Records the log must hold past the committed offset before the consumer comes back: the
#: records the truncation reused below it, and these above it, are there to be read.
PAST_COMMITTED = 200
#: The topic's partitions: one preferred leader per broker, so one is led apart from the
#: group's coordinator.
PARTITIONS = 3
#: How long the consumer may take to join its group and commit a first offset.
JOINED_WITHIN_S = 60.0


def _committed(nem: Any, partition: int, within_s: float) -> int:
    """The group's committed offset of ``partition``, asked until there is one above 0
    (SetupFailed: none within ``within_s``) by a consumer of the group that never joins it
    (librdkafka's admin ListConsumerGroupOffsets, polled here, once aborted the whole run
    on an assertion of librdkafka 2.16.0's)."""
    c = Consumer({"bootstrap.servers": nem.ctx.cluster.bootstrap_servers, "group.id": GROUP,
                  "enable.auto.commit": "false", "log_level": 2})
    waited, offset = 0.0, -1
    try:
        while True:
            try:
                got = c.committed([TopicPartition(nem.ctx.topic, partition)], timeout=5)
                offset = int(got[0].offset) if got and got[0].error is None else -1
            except KafkaException as e:
                log.info("committed offset of %s: %s", GROUP, e)
            if offset > 0:
                return offset
            if waited >= within_s or nem.wait(0.5):
                raise st.SetupFailed(f"{GROUP} committed nothing in partition {partition} "
                                     f"within {within_s:g} s")
            waited += 0.5
    finally:
        c.close()


def _joined(nem: Any) -> bool:
    """Whether the consumer recorded an assignment of a partition (events.jsonl)."""
    events, _ = parse_events(nem.ctx.events.path.read_text(encoding="utf-8"))
    return any(e.kind == REBALANCE and e.detail.get("what") == "assigned"
               and e.detail.get("reader") == READER and e.detail.get("partitions")
               for e in events)


def _coordinator(nem: Any) -> int:
    """The broker coordinating the group: the leader of its __consumer_offsets partition
    (Kafka's choice: the group id's Java hash modulo that topic's partitions)."""
    try:
        offsets = nem.ctx.cluster.describe("__consumer_offsets", timeout_s=15)
    except (KafkaException, ClusterError) as e:
        raise st.SetupFailed(f"__consumer_offsets: {e}") from e
    return int(offsets[java_abs(java_hash(GROUP)) % len(offsets)].leader)


def _partition_led_apart(nem: Any, coordinator: int) -> tuple[int, Any]:
    """A partition of the topic with the full ISR whose leader is not ``coordinator``
    (SetupFailed: none within 30 s)."""
    for _ in range(60):
        for part in range(PARTITIONS):
            s = st.state(nem, part)
            if s is not None and st.full_isr(s) and s.leader != coordinator:
                return part, s
        if nem.wait(0.5):
            break
    raise st.SetupFailed(f"no partition with the full ISR led by a broker other than "
                         f"{coordinator}, which coordinates {GROUP}")


def _script(nem: Any) -> None:
    st.run_guarded(nem, _body)


def _body(nem: Any) -> None:
    admin = nem.ctx.cluster.admin()
    nem.wait(6)  # the producers at a steady rate, the consumer reading
    # The consumer has joined and read (a JVM's first join can take a while on a loaded
    # host): its group has a coordinator, the leader of a partition of __consumer_offsets.
    # The cut below shrinks that partition's ISR too: if the broker that loses power led
    # it, the power loss would truncate the committed offset as well (KIP-966 again) and
    # the consumer would reset instead. So the partition attacked is one another broker
    # leads (the topic's partitions have a preferred leader each).
    waited = 0.0
    while not _joined(nem):
        if waited >= JOINED_WITHIN_S or nem.wait(0.5):
            raise st.SetupFailed(f"{READER} not assigned a partition within "
                                 f"{JOINED_WITHIN_S:g} s")
        waited += 0.5
    coordinator = _coordinator(nem)
    part, s = _partition_led_apart(nem, coordinator)
    _committed(nem, part, JOINED_WITHIN_S)  # it read there, and committed (every second)
    leader = s.leader
    epoch = st.wait_offsets(nem, "the leader's epoch", lambda o: o.epoch is not None, 10,
                            admin, partition=part).epoch
    assert epoch is not None
    # The consumer shuts down (a deploy), committing where it read, while every replica is
    # in sync: the commit is on all of them.
    down = st.start(nem, ConsumerDown(READER))
    committed = _committed(nem, part, 15)
    # last-replica-standing: the ISR shrinks to the leader, which loses power; without
    # ELR it is re-elected with what its disk kept and the followers truncate to it
    cut = st.start(nem, Partition("leader-followers", str(leader)))
    s = st.wait_state(nem, "the ISR shrunk to the leader alone", st.isr_is(leader), 20,
                      partition=part)
    nem.wait(2)  # the observer (4 samples/s) records the one-member ISR
    st.situation(nem, "the last replica standing loses power; its group's consumer is down",
                 [leader], isr=list(s.isr), partition=part, committed=committed,
                 coordinator=coordinator)
    power = PowerLoss(str(leader), wait_ready=False)
    st.start(nem, power)
    nem.end_fault(cut)
    try:
        st.wait_state(nem, "a leader other than the powered-off one",
                      st.led_by_other(leader), 8, partition=part)
    except st.SetupFailed:
        log.info("partition offline while %s is down", leader)
    nem.end_fault(power)
    # where the leader's log was cut: its recovery point (the power loss's record)
    cut_to = [t.recovery_point for t in power.lost.get(leader, [])
              if t.partition_dir == f"{nem.ctx.topic}-{part}"]
    if not cut_to or cut_to[0] >= committed:
        raise st.SetupFailed(f"the power loss cut the log to {cut_to or 'nothing'}: not "
                             f"below the committed offset {committed}")
    back = st.wait_offsets(nem, "the partition led again after the power loss",
                           lambda o: o.epoch is not None and o.epoch > epoch, 120, admin,
                           partition=part)
    end = st.wait_offsets(nem, f"the log written past the committed offset {committed}",
                          lambda o: o.hw >= committed + PAST_COMMITTED, 60, admin,
                          partition=part)
    st.situation(nem, "the partition was truncated below the consumer's committed offset "
                 "and written past it again; the consumer comes back", [],
                 partition=part, committed=committed, truncated_to=cut_to[0],
                 high_watermark_after=back.hw, high_watermark_now=end.hw,
                 leader_epoch=back.epoch, reader=READER)
    nem.end_fault(down)


STALE_COMMITTED_OFFSET = Scenario(
    name="stale-committed-offset",
    summary="librdkafka#5158: a group consumer down while its partition is truncated below "
            "its committed offset and written past it again; librdkafka resumes at the "
            "stale offset and skips what the truncation reused",
    doc=(
        "Kafka 3.9.1 (no Eligible Leader Replicas), acks=all, min.insync.replicas=2, three "
        "partitions, one group consumer in restart mode. The consumer shuts down (a "
        "consumer-down fault: it closes, committing where it read) while every replica is "
        "in sync. Then, as in last-replica-standing, the ISR shrinks to the leader, which "
        "loses power and is re-elected with what its disk kept: the followers truncate to "
        "it, and the log ends below the group's committed offset. The producers write on "
        "until the log holds records past that offset again (at the offsets the "
        "truncation reused), and the consumer comes back. A client that validates the "
        "committed offset against its leader epoch (KIP-320; the Java client) finds the "
        "log truncated and resumes at the truncation point. librdkafka does not "
        "(librdkafka#5158, open): it resumes at the committed offset and never reads the "
        "records written between the truncation point and it, a poll-skip named by the "
        "bug. The partition attacked is one whose leader does not coordinate the group: the "
        "cut and the power loss would truncate the group's committed offset too (KIP-966 "
        "in __consumer_offsets). The lost records are KIP-966's (accepted)."
    ),
    config={"partitions": PARTITIONS, "producers": 2, "rate": 200.0, "replication_factor": 3,
            "controllers": 1, "acks": "all", "idempotence": True, "min_insync": 2,
            "unclean": False, "consumers": 1, "consumer_mode": "restart", "faults": [],
            "duration": 150.0, "kafka_version": "3.9.1",
            "accept_known": [*LEADER_MOVE_CLIENT_BUGS, KIP_966]},
    script=_script,
    script_faults=("consumer-down", "partition", "power-loss"),
    settle_s=6.0,
    expect=librdkafka_shows("poll-skip"),
    mechanism=[{"kind": "isr-shrunk-to", "size": 1},
               {"kind": "fault", "fault": "power-loss"},
               {"kind": "fault", "fault": "consumer-down"},
               {"kind": "offline"}, st.SITUATION_MECHANISM],
)

SCENARIOS: list[Scenario] = [STALE_COMMITTED_OFFSET]
