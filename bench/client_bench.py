"""Producer throughput of a client driver with full recording vs. the same client bare.

For ``--client java:X.Y.Z``: Kafka's own ProducerPerformance (``kafka-producer-perf-test.sh``
inside broker 1's container, the Java client of the broker's release, so pick X.Y.Z = the
cluster's Kafka version) against our Java driver and its recorder writing writes.parquet.
For ``--client franz-go:X.Y.Z`` / ``sarama:X.Y.Z``: the Go driver's own loop with no lines
and no recorder (its spec's ``bare=1``) against the same driver recording. Both on the same
cluster, the same topic settings (RF=3, min.insync.replicas=2) and the same producer
properties, one producer each, flat out. Prints acknowledged records/s side by side and the
ratio the project aims at: driver / bare >= 0.8. Usage: ``python -m bench client -- --client
java:4.3.1``. The figures, with the machine, the versions and the date, replace their section
of ``--figures`` (``--no-figures`` writes none).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# `python -m bench client` runs this file as a script: the repository's root goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workload_bench import Result, kafka_perf_props  # noqa: E402
from compose.cluster import KafkaCluster  # noqa: E402
from compose.config import ClusterConfig  # noqa: E402
from compose.image import DEFAULT_KAFKA_VERSION  # noqa: E402
from contract.clients import FRANZ_GO, JAVA, SARAMA, parse_client  # noqa: E402
from contract.driver_protocol import render_spec, split_line  # noqa: E402
from reports.figures import FIGURES, write_figure  # noqa: E402
from runner.clients import ensure_driver  # noqa: E402
from workloads import ProducerConfig  # noqa: E402
from workloads.drivers import ForeignDriver  # noqa: E402

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


def go_bare_run(cluster: KafkaCluster, client: str, topic: str, cfg: ProducerConfig) -> Result:
    """The Go driver's produce loop alone: no lines but the count, no recorder."""
    driver = ensure_driver(parse_client(client), say=print)
    assert isinstance(driver, ForeignDriver)
    spec = driver.producer_spec(cluster.bootstrap_servers, topic, 3, cfg, 0)
    with tempfile.TemporaryDirectory(prefix="kc-bench-") as tmp:
        path = Path(tmp) / "p0.spec"
        path.write_text(render_spec({**spec.values, "bare": 1}, spec.config))
        # stdin stays open while it runs: its end is the driver's stop signal
        proc = subprocess.Popen([*spec.command, str(path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None
        text = proc.stdout.read().decode()  # until it ends, after max_records
        proc.stdin.close()
        proc.wait(60)
    _, fields = next(x for line in reversed(text.splitlines())
                        if (x := split_line(line)) is not None and x[0] == "bench")
    acked, first, last = (int(f) for f in fields)
    return Result(f"{client}, bare", acked, (last - first) / 1e9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default="java:4.3.1",
                    help="KIND:VERSION: java, franz-go or sarama")
    ap.add_argument("--kafka-version", default=None,
                    help="the cluster's (default: java's own version, else 4.3.1)")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--linger-ms", type=float, default=20)
    ap.add_argument("--batch-size", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2, help="each figure is its best round")
    ap.add_argument("--figures", type=Path, default=FIGURES / "workload-bench.md")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args()
    spec = parse_client(args.client)
    if spec.kind not in (JAVA, FRANZ_GO, SARAMA):
        print(f"bench client: no bare loop for {spec.kind}", file=sys.stderr)
        return 2
    cfg = ProducerConfig(acks="all", rate=0, record_size=args.size, duration_s=600,
                         max_records=args.records, linger_ms=args.linger_ms,
                         batch_size=args.batch_size)
    props = cfg.kafka_config(0)
    results: list[Result] = []
    assert spec.version is not None  # parse_client requires it of these
    kafka = args.kafka_version or (spec.version if spec.kind == JAVA else DEFAULT_KAFKA_VERSION)
    with KafkaCluster(ClusterConfig(brokers=3, kafka_version=kafka)) as c:
        for r in range(args.rounds):
            for name in (("bare", "ours") if r % 2 == 0 else ("ours", "bare")):
                topic = f"bench-{name}-{r}"
                c.create_topic(topic, 3, 3, {"min.insync.replicas": "2"})
                if name == "ours":
                    res = driver_run(c, args.client, topic, cfg)
                elif spec.kind == JAVA:
                    res = kafka_perf_props(c, topic, args.records, args.size, props)
                else:
                    res = go_bare_run(c, args.client, topic, cfg)
                print(f"  {res.name:28s} {res.acked:>9d} acked in {res.seconds:6.2f}s "
                      f"= {res.rate:>10.0f} records/s", flush=True)
                results.append(res)
    bare_name = results[0].name  # the first round runs the bare loop first
    bare = max(x.rate for x in results if x.name == bare_name)
    ours = max(x.rate for x in results if x.name != bare_name)
    ratio = ours / bare if bare else 0.0
    print(f"\n{bare_name:28s} {bare:>10.0f} records/s  1.00x")
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
            rows=[(f"{bare_name} (bare)", f"{bare:,.0f}", "1.00x"),
                  (f"{args.client} driver, recording", f"{ours:,.0f}", f"{ratio:.2f}x")],
            notes=f"One 3-broker Kafka {kafka} cluster, RF=3, min.insync.replicas=2, "
                  f"one producer each, the same producer properties (acks=all, linger.ms "
                  f"{args.linger_ms:g}, batch.size {args.batch_size}); goal >= {GOAL:.2f}x.")
        print(f"written {written}")
    return 0  # the goal is a figure to read (as the other benchmarks'), not a test


if __name__ == "__main__":
    raise SystemExit(main())
