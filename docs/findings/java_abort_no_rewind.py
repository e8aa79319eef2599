"""Does the Java consumer rewind when a consume-transform-produce transaction aborts?

KAFKA-17582 (docs/findings/java-abort-no-rewind.md). One cluster, N runs of each mode, each
on fresh topics, a fresh group and a fresh transactional id, no faults:

1. A recorded transactional producer writes ``--inputs`` records to the input topic
   (committed), so the drain knows every input's identity.
2. The Java driver's consume-transform-produce loop (KcDriver, a producer given
   ``input_topic``; kafka-clients ``--java``) reads them with a read_committed group
   consumer, ``--batch`` records a poll, and writes one output a record in one transaction
   a poll, sending the consumer's positions with ``sendOffsetsToTransaction``. Every
   ``--abort-every``-th transaction is aborted: an application failure, not a rebalance.
   Mode ``affected`` polls on after the abort; mode ``control`` (``--rewind``) first seeks
   every assigned partition back to the group's committed offset.
3. The loop ends at the input's end; the session drains both topics read_committed and the
   pipeline check counts inputs without an output (``missing``), with more than one
   (``duplicated``) and outputs of no committed input (``orphaned``).

Expected: affected, every input of an aborted transaction is ``missing`` (the position was
not rewound: the next transaction started after them); control, exactly-once and valid.

Run (one command; writes under ``runs/java-abort-no-rewind/``)::

    .venv/bin/python docs/findings/java_abort_no_rewind.py --runs 5 \
        [--mode both|affected|control] [--kafka 4.3.1] [--java 4.1.1]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.user_api import ChaosSession
from compose.cluster import KafkaCluster
from compose.config import ClusterConfig
from runner.java_client import ensure_java
from workloads.foreign import DriverSpec, driver_main
from workloads.processes import new_group, spawn

OUT = Path("runs/java-abort-no-rewind")
MODES = ("affected", "control")
#: The loop's producer id in the history (the input producer is 0).
CTP_PRODUCER = 1
_ABORT = re.compile(r"ctp: aborted txn (\d+) sources (\S*) position (\{.*?\}) "
                    r"committed (\{.*?\})")


@dataclass
class Abort:
    """One injected abort as the loop logged it: the inputs of the aborted transaction, and
    the consumer's position and the group's committed offset right after the abort."""

    txn: int
    sources: list[str]
    position: str
    committed: str


@dataclass
class Outcome:
    """One run: the pipeline check's counts, the aborts, the verdicts."""

    run: int
    mode: str
    run_dir: str
    inputs: int
    counts: dict[str, int] = field(default_factory=dict)
    pipeline_valid: bool | str | None = None
    valid: bool | str | None = None
    aborts: list[Abort] = field(default_factory=list)
    missing_examples: list[str] = field(default_factory=list)
    rebalances: int = 0
    txns: dict[str, int] = field(default_factory=dict)
    driver_exitcode: int | None = None

    @property
    def aborted_inputs(self) -> set[str]:
        return {s for a in self.aborts for s in a.sources}

    @property
    def verdict(self) -> str:
        """``skipped``: exactly the aborted transactions' inputs had no output (the bug);
        ``exactly-once``: every input one output, the run valid; else what was seen."""
        c = self.counts
        clean = c.get("duplicated") == 0 and c.get("orphaned") == 0
        aborted = self.aborted_inputs
        if (clean and aborted and c.get("missing") == len(aborted)
                and set(self.missing_examples) <= aborted):
            return "skipped"
        if clean and c.get("missing") == 0 and self.pipeline_valid is True \
                and self.valid is True and aborted:
            return "exactly-once"
        return f"other ({c})"


def ctp_spec(command: list[str], bootstrap: str, topics: tuple[str, str], partitions: int,
             group: str, txn_id: str, *, rewind: bool, abort_every: int, batch: int,
             bound_s: float) -> DriverSpec:
    """The driver spec of the loop (contract/driver_protocol.py SPEC_KEYS "pipeline")."""
    values: dict[str, Any] = {
        "role": "producer", "name": "ctp", "bootstrap": bootstrap, "topic": topics[1],
        "partitions": list(range(partitions)), "producer": CTP_PRODUCER,
        "duration_s": bound_s, "close_timeout_s": 10,
        "input_topic": topics[0], "group": group, "max_poll_records": batch,
        "poll_timeout_ms": 500, "abort_every": abort_every, "rewind": int(rewind)}
    config = {"transactional.id": txn_id, "acks": "all", "enable.idempotence": "true"}
    return DriverSpec(command, "java", values, config, close_timeout_s=10)


def run_ctp(run_dir: Path, spec: DriverSpec, bound_s: float) -> dict[str, Any]:
    """Runs the loop's driver under the Java driver's recorder (its outputs and
    transactions into the session's writes.parquet) until it ends by itself; past
    ``bound_s`` (+30 s for the JVM and the group's first join) it is stopped. Returns the
    recorder's stats."""
    group = new_group(lambda s: "ctp")
    spawn(group, "ctp", "kc-ctp", driver_main, run_dir, spec)
    deadline = time.monotonic() + bound_s + 30
    while group.alive() and time.monotonic() < deadline:
        time.sleep(0.2)  # a bounded wait for a process's end, not a synchronisation
    return group.stop(timeout_s=20).get("ctp", {})


def aborts_of(log: Path) -> tuple[list[Abort], int]:
    """The loop's aborts and how many times its consumer was assigned partitions, from its
    stderr (the recorder keeps it in ``logs/workload-ctp.log``)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    aborts = [Abort(int(m.group(1)), [s for s in m.group(2).split(",") if s],
                    m.group(3), m.group(4)) for m in _ABORT.finditer(text)]
    return aborts, text.count("ctp: assigned ")


@dataclass(frozen=True)
class Settings:
    """What a run writes and how the loop runs (the script's options)."""

    inputs: int = 200
    partitions: int = 2
    batch: int = 10  # max.poll.records: the records of one transaction at most
    abort_every: int = 4
    bound_s: float = 90.0  # the loop is stopped past it (+30 s)


def pipeline_run(chaos: ChaosSession, cluster: KafkaCluster, command: list[str], mode: str,
                 run: int = 1, settings: Settings = Settings()) -> Outcome:
    """One run of ``mode`` in ``chaos``'s run directory: inputs, the loop, the pipeline
    check (which ends the session's workload: nothing may follow in it)."""
    s = settings
    tag = f"{mode}-{run:02d}-{int(time.time())}"
    topics = (f"jan-in-{tag}", f"jan-out-{tag}")
    for t in topics:
        cluster.create_topic(t, partitions=s.partitions, replication_factor=3)
    # transactional, so run.json says the run has transactions (the loop's aborted
    # outputs are then judged as aborted, not as lost)
    writer = chaos.producer({"transactional.id": f"jan-writer-{tag}", "acks": "all"})
    writer.init_transactions(30)
    writer.begin_transaction()
    for i in range(s.inputs):
        writer.produce(topics[0], b"order-%d" % i, partition=i % s.partitions)
    writer.commit_transaction(30)
    spec = ctp_spec(command, cluster.bootstrap_servers, topics, s.partitions,
                    f"jan-group-{tag}", f"jan-ctp-{tag}", rewind=mode == "control",
                    abort_every=s.abort_every, batch=s.batch, bound_s=s.bound_s)
    stats = run_ctp(chaos.run_dir, spec, s.bound_s)
    result = chaos.check_pipeline(topics[0], topics[1], drain_timeout=60, report=False)
    aborts, assigned = aborts_of(result.run_dir / "logs" / "workload-ctp.log")
    p = result.pipeline
    return Outcome(
        run=run, mode=mode, run_dir=str(result.run_dir), inputs=s.inputs,
        counts=dict(p.get("counts", {})), pipeline_valid=p.get("valid"), valid=result.valid,
        aborts=aborts,
        missing_examples=[f"{e['producer']}|{e['seq']}"
                          for e in p.get("examples", {}).get("missing", [])],
        rebalances=assigned,
        txns={k[4:]: int(v) for k, v in stats.items()
              if k.startswith("txn_") and isinstance(v, int)},
        driver_exitcode=stats.get("driver_exitcode"))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each mode")
    ap.add_argument("--mode", choices=("both", *MODES), default="both")
    ap.add_argument("--kafka", default="4.3.1")
    ap.add_argument("--java", default="4.1.1", help="kafka-clients version")
    ap.add_argument("--inputs", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--batch", type=int, default=10, help="max.poll.records")
    ap.add_argument("--abort-every", type=int, default=4)
    ap.add_argument("--bound", type=float, default=90.0,
                    help="seconds the loop may take before it is stopped")
    args = ap.parse_args()
    modes = MODES if args.mode == "both" else (args.mode,)
    settings = Settings(args.inputs, args.partitions, args.batch, args.abort_every, args.bound)
    command = ensure_java(args.java).command()
    print(f"kafka-clients {args.java}, Kafka {args.kafka}", flush=True)
    rows: list[Outcome] = []
    with KafkaCluster(ClusterConfig(kafka_version=args.kafka)) as cluster:
        for run in range(1, args.runs + 1):
            for mode in modes:
                with ChaosSession.open(cluster, out=OUT, name=f"{mode}-run{run:02d}") as chaos:
                    o = pipeline_run(chaos, cluster, command, mode, run, settings)
                rows.append(o)
                Path(o.run_dir, "outcome.json").write_text(
                    json.dumps(asdict(o) | {"verdict": o.verdict}, indent=1))
                print(json.dumps({"run": run, "mode": mode, "verdict": o.verdict,
                                  "counts": o.counts, "valid": o.valid,
                                  "aborted_inputs": len(o.aborted_inputs),
                                  "aborts": [(a.txn, a.position, a.committed)
                                             for a in o.aborts],
                                  "assigned": o.rebalances, "txns": o.txns,
                                  "run_dir": o.run_dir}), flush=True)
    for mode in modes:
        mine = [o for o in rows if o.mode == mode]
        want = "skipped" if mode == "affected" else "exactly-once"
        print(f"{mode}: {sum(o.verdict == want for o in mine)}/{len(mine)} runs {want}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
