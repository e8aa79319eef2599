"""Producer throughput: Kafka's own ProducerPerformance vs. our recording producers.

Runs on one 3-broker cluster, topic RF=3, min.insync.replicas=2, acks=all, 100-byte records:

(a) ``kafka-producer-perf-test.sh`` inside broker 1's container (Kafka's own tool);
(b) our producer processes with full history recording (writes.parquet);
(c) the same producers without recording (``record_history=False``).

Prints acknowledged records/s side by side with the ratios the project aims at: (b)/(a) ≥ 0.5
and a recording overhead 1 - (b)/(c) ≤ 15 %. Usage: ``python -m bench.workload_bench``
(or ``python -m bench workload``). The figures, with the machine, the versions and the date,
replace their section of ``--figures`` (reports/figures.py; ``--no-figures`` writes none).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# `python -m bench workload` runs this file as a script: bench/ itself is not a package the
# project installs, so the repository's root goes on the path (as in checker_bench.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compose.cluster import KafkaCluster  # noqa: E402
from compose.config import ClusterConfig  # noqa: E402
from reports.figures import FIGURES, write_figure  # noqa: E402
from workloads import ProducerConfig, start_producers  # noqa: E402

_PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


@dataclass
class Result:
    name: str
    acked: int
    seconds: float
    cpu_s: float = 0.0  # CPU time of our producer processes (whole process lifetime)

    @property
    def rate(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0


def kafka_perf(cluster: KafkaCluster, topic: str, records: int, size: int) -> Result:
    """Kafka's ProducerPerformance, run inside broker 1 against all three brokers."""
    return kafka_perf_props(cluster, topic, records, size, {"acks": "all"})


def kafka_perf_props(cluster: KafkaCluster, topic: str, records: int, size: int,
                     props: dict[str, str]) -> Result:
    """Kafka's ProducerPerformance with these producer properties, inside broker 1."""
    settings = " ".join(f"{k}={v}" for k, v in props.items())
    cmd = (f"/opt/kafka/bin/kafka-producer-perf-test.sh --topic {topic} "
           f"--num-records {records} --record-size {size} --throughput -1 "
           f"--producer-props {settings} bootstrap.servers={cluster.bootstrap_servers}")
    code, out = cluster.node(1).exec(cmd, timeout_s=600)
    lines = [m for m in _PERF_LINE.finditer(out)]
    if code != 0 or not lines:
        raise RuntimeError(f"perf test failed ({code}): {out[-2000:]}")
    sent, rate = int(lines[-1].group(1)), float(lines[-1].group(2))
    return Result("kafka-producer-perf-test", sent, sent / rate)


def ours(cluster: KafkaCluster, topic: str, records: int, size: int, producers: int,
         record: bool, linger_ms: float, batch_size: int) -> Result:
    """Our producer processes flat out; rate = acks over first invoke → last ack."""
    cfg = ProducerConfig(acks="all", rate=0, record_size=size, duration_s=600,
                         max_records=records // producers, record_history=record,
                         linger_ms=linger_ms, batch_size=batch_size)
    with tempfile.TemporaryDirectory(prefix="kc-bench-") as tmp:
        group = start_producers(Path(tmp), cluster.bootstrap_servers, topic, 3, cfg,
                                count=producers)
        while group.alive():
            time.sleep(0.2)  # waiting for the run to end, not synchronising
        stats = group.stop(30)
    acked = sum(s.get("ok", 0) for s in stats.values())
    first = min(s["first_invoke_ns"] for s in stats.values())
    last = max(s["last_ack_ns"] for s in stats.values())
    name = "ours, recording" if record else "ours, no recording"
    cpu = sum(s.get("cpu_s", 0.0) for s in stats.values())
    return Result(name, acked, (last - first) / 1e9, cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--linger-ms", type=float, default=20)
    ap.add_argument("--batch-size", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of all three; each figure is the best of its rounds")
    ap.add_argument("--figures", type=Path, default=FIGURES / "workload-bench.md",
                    help="the figure file whose section this rewrites")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args()

    with KafkaCluster(ClusterConfig(brokers=3)) as c:
        results: list[Result] = []
        for r in range(args.rounds):
            # Alternate which of ours goes first: the brokers' state (page cache, segment
            # rolls) should not favour one side.
            order = ("perf", "rec", "norec") if r % 2 == 0 else ("perf", "norec", "rec")
            for name in order:
                topic = f"bench-{name}-{r}"
                c.create_topic(topic, 3, 3, {"min.insync.replicas": "2"})
                if name == "perf":
                    res = kafka_perf(c, topic, args.records, args.size)
                else:
                    res = ours(c, topic, args.records, args.size, args.producers,
                               name == "rec", args.linger_ms, args.batch_size)
                per = (f", {1e6 * res.cpu_s / res.acked:5.1f} CPU-µs/record"
                       if res.cpu_s else "")
                print(f"  {res.name:28s} {res.acked:>9d} acked in {res.seconds:6.2f}s "
                      f"= {res.rate:>10.0f} records/s{per}", flush=True)
                results.append(res)

    def best(prefix: str) -> float:
        return max(x.rate for x in results if x.name == prefix)

    perf, rec, norec = best("kafka-producer-perf-test"), best("ours, recording"), \
        best("ours, no recording")
    print()
    print(f"{'kafka-producer-perf-test':28s} {perf:>10.0f} records/s  1.00x")
    print(f"{'ours, recording':28s} {rec:>10.0f} records/s  {rec / perf:.2f}x  (goal >= 0.50x)")
    print(f"{'ours, no recording':28s} {norec:>10.0f} records/s  {norec / perf:.2f}x")
    print(f"recording overhead: {100 * (1 - rec / norec):.1f} % (goal <= 15 %)")

    def cpu(name: str) -> float:
        xs = [x.cpu_s / x.acked for x in results if x.name == name and x.acked]
        return 1e6 * min(xs) if xs else 0.0

    # CPU per record is steadier than wall-clock rates on a machine shared with others.
    c_rec, c_norec = cpu("ours, recording"), cpu("ours, no recording")
    print(f"CPU per record: {c_rec:.1f} µs recording, {c_norec:.1f} µs without "
          f"(+{100 * (c_rec / c_norec - 1):.0f} %)")
    if not args.no_figures:
        rows = [("kafka-producer-perf-test", f"{perf:,.0f}", "1.00x", "-"),
                ("ours, recording", f"{rec:,.0f}", f"{rec / perf:.2f}x", f"{c_rec:.1f}"),
                ("ours, no recording", f"{norec:,.0f}", f"{norec / perf:.2f}x", f"{c_norec:.1f}")]
        command = (f"python -m bench workload -- --records {args.records} --size {args.size} "
                   f"--producers {args.producers} --rounds {args.rounds}")
        written = write_figure(
            args.figures, f"{args.producers}-producers-{args.size}-bytes",
            heading="Workload benchmark", command=command,
            title=f"{args.producers} producer processes, {args.size}-byte records",
            columns=["producer", "records/s (best round)", "vs Kafka's tool", "CPU µs/record"],
            rows=rows,
            notes=f"One 3-broker cluster, RF=3, min.insync.replicas=2, acks=all; "
                  f"recording overhead {100 * (1 - rec / norec):.1f} % (goal <= 15 %).")
        print(f"written {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
