"""The ``kafka-chaos`` command line: its options, subcommands and help examples
(runner/cli.py runs what they ask for). Bad options are refused with one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from contract.faults import RANDOM_FAULT_KINDS
from contract.settings import (
    ACKS_VALUES,
    CONSUMER_MODES,
    GROUP_PROTOCOLS,
    ISOLATION_LEVELS,
)

EXAMPLES = {
    "run": """examples:
  kafka-chaos run                                   # safe-config-chaos, 60 s, 3 brokers
  kafka-chaos run --scenario acks1-leader-failover
  kafka-chaos run --acks 1 --faults kill --fault-interval 5 --duration 30 --seed 7
  kafka-chaos run --kafka-version 3.9.1 --unclean --min-insync 1
  kafka-chaos run --image apache/kafka:4.1.1        # where the official image can be pulled
  kafka-chaos run --scenario-file my-scenarios.toml --scenario my-case
  kafka-chaos run --bug librdkafka#4844             # the known bug on its affected version
  kafka-chaos run --bug KIP-966 --on fixed          # ... and on the version that fixed it
  kafka-chaos run --bug KIP-966 --on both --repeat 5  # its rate: 5 runs per side, a tally
  kafka-chaos run --bug KIP-966 --on 4.0.2,4.1.2 --repeat 5  # on further versions it lists""",
    "bugs": """examples:
  kafka-chaos bugs                                  # the known-bug catalogue
  kafka-chaos run --bug KIP-966 --on affected""",
    "check": """examples:
  kafka-chaos check runs/latest
  kafka-chaos check runs/safe-config-chaos/20261122T093000Z --spark-master spark://host:7077""",
    "report": """examples:
  kafka-chaos report runs/latest        # one run -> runs/latest/report.html
  kafka-chaos report runs               # a folder of runs -> runs/index.html (matrix)""",
    "cluster": """examples:
  kafka-chaos cluster up --brokers 3    # prints bootstrap servers; Ctrl-C tears it down
  kafka-chaos cluster up --brokers 5 --kafka-version 3.9.1
  kafka-chaos cluster compose-file -o kc/   # docker-compose.yml + nodes.toml, same cluster""",
    "scenarios": """examples:
  kafka-chaos scenarios
  kafka-chaos scenarios --scenario-file examples/scenarios.toml""",
    "config": """config file (--config FILE): a [run] table of the same options, e.g.
  [run]
  duration = 30
  acks = "1"
  faults = ["kill", "pause"]
  [run.topic_config]
  "min.insync.replicas" = "2"
Options given on the command line win over the file's.""",
    "main": """examples:
  kafka-chaos run --duration 30                     # a 30 s chaos run; prints the verdict
  kafka-chaos scenarios                             # the catalogue
  kafka-chaos report runs                           # matrix of every run under runs/
exit codes: run/check 0 valid, 1 invalid, 2 unknown or error; report 0, 2 on error.
Colours and live progress only on a terminal (NO_COLOR=1 turns colours off).""",
}


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a single line (its default prints usage too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"kafka-chaos: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _bool_pair(p: argparse.ArgumentParser, name: str, help_: str) -> None:
    p.add_argument(f"--{name}", dest=name.replace("-", "_"), action="store_true",
                   default=None, help=help_)
    p.add_argument(f"--no-{name}", dest=name.replace("-", "_"), action="store_false")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="kafka-chaos", description="Chaos testing for real Apache Kafka.",
                 epilog=EXAMPLES["main"], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    fmt = argparse.RawDescriptionHelpFormatter

    r = sub.add_parser("run", help="cluster up, workload + faults, heal, drain, check, report",
                       epilog=EXAMPLES["run"] + "\n\n" + EXAMPLES["config"],
                       formatter_class=fmt)
    r.add_argument("--scenario", help="a scenario name (default safe-config-chaos)")
    r.add_argument("--bug", metavar="ID",
                   help="run a known bug's scenario pinned to its version (kafka-chaos bugs)")
    r.add_argument("--on", metavar="SIDE",
                   help="with --bug: affected (default: its affected version), fixed, both, "
                        "or versions the entry lists, comma-separated (e.g. 4.0.2,4.1.2)")
    r.add_argument("--repeat", type=int, metavar="N",
                   help="with --bug: N runs per side, then one tally line per side; exit 0 "
                        "when no run contradicted the entry, else 1")
    r.add_argument("--figures", type=Path, metavar="FILE",
                   help="with --bug and --repeat: write the tally as this entry's section of "
                        "FILE (docs/figures/bug-rates.md in a source checkout)")
    r.add_argument("--scenario-file", type=Path, help="TOML file with more scenarios")
    r.add_argument("--config", type=Path, help="TOML file of run options (CLI wins)")
    r.add_argument("--brokers", type=int)
    r.add_argument("--controllers", type=int, help="0: combined mode (default)")
    r.add_argument("--partitions", type=int)
    r.add_argument("--replication-factor", type=int)
    r.add_argument("--min-insync", type=int)
    _bool_pair(r, "unclean", "unclean.leader.election.enable")
    r.add_argument("--acks", choices=ACKS_VALUES)
    _bool_pair(r, "idempotence", "enable.idempotence (default: on with acks=all)")
    r.add_argument("--transactions", action="store_true", default=None)
    r.add_argument("--send-offsets", action="store_true", default=None,
                   help="with --transactions: each producer also runs a group consumer of "
                   "its own and sends its positions in every transaction")
    r.add_argument("--producers", type=int)
    r.add_argument("--idle-producer", type=float, metavar="SECONDS",
                   help="the last producer stays idle this long from its start (connected, "
                   "sending nothing), then writes like the others")
    r.add_argument("--consumers", type=int)
    r.add_argument("--consumer-mode", choices=CONSUMER_MODES,
                   help="restart: a group consumer that closes and rejoins after catching up")
    r.add_argument("--isolation-level", choices=ISOLATION_LEVELS)
    r.add_argument("--group-protocol", choices=GROUP_PROTOCOLS,
                   help="subscribe- and restart-mode consumers' group protocol: classic "
                   "(default) or consumer (KIP-848, Kafka 4.0+)")
    r.add_argument("--rate", type=float, help="records/s per producer (0: flat out)")
    r.add_argument("--duration", type=float, help="seconds of workload")
    r.add_argument("--record-size", type=int)
    r.add_argument("--max-records", type=int,
                   help="records each producer writes before it stops (0: no limit)")
    r.add_argument("--restart-close-delay", type=float, metavar="S",
                   help="restart mode: seconds a caught-up consumer goes without a poll "
                   "before it closes (0: at once)")
    r.add_argument("--faults", help=f"comma list of {','.join(RANDOM_FAULT_KINDS)}, or none")
    r.add_argument("--fault-interval", type=float, help="seconds between fault starts")
    r.add_argument("--targets", help="comma list: random,leader,follower,controller,...")
    r.add_argument("--seed", type=int)
    r.add_argument("--kafka-version")
    r.add_argument("--image", help="use this image as is (e.g. apache/kafka:4.1.1)")
    r.add_argument("--client-version", metavar="X.Y.Z",
                   help="confluent-kafka release for the producers and consumers (a venv "
                   "cached under ~/.cache/kafka-chaos/clients, built from PyPI on first use)")
    r.add_argument("--client", metavar="KIND:VERSION",
                   help="the client that writes and reads: confluent-kafka[:X.Y.Z] (default: "
                   "the installed one), java:X.Y.Z (Kafka's kafka-clients from Maven "
                   "Central), franz-go:X.Y.Z or sarama:X.Y.Z (the Go module proxy); built "
                   "and cached on first use")
    r.add_argument("--bootstrap-servers", metavar="HOST:PORT[,...]",
                   help="run against this existing cluster instead of starting one")
    r.add_argument("--nodes", metavar="nodes.toml",
                   help="the existing cluster's nodes faults may touch, reached over SSH "
                   "or containers on this machine's engine")
    r.add_argument("--dead-man", type=float, metavar="SECONDS",
                   help="a node's watchdog undoes our faults by itself this long after the "
                   "run stops renewing its lease (default 60)")
    r.add_argument("--liveness", type=float, metavar="SECONDS",
                   help="after the final heal every producer and consumer must make "
                   "progress within this bound (default 30; 0: not checked)")
    r.add_argument("--out", help="runs folder (default runs)")
    r.add_argument("--broker-config", type=_kv, action="append", metavar="K=V")
    r.add_argument("--topic-config", type=_kv, action="append", metavar="K=V")
    r.add_argument("--producer-config", type=_kv, action="append", metavar="K=V")
    r.add_argument("--consumer-config", type=_kv, action="append", metavar="K=V")
    r.add_argument("--accept-known", metavar="ID[,ID]",
                   help="known bugs (e.g. librdkafka#4953) whose records may leave the "
                   "verdict valid; they are still counted and shown")
    r.add_argument("--spark-master", help="Spark master URL for the check (default local[2])")
    r.add_argument("--no-check", dest="check", action="store_false", default=None)
    r.add_argument("--no-report", dest="report", action="store_false", default=None)

    c = sub.add_parser("check", help="(re)check a run directory", epilog=EXAMPLES["check"],
                       formatter_class=fmt)
    c.add_argument("run_dir", type=Path)
    c.add_argument("--spark-master")

    rp = sub.add_parser("report", help="render a run's report, or a matrix of runs",
                        epilog=EXAMPLES["report"], formatter_class=fmt)
    rp.add_argument("path", type=Path)

    s = sub.add_parser("scenarios", help="list the scenarios", epilog=EXAMPLES["scenarios"],
                       formatter_class=fmt)
    s.add_argument("--scenario-file", type=Path)

    sw = sub.add_parser("sweep", help="undo every fault of ours left on an existing "
                        "cluster's nodes", formatter_class=fmt)
    sw.add_argument("--nodes", metavar="nodes.toml", type=Path, required=True)

    from runner.explore.commands import add_commands

    add_commands(sub, _Parser, fmt)

    sub.add_parser("bugs", help="list the known-bug catalogue", epilog=EXAMPLES["bugs"],
                   formatter_class=fmt)

    cl = sub.add_parser("cluster", help="start a cluster and keep it up",
                        epilog=EXAMPLES["cluster"], formatter_class=fmt)
    cl_sub = cl.add_subparsers(dest="cluster_command", required=True, parser_class=_Parser)
    up = cl_sub.add_parser("up", help="start, print bootstrap servers, wait for Ctrl-C",
                           epilog=EXAMPLES["cluster"], formatter_class=fmt)
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--controllers", type=int, default=0)
    up.add_argument("--kafka-version")
    up.add_argument("--image")
    cf = cl_sub.add_parser("compose-file", formatter_class=fmt,
                           help="write docker-compose.yml and nodes.toml for the same cluster")
    cf.add_argument("--brokers", type=int, default=3)
    cf.add_argument("--controllers", type=int, default=0)
    cf.add_argument("--kafka-version")
    cf.add_argument("--image")
    cf.add_argument("--project", default="kafka-chaos",
                    help="compose project name; containers are <project>-node-<id>")
    cf.add_argument("-o", "--out", type=Path, default=Path("."), help="folder to write into")
    return ap
