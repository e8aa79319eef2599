"""The consumer group of each transactional producer that sends offsets (run option
``send_offsets``): one whose coordinator is not the producer's transaction coordinator, so
a fault on the group's coordinator leaves the transaction's up — the evidence that names a
hung send_offsets_to_transaction (contract/bug_facts.py ``coordinator_down_in_call``)
refuses a call whose transaction's coordinator was down too."""

from __future__ import annotations

import logging

from confluent_kafka import Producer
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from compose.admin import ClusterError
from compose.cluster import KafkaCluster
from contract.settings import offsets_group

log = logging.getLogger("kafka_chaos.run")

#: Candidate groups per producer: with three coordinators one of the first few differs.
CANDIDATES = 64
#: A transactional id of no producer: its init_transactions creates __transaction_state.
PROBE_ID = "kc-offsets-probe"


def pick_offsets_groups(cluster: KafkaCluster, transactional_ids: dict[int, str],
                        timeout_s: float = 60) -> dict[int, str]:
    """Producer id -> its group (the first candidate of :func:`offsets_group` whose
    coordinator is not the one of the producer's transactional id). Raises ClusterError
    when none is found."""
    probe = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                      "transactional.id": PROBE_ID, "log.connection.close": False})
    probe.init_transactions(timeout_s)  # __transaction_state exists from here on
    del probe
    out: dict[int, str] = {}
    for pid, txn_id in transactional_ids.items():
        txn_node = -1
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                                retry=retry_if_exception_type(ClusterError), reraise=True):
            with attempt:
                txn_node = cluster.transaction_coordinator(txn_id)
        for n in range(CANDIDATES):
            group = offsets_group(txn_id, n)
            if cluster.group_coordinator(group, timeout_s=timeout_s) != txn_node:
                out[pid] = group
                break
        else:
            raise ClusterError(f"no consumer group coordinated apart from {txn_id}'s "
                               f"transactions (node {txn_node})")
        log.info("producer %d (%s, transaction coordinator %d): offsets group %s",
                 pid, txn_id, txn_node, out[pid])
    return out
