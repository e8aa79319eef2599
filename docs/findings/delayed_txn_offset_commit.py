"""Does a delayed TxnOffsetCommit of an aborted transaction land in the producer's next one?

Issue 46 point 4, class 2 (docs/findings/delayed-txn-offset-commit.md). One cluster, N runs,
each on fresh topics, a fresh group and a fresh transactional id (librdkafka, transaction
version 1: one producer epoch for every transaction of a producer):

1. txn 1 commits the group's offsets ``{p0: 10, p1: 10}`` (``send_offsets_to_transaction``).
2. The ``hold`` fault holds every packet the group coordinator receives from this host on a
   connection opened before it (the producer's connection, which carries its TxnOffsetCommit),
   for ``--hold`` seconds; new connections pass.
3. txn 2 sends ``{p0: 20, p1: 20}`` with a 3 s timeout: the call times out, the script aborts
   the transaction (its coordinator is another broker: not held).
4. txn 3 sends ``{p0: 15}`` only (p1 went to another member) and then, in mode ``open``, stays
   open until the hold released the old request, and commits; in mode ``between`` it commits
   at once and txn 4 (``{p0: 16}``) follows the release.
5. The group's committed offsets are read back, a member that takes p1 over reads its first
   record, and ``__consumer_offsets`` of the group is dumped from the coordinator.

p1 committed at 20 means the aborted transaction's offsets were committed by a later one:
records 10..19 of p1 are skipped by whoever reads p1 next. 10 means they were not.

Run (one command; writes under ``runs/delayed-txn-offset-commit/``)::

    .venv/bin/python docs/findings/delayed_txn_offset_commit.py --runs 10 \
        [--kafka 4.3.1] [--no-verification] [--mode open|between]
        [--member standalone|subscribed]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, libversion, version

from chaos.user_api import ChaosSession
from compose.admin import java_abs, java_hash
from compose.cluster import KafkaCluster
from compose.config import DATA_DIR, ClusterConfig

OUT = Path("runs/delayed-txn-offset-commit")
FIRST, ABORTED, NEXT, LAST = 10, 20, 15, 16
SEND_TIMEOUT_S = 3.0


@dataclass
class Outcome:
    """One run: what each call did, the committed offsets, what a new owner of p1 read."""

    run: int
    group: str
    txn_id: str
    group_coordinator: int
    txn_coordinator: int
    calls: list[dict[str, Any]] = field(default_factory=list)
    committed_before: dict[int, int] = field(default_factory=dict)
    committed_after: dict[int, int] = field(default_factory=dict)
    p1_first_read: int | None = None
    held: dict[str, Any] = field(default_factory=dict)
    dump: list[str] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        p1 = self.committed_after.get(1)
        if p1 == ABORTED:
            return "aborted offsets committed"
        return "not reproduced" if p1 == FIRST else f"other (p1 at {p1})"


def coordinator(cluster: KafkaCluster, topic: str, key: str) -> int:
    """The leader of ``key``'s partition of an internal topic (Kafka's partitionFor)."""
    md = cluster.admin().list_topics(topic, timeout=10).topics[topic]
    return int(md.partitions[java_abs(java_hash(key)) % len(md.partitions)].leader)


def call(out: Outcome, what: str, fn: Any) -> bool:
    """Runs one client call, records how long it took and how it ended."""
    t0 = time.monotonic()
    try:
        fn()
        out.calls.append({"call": what, "s": round(time.monotonic() - t0, 2), "ok": True})
        return True
    except KafkaException as e:
        err = e.args[0]
        out.calls.append({"call": what, "s": round(time.monotonic() - t0, 2), "ok": False,
                          "error": err.name(), "message": err.str(),
                          "retriable": err.retriable(), "abortable": err.txn_requires_abort()})
        return False


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=20)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def first_read(bootstrap: str, group: str, topic: str) -> int | None:
    """The offset a member that is given p1 (from the group's committed offset) reads first."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        c.assign([TopicPartition(topic, 1)])  # OFFSET_INVALID: from the committed offset
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None and m.offset() is not None:
                return int(m.offset() or 0)
        return None
    finally:
        c.close()


def pick_ids(cluster: KafkaCluster, run: int) -> tuple[str, str, int, int]:
    """A group and a transactional id coordinated by different brokers."""
    for k in range(200):
        group, txn_id = f"dtoc-g{run}-{k}", f"dtoc-t{run}-{k}"
        gc = coordinator(cluster, "__consumer_offsets", group)
        tc = coordinator(cluster, "__transaction_state", txn_id)
        if gc != tc:
            return group, txn_id, gc, tc
    raise RuntimeError("no group/transactional id pair on two brokers")


def dump_offsets_log(cluster: KafkaCluster, gc: int, group: str) -> list[str]:
    """The group's __consumer_offsets partition as kafka-dump-log decodes it (batches with
    their producer id and epoch, offset commits, markers), lines about this group only."""
    md = cluster.admin().list_topics("__consumer_offsets", timeout=10)
    part = java_abs(java_hash(group)) % len(md.topics["__consumer_offsets"].partitions)
    cmd = (f"f=$(find {DATA_DIR} -path '*/__consumer_offsets-{part}/*.log' | sort | tail -1); "
           f"echo \"segment: $f\"; /opt/kafka/bin/kafka-dump-log.sh --offsets-decoder --files $f")
    rc, text = cluster.node(gc).exec(cmd, timeout_s=60)
    if rc != 0:
        return [f"kafka-dump-log exit {rc}", *text.splitlines()[-5:]]
    keep: list[str] = []
    batch = ""
    for line in text.splitlines():
        if line.startswith("baseOffset:"):
            batch = line
            continue
        if group in line or ("endTxnMarker" in line and "isControl: true" in batch):
            keep += [batch, line.strip()] if batch else [line.strip()]
            batch = ""
    return [x for x in keep if x] or text.splitlines()[-20:]


def timeline(dump: list[str], group: str) -> list[str]:
    """The dump as one entry a record: ``offset:p0=15(pid 1/e0,+5.6s)`` for an offset commit
    of ``group``, ``offset:COMMIT(...)`` for a marker of the same producer; seconds from the
    first."""
    rows: list[tuple[int, str, str, str, int]] = []
    batch: tuple[str, ...] = ()
    for line in dump:
        if line.startswith("baseOffset:"):
            m = re.search(r"producerId: (\S+) producerEpoch: (\S+).*CreateTime: (\d+)", line)
            batch = m.groups() if m else ()
        elif line.startswith("| offset:") and batch:
            at = int(line.split()[2])
            if marker := re.search(r"endTxnMarker: (\w+)", line):
                rows.append((at, batch[0], batch[1], marker.group(1), int(batch[2])))
            elif f'"group":"{group}","topic"' in line:
                part = re.search(r'"partition":(\d+)', line)
                value = re.search(r'"offset":(\d+)', line)
                if part and value:
                    rows.append((at, batch[0], batch[1], f"p{part.group(1)}={value.group(1)}",
                                 int(batch[2])))
    pids = {r[1] for r in rows if "=" in r[3]}
    rows = [r for r in rows if r[1] in pids]
    t0 = rows[0][4] if rows else 0
    return [f"{at}:{what}(pid {pid}/e{epoch},+{(ts - t0) / 1000:.1f}s)"
            for at, pid, epoch, what, ts in rows]


def one_run(cluster: KafkaCluster, run: int, args: argparse.Namespace) -> Outcome:
    bs = cluster.bootstrap_servers
    group, txn_id, gc, tc = pick_ids(cluster, run)
    out = Outcome(run, group, txn_id, gc, tc)
    topic_in, topic_out = f"dtoc-in-{run}", f"dtoc-out-{run}"
    cluster.create_topic(topic_in, partitions=2, replication_factor=3)
    cluster.create_topic(topic_out, partitions=3, replication_factor=3)
    seed = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(60):  # 30 a partition: offsets 0..29
        seed.produce(topic_in, b"in-%d" % i, partition=i % 2)
    seed.flush(30)
    # the output partition is led by a broker other than the group coordinator: its
    # connection is the held one, and produce requests must not wait there
    parts = cluster.describe(topic_out)
    out_part = next(p.partition for p in parts if p.leader != gc)
    label = (f"{args.kafka}-{'noverify' if args.no_verification else 'verify'}-{args.mode}"
             f"-{args.member}"
             f"-sock{args.socket_timeout:g}-txn{args.txn_timeout:g}-hold{args.hold:g}")
    run_dir = OUT / label / f"run-{run:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    log = logging.getLogger(f"dtoc{run}")
    handler = logging.FileHandler(run_dir / "producer-debug.log", mode="w")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id, "acks": "all",
                  "transaction.timeout.ms": int(args.txn_timeout * 1000),
                  "socket.timeout.ms": int(args.socket_timeout * 1000),
                  "debug": "eos,protocol,broker"},
                 logger=log)
    meta_c = Consumer({"bootstrap.servers": bs, "group.id": group,
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    if args.member == "subscribed":  # a classic-protocol member: its generation and id
        meta_c.subscribe([topic_in])
        deadline = time.monotonic() + 60
        while len(meta_c.assignment()) < 2 and time.monotonic() < deadline:
            meta_c.poll(0.5)
    gmeta = meta_c.consumer_group_metadata()  # standalone: generation -1, no member id

    def txn(offsets: dict[int, int], send_timeout: float) -> bool:
        p.begin_transaction()
        p.produce(topic_out, b"out", partition=out_part)
        return call(out, f"send_offsets {offsets}", lambda: p.send_offsets_to_transaction(
            [TopicPartition(topic_in, k, v) for k, v in offsets.items()], gmeta,
            send_timeout))

    with ChaosSession(cluster, run_dir / "session", name=f"dtoc-{run}") as chaos:
        p.init_transactions(30)
        txn({0: FIRST, 1: FIRST}, 30)
        call(out, "commit 1", lambda: p.commit_transaction(30))
        out.committed_before = committed(bs, group, topic_in)
        hold = chaos.fault("hold", gc, hold_s=args.hold)
        released_at = time.monotonic() + args.hold
        txn({0: ABORTED, 1: ABORTED}, SEND_TIMEOUT_S)
        if not call(out, "abort 2", lambda: p.abort_transaction(30)):
            call(out, "abort 2 (again)", lambda: p.abort_transaction(30))
        txn({0: NEXT}, args.hold + 20)
        if args.mode == "between":
            call(out, "commit 3", lambda: p.commit_transaction(30))
        time.sleep(max(0.0, released_at - time.monotonic()) + 3)
        hold.stop()
        if args.mode == "between":
            txn({0: LAST}, 30)
        call(out, "commit last", lambda: p.commit_transaction(30))
        events = (run_dir / "session" / "history" / "events.jsonl").read_text().splitlines()
        out.held = next((e.get("detail", {}) for e in map(json.loads, events)
                         if e.get("kind") == "hold" and e.get("phase") == "end"), {})
    p.flush(10)
    meta_c.close()
    log.removeHandler(handler)
    handler.close()
    out.committed_after = committed(bs, group, topic_in)
    out.p1_first_read = first_read(bs, group, topic_in)
    out.dump = dump_offsets_log(cluster, gc, group)
    out.timeline = timeline(out.dump, group)
    (run_dir / "outcome.json").write_text(json.dumps(asdict(out) | {"verdict": out.verdict},
                                                     indent=1))
    return out


def warm_up(cluster: KafkaCluster) -> None:
    """Creates __consumer_offsets and __transaction_state (coordinators can be looked up)."""
    bs = cluster.bootstrap_servers
    cluster.create_topic("dtoc-warm", partitions=1, replication_factor=3)
    c = Consumer({"bootstrap.servers": bs, "group.id": "dtoc-warm"})
    c.commit(offsets=[TopicPartition("dtoc-warm", 0, 0)], asynchronous=False)
    c.close()
    p = Producer({"bootstrap.servers": bs, "transactional.id": "dtoc-warm"})
    p.init_transactions(60)
    cluster.wait_partitions("__transaction_state", timeout_s=60)
    cluster.wait_partitions("__consumer_offsets", timeout_s=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--kafka", default="4.3.1")
    ap.add_argument("--no-verification", action="store_true",
                    help="transaction.partition.verification.enable=false (KIP-890 part 1 off)")
    ap.add_argument("--mode", choices=("open", "between"), default="open")
    ap.add_argument("--member", choices=("standalone", "subscribed"), default="standalone",
                    help="the offsets' group metadata: a standalone consumer's (generation "
                         "-1) or a subscribed classic member's (its generation)")
    ap.add_argument("--hold", type=float, default=15.0, help="hold window, seconds")
    ap.add_argument("--txn-timeout", type=float, default=60.0,
                    help="the producer's transaction.timeout.ms, seconds (librdkafka's default)")
    ap.add_argument("--socket-timeout", type=float, default=5.0,
                    help="the producer's socket.timeout.ms, seconds: the TxnOffsetCommit's "
                         "own request timeout (librdkafka's default is 60)")
    args = ap.parse_args()
    broker_config = {"transaction.partition.verification.enable": "false"} \
        if args.no_verification else {}
    cfg = ClusterConfig(kafka_version=args.kafka, broker_config=broker_config)
    print(f"confluent-kafka {version()[0]}, librdkafka {libversion()[0]}, Kafka {args.kafka}",
          flush=True)
    rows = []
    with KafkaCluster(cfg) as cluster:
        warm_up(cluster)
        for run in range(1, args.runs + 1):
            o = one_run(cluster, run, args)
            rows.append(o)
            print(json.dumps({"run": run, "verdict": o.verdict, "gc": o.group_coordinator,
                              "tc": o.txn_coordinator, "before": o.committed_before,
                              "after": o.committed_after, "p1_first_read": o.p1_first_read,
                              "calls": o.calls, "offsets_log": " ".join(o.timeline)}), flush=True)
    hits = sum(o.verdict == "aborted offsets committed" for o in rows)
    print(f"{hits}/{len(rows)} runs committed the aborted transaction's offsets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
