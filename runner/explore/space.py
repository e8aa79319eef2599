"""The configuration space ``kafka-chaos explore`` draws from, and one seeded draw.

A draw is a dict of run options (RunConfig fields). Each dimension is drawn from the run's own
random generator, so a seed and a draw number give the same configuration on every machine;
``fixed`` options are not drawn (``--fix brokers=3``). Combinations a client or Kafka cannot
run are drawn again (bounded), never silently changed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contract.clients import CONFLUENT_KAFKA
from contract.faults import RANDOM_FAULT_KINDS
from contract.known_bugs import KNOWN_BUGS, version_tuple
from runner.config import RunConfig, RunConfigError

#: Targets the random nemesis may aim at (nemesis.faults.targets).
TARGETS = ("random", "leader", "follower", "controller", "followers", "minority")
#: How many times a draw that cannot run is drawn again.
TRIES = 50


@dataclass(frozen=True)
class Space:
    """What is drawn from: the Kafka versions and clients to use, the workload's length."""

    kafka_versions: tuple[str, ...]
    clients: tuple[str, ...] = (CONFLUENT_KAFKA,)
    duration: float = 60.0
    fixed: tuple[tuple[str, Any], ...] = ()


def _draw_once(rng: random.Random, space: Space) -> dict[str, Any]:
    version = rng.choice(space.kafka_versions)
    brokers = rng.choice([3, 3, 4, 5])
    rf = rng.choice([r for r in (2, 3) if r <= brokers])
    acks = rng.choice(["all", "all", "1", "0"])
    transactions = acks == "all" and rng.random() < 0.2
    kinds = rng.sample(list(k for k in RANDOM_FAULT_KINDS if k != "voter-partition"),
                       rng.randint(1, 3))
    # at most six JVMs: a 2-core machine runs them without stalling its controllers
    controllers = rng.choice([0, 0, 1, 3] if brokers == 3 else [0, 0, 1])
    if controllers >= 3 and rng.random() < 0.5:
        kinds.append("voter-partition")
    draw: dict[str, Any] = {
        "kafka_version": version,
        "brokers": brokers,
        "controllers": controllers,
        "partitions": rng.randint(1, 6),
        "replication_factor": rf,
        "min_insync": rng.randint(1, rf),
        "unclean": rng.random() < 0.2,
        "acks": acks,
        "idempotence": None if acks == "all" and not transactions else
        (True if transactions else rng.choice([None, False])),
        "transactions": transactions,
        "producers": rng.randint(1, 3),
        "consumers": 1,
        "consumer_mode": rng.choice(["assign", "assign", "subscribe", "restart"]),
        "isolation_level": "read_committed" if transactions else rng.choice(
            ["read_committed", "read_uncommitted"]),
        "group_protocol": ("classic" if version_tuple(version)[:1] < (4,)
                           else rng.choice(["classic", "consumer"])),
        "rate": float(rng.choice([50, 100, 200, 500])),
        "duration": space.duration,
        "faults": kinds,
        "fault_interval": float(rng.choice([4, 6, 10, 15])),
        "targets": rng.sample(list(TARGETS), rng.randint(1, 3)),
        "seed": rng.randrange(2**31),
        "client": rng.choice(space.clients),
        # a known bug's own records never make a finding: they are named, counted, accepted
        "accept_known": [b.id for b in KNOWN_BUGS],
    }
    return {**draw, **dict(space.fixed)}


def draw(seed: int, index: int, space: Space) -> dict[str, Any]:
    """Draw number ``index`` (0, 1, …) of the explore seeded ``seed``: run options a run
    accepts (RunConfig.validate), or RunConfigError when none was found in TRIES tries
    (the fixed options rule every draw out)."""
    rng = random.Random(f"{seed}/{index}")
    last = ""
    for _ in range(TRIES):
        opts = _draw_once(rng, space)
        try:
            RunConfig(scenario="explore", **opts).validate()
        except RunConfigError as e:
            last = str(e)
            continue
        return opts
    raise RunConfigError(f"no run of the space can run with the fixed options: {last}")


def covered(draws: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Per dimension, the values the draws covered (the explore's summary)."""
    dims = ("kafka_version", "client", "acks", "min_insync", "unclean", "idempotence",
            "transactions", "consumer_mode", "group_protocol", "brokers", "controllers",
            "partitions", "faults")
    out: dict[str, list[str]] = {}
    for d in dims:
        seen: set[str] = set()
        for opts in draws:
            value = opts.get(d)
            for v in value if isinstance(value, list) else [value]:
                seen.add(str(v))
        out[d] = sorted(seen)
    return out
