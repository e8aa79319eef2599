"""Producer throughput of a client driver with full recording vs. the same client bare.

For ``--client java:X.Y.Z``: Kafka's own ProducerPerformance (``kafka-producer-perf-test.sh``
inside broker 1's container, the Java client of the broker's release, so pick X.Y.Z = the
cluster's Kafka version) against our Java driver and its recorder writing writes.parquet, on
the same cluster, the same topic settings (RF=3, min.insync.replicas=2) and the same producer
properties, one producer each, flat out. Prints acknowledged records/s side by side and the
ratio the project aims at: driver / bare >= 0.8. Usage: ``python -m bench client -- --client
java:4.3.1``. The figures, with the machine, the versions and the date, replace their section
of ``--figures`` (``--no-figures`` writes none).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# `python -m bench client` runs this file as a script: the repository's root goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workload_bench import Result, kafka_perf_props  # noqa: E402
from compose.cluster import KafkaCluster  # noqa: E402
from compose.config import ClusterConfig  # noqa: E402
from contract.clients import JAVA, parse_client  # noqa: E402
from reports.figures import FIGURES, write_figure  # noqa: E402
from runner.clients import ensure_driver  # noqa: E402
from workloads import ProducerConfig  # noqa: E402

GOAL = 0.8


def driver_run(cluster: KafkaCluster, client: str, topic: str, cfg: ProducerConfig) -> Result:
    """One producer of ``client`` with full recording; rate = acks over first invoke → last
    acknowledgement (as the bare tool measures from its first send)."""
    driver = ensure_driver(parse_client(client), say=print)
    with tempfile.TemporaryDirectory(prefix="kc-bench-") as tmp:
        group = driver.start_producers(Path(tmp), cluster.bootstrap_servers, topic, 3, cfg, 1)
        while group.alive():
            time.sleep(0.2)  # waiting for the run to end, not synchronising
        stats = group.stop(30)
    st = stats["p0"]
    return Result(f"{client}, recording", int(st.get("ok", 0)),
                  (st["last_ack_ns"] - st["first_invoke_ns"]) / 1e9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default="java:4.3.1", help="KIND:VERSION (java only, so far)")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--linger-ms", type=float, default=20)
    ap.add_argument("--batch-size", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2, help="each figure is its best round")
    ap.add_argument("--figures", type=Path, default=FIGURES / "workload-bench.md")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args()
    spec = parse_client(args.client)
    if spec.kind != JAVA:
        print(f"bench client: no bare loop for {spec.kind} yet (java only)", file=sys.stderr)
        return 2
    cfg = ProducerConfig(acks="all", rate=0, record_size=args.size, duration_s=600,
                         max_records=args.records, linger_ms=args.linger_ms,
                         batch_size=args.batch_size)
    props = cfg.kafka_config(0)
    results: list[Result] = []
    assert spec.version is not None  # parse_client requires it of java
    with KafkaCluster(ClusterConfig(brokers=3, kafka_version=spec.version)) as c:
        for r in range(args.rounds):
            for name in (("bare", "ours") if r % 2 == 0 else ("ours", "bare")):
                topic = f"bench-{name}-{r}"
                c.create_topic(topic, 3, 3, {"min.insync.replicas": "2"})
                res = (kafka_perf_props(c, topic, args.records, args.size, props)
                       if name == "bare" else driver_run(c, args.client, topic, cfg))
                print(f"  {res.name:28s} {res.acked:>9d} acked in {res.seconds:6.2f}s "
                      f"= {res.rate:>10.0f} records/s", flush=True)
                results.append(res)
    bare = max(x.rate for x in results if x.name == "kafka-producer-perf-test")
    ours = max(x.rate for x in results if x.name != "kafka-producer-perf-test")
    ratio = ours / bare if bare else 0.0
    print(f"\n{'kafka-producer-perf-test':28s} {bare:>10.0f} records/s  1.00x")
    print(f"{args.client + ', recording':28s} {ours:>10.0f} records/s  {ratio:.2f}x "
          f"(goal >= {GOAL:.2f}x)")
    if not args.no_figures:
        command = (f"python -m bench client -- --client {args.client} --records "
                   f"{args.records} --size {args.size} --rounds {args.rounds}")
        written = write_figure(
            args.figures, f"client-{spec.kind}-{args.size}-bytes",
            heading="Workload benchmark", command=command,
            title=f"The {spec.kind} client's driver, {args.size}-byte records",
            columns=["producer", "records/s (best round)", "vs the client bare"],
            rows=[("kafka-producer-perf-test (bare)", f"{bare:,.0f}", "1.00x"),
                  (f"{args.client} driver, recording", f"{ours:,.0f}", f"{ratio:.2f}x")],
            notes=f"One 3-broker Kafka {spec.version} cluster, RF=3, min.insync.replicas=2, "
                  f"one producer each, the same producer properties (acks=all, linger.ms "
                  f"{args.linger_ms:g}, batch.size {args.batch_size}); goal >= {GOAL:.2f}x.")
        print(f"written {written}")
    return 0  # the goal is a figure to read (as the other benchmarks'), not a test


if __name__ == "__main__":
    raise SystemExit(main())
