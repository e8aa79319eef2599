"""The ``explore``, ``replay`` and ``shrink`` commands: their options and their checks of
bad input (one line, exit 2, before any run starts)."""

from __future__ import annotations

import argparse
import math
import re
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from compose.image import DEFAULT_KAFKA_VERSION
from contract.clients import EVERY_CLIENT, ClientSpecError, parse_client
from runner.config import RUN_FIELDS, RunConfigError

EXAMPLES = {
    "explore": """examples:
  kafka-chaos explore --budget 2h --seed 7          # random configurations and faults
  kafka-chaos explore --budget 30m --kafka-versions 4.3.1,3.9.1 --clients confluent-kafka,java:4.1.1
  kafka-chaos explore --budget 1h --fix brokers=3 --fix acks=all
  kafka-chaos report runs/explore/20261204T100000Z  # the findings index""",
    "replay": """examples:
  kafka-chaos replay runs/latest --repeat 10        # reproduced 3/10: duplicate 12, 0, 7, ...""",
    "shrink": """examples:
  kafka-chaos shrink runs/explore/20261204T100000Z/explore/20261204T101500Z
  kafka-chaos shrink DIR --runs 5 --needed 2 --budget 2h""",
}
#: Options explore draws itself or sets for every run: not for --fix.
NOT_FIXABLE = ("scenario", "out", "accept_known")
DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smh]?)$")


def budget_seconds(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``2h`` → seconds (> 0)."""
    m = DURATION.match(text.strip())
    if not m:
        raise RunConfigError(f"--budget must be a time such as 90s, 30m or 2h, got {text!r}")
    value = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 0 < value < math.inf:
        raise RunConfigError(f"--budget must be more than 0, got {text!r}")
    return value


def fixed_options(pairs: list[str]) -> tuple[tuple[str, Any], ...]:
    """``--fix KEY=VALUE`` pairs as run options (values as in TOML: 3, true, "x", [..];
    a bare word is a string)."""
    out: list[tuple[str, Any]] = []
    for pair in pairs:
        if "=" not in pair:
            raise RunConfigError(f"--fix expects KEY=VALUE, got {pair!r}")
        key, text = (x.strip() for x in pair.split("=", 1))
        key = key.replace("-", "_")
        if key not in RUN_FIELDS or key in NOT_FIXABLE:
            raise RunConfigError(f"--fix: {key!r} is not a run option explore draws")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        if key in ("faults", "targets") and isinstance(value, str):
            value = [x.strip() for x in value.split(",") if x.strip()]
        out.append((key, value))
    return tuple(out)


def add_commands(sub: Any, parser_class: type, fmt: type) -> None:
    e = sub.add_parser("explore", help="back-to-back runs over random configurations and "
                       "faults; every run that is not VALID is a finding",
                       epilog=EXAMPLES["explore"], formatter_class=fmt)
    e.add_argument("--budget", required=True, help="how long to explore: 90s, 30m, 2h")
    e.add_argument("--seed", type=int, default=0, help="the draws' seed (default 0)")
    e.add_argument("--runs", type=int, metavar="N", help="stop after N runs at most")
    e.add_argument("--run-duration", type=float, default=60.0, metavar="SECONDS",
                   help="each run's workload (default 60)")
    e.add_argument("--kafka-versions", default=None, metavar="V[,V]",
                   help="Kafka versions to draw from (default: every version whose image "
                   f"is built here, else {DEFAULT_KAFKA_VERSION})")
    e.add_argument("--clients", default=",".join(EVERY_CLIENT),
                   metavar="KIND[:VERSION][,...]",
                   help=f"clients to draw from (default {','.join(EVERY_CLIENT)}; each "
                   "built on first use)")
    e.add_argument("--fix", action="append", default=[], metavar="KEY=VALUE",
                   help="a run option not drawn (brokers=3, acks=all, ...)")
    e.add_argument("--out", default="runs", help="runs folder (default runs): the explore "
                   "goes to <out>/explore/<UTC time>/")
    r = sub.add_parser("replay", help="run a run's configuration and fault schedule as it "
                       "happened again, N times, and tally how often its finding came back",
                       epilog=EXAMPLES["replay"], formatter_class=fmt)
    r.add_argument("run_dir", type=Path)
    r.add_argument("--repeat", type=int, default=1, metavar="N")
    r.add_argument("--out", default="runs")
    s = sub.add_parser("shrink", help="the smallest replay of a finding that still "
                       "reproduces it", epilog=EXAMPLES["shrink"], formatter_class=fmt)
    s.add_argument("run_dir", type=Path)
    s.add_argument("--runs", type=int, default=3, metavar="N",
                   help="runs per step (default 3)")
    s.add_argument("--needed", type=int, default=1, metavar="K",
                   help="a step is kept when K of its N runs reproduce (default 1)")
    s.add_argument("--budget", default="2h", help="how long to shrink (default 2h)")
    s.add_argument("--max-runs", type=int, metavar="M", help="stop after M runs in all")
    s.add_argument("--out", default="runs")


def _fail(e: Exception) -> int:
    print(f"kafka-chaos: error: {e}", file=sys.stderr)
    return 2


def cmd_explore(args: argparse.Namespace) -> int:
    from runner.explore.search import explore
    from runner.explore.space import Space, draw

    try:
        budget = budget_seconds(args.budget)
        if args.runs is not None and args.runs < 1:
            raise RunConfigError(f"--runs must be >= 1, got {args.runs}")
        if args.kafka_versions is None:
            from compose.image import built_versions

            versions = tuple(built_versions()) or (DEFAULT_KAFKA_VERSION,)
        else:
            versions = tuple(v.strip() for v in args.kafka_versions.split(",") if v.strip())
        clients = tuple(c.strip() for c in args.clients.split(",") if c.strip())
        for c in clients:
            try:
                parse_client(c)
            except ClientSpecError as e:
                raise RunConfigError(f"--clients: {e}") from None
        if not versions or not clients:
            raise RunConfigError("--kafka-versions and --clients need at least one value")
        space = Space(versions, clients, args.run_duration, fixed_options(args.fix))
        draw(args.seed, 0, space)  # the space can run at all (validated like a run)
    except RunConfigError as e:
        return _fail(e)
    folder = Path(args.out) / "explore" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    try:
        done = explore(folder, args.seed, budget, space, args.runs)
    except RunConfigError as e:  # a draw the run refused (its client could not be built)
        return _fail(e)
    return 1 if done.findings else 0


def cmd_replay(args: argparse.Namespace) -> int:
    from runner.explore.replay import replay

    if args.repeat < 1:
        return _fail(RunConfigError(f"--repeat must be >= 1, got {args.repeat}"))
    try:
        return replay(args.run_dir, args.repeat, args.out)
    except (RunConfigError, OSError) as e:
        return _fail(e)


def cmd_shrink(args: argparse.Namespace) -> int:
    from runner.explore.shrink import Budget, shrink

    try:
        if args.runs < 1 or not 1 <= args.needed <= args.runs:
            raise RunConfigError(f"--needed must be 1..--runs ({args.runs}), got "
                                 f"{args.needed}")
        if args.max_runs is not None and args.max_runs < 1:
            raise RunConfigError(f"--max-runs must be >= 1, got {args.max_runs}")
        budget = Budget(budget_seconds(args.budget), args.max_runs)
        return shrink(args.run_dir, args.out, args.runs, args.needed, budget)
    except (RunConfigError, OSError) as e:
        return _fail(e)
