"""A transactional producer's consumer offsets (run option ``send_offsets``): the producer
process runs a group consumer of its own on the run's topic and, in every transaction,
sends that consumer's positions with ``send_offsets_to_transaction`` — the call of a
consume-transform-produce application, watched like the others (a hung one is recorded).

The consumer's reads are not the run's history (it is no reader the checker judges): it
only moves its positions on. Its group is named in run.json
(``workload.transactions.offsets_groups``), so the hung call's event and the faults' start
events (``coordinators``) can name the group's coordinator.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException, TopicPartition

from contract.settings import OFFSETS_CALL_TIMEOUT_S
from workloads.producer import client_error

if TYPE_CHECKING:
    from workloads.producer import ProducerProcess

log = logging.getLogger("kafka_chaos.workloads.txn_offsets")

#: Records the consumer takes at most per transaction (it only has to move on).
_BATCH = 500


class OffsetsSource:
    """The producer's group consumer: subscribed to the run's topic in ``group``."""

    def __init__(self, bootstrap: str, topic: str, group: str, producer_id: int) -> None:
        self.group = group
        self.sent = 0  # calls that returned (the producer's stats: offsets_sent)
        self.client = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group,
            "client.id": f"kc-offsets-{producer_id}",
            "isolation.level": "read_committed", "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "log.connection.close": False})
        self.client.subscribe([topic])

    def positions(self) -> list[TopicPartition]:
        """Reads what is there (without waiting) and returns the positions of the
        partitions it has read from ([]: none yet)."""
        try:
            self.client.consume(_BATCH, 0)
            assigned = self.client.assignment()
            return [tp for tp in self.client.position(assigned) if tp.offset >= 0] \
                if assigned else []
        except KafkaException as e:
            log.info("offsets consumer %s: %s", self.group, client_error(e))
            return []

    def close(self) -> None:
        try:
            self.client.close()
        except (KafkaException, RuntimeError) as e:
            log.info("offsets consumer %s: close: %s", self.group, e)


def send_offsets(proc: ProducerProcess, source: OffsetsSource) -> None:
    """Sends the consumer's positions into the open transaction (watched, with its own
    timeout). An error leaves the transaction to the commit, which then says whether it
    must be aborted; a fatal one is kept for the loop (the client is recreated)."""
    positions = source.positions()
    if not positions:
        return
    # The call may never return (librdkafka#5511): the process is then killed in it, so
    # the rows of the transactions decided so far are written first, or committed records
    # would be read that no attempt in the history produced. The slot says so: a process
    # killed in the call left unwritten only its open transaction's attempts.
    proc.recorder.flush()
    try:
        with proc.calls.call("send_offsets_to_transaction", OFFSETS_CALL_TIMEOUT_S,
                             rows_written=True):
            proc.client.send_offsets_to_transaction(
                positions, source.client.consumer_group_metadata(), OFFSETS_CALL_TIMEOUT_S)
        if not source.sent:
            log.info("producer %d: first offsets of group %s sent", proc.id, source.group)
        source.sent += 1
    except KafkaException as e:
        err = client_error(e)
        log.warning("producer %d: send_offsets_to_transaction: %s", proc.id, err)
        if err is not None and err.fatal():
            proc.fatal = err
