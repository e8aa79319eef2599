"""Chaos for your own code from a plain Python script (no pytest): start a cluster, run your
producer and consumer through random faults, check what they did.

    python examples/user_chaos.py            # about two minutes; prints the verdict

The same API is the ``chaos`` pytest fixture (the user guide, docs/your-code.md).
"""

from __future__ import annotations

import json
import sys

from chaos.user_api import ChaosSession
from compose.cluster import KafkaCluster
from compose.config import FAST_FAULTS, ClusterConfig

TOPIC = "payments"


def main() -> int:
    with KafkaCluster(ClusterConfig(brokers=3, broker_config=dict(FAST_FAULTS))) as cluster:
        cluster.create_topic(TOPIC, partitions=2, replication_factor=3,
                             config={"min.insync.replicas": "2"})
        with ChaosSession.open(cluster, out="runs/user", name="payments", seed=1) as chaos:
            chaos.watch(TOPIC)
            producer = chaos.producer(acks="all", enable_idempotence=True)
            consumer = chaos.consumer({"group.id": "ledger", "auto.offset.reset": "earliest"})
            consumer.subscribe([TOPIC])
            # Kills, pauses and partitions at random while the application works.
            with chaos.random(kinds=["kill", "pause", "partition"], interval=5,
                              duration=25, topic=TOPIC) as schedule:
                n = 0
                while schedule.running:
                    payment = {"id": n, "amount_cents": 100 + n % 900}
                    producer.produce(TOPIC, json.dumps(payment).encode(), key=str(n).encode())
                    producer.poll(0.005)
                    consumer.poll(0)
                    n += 1
            producer.flush(120)
            result = chaos.check(TOPIC)
    print(result.describe())
    return 0 if result.valid is True and result.count("lost") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
