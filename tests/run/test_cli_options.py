"""How ``kafka-chaos run`` turns options into RunConfig fields (no cluster, no Docker)."""

from __future__ import annotations

from dataclasses import fields

from runner.cli import SPECIAL_FIELDS, build_parser, run_overrides
from runner.config import RunConfig


def test_every_plain_run_option_reaches_its_runconfig_field() -> None:
    args = build_parser().parse_args([
        "run", "--brokers", "5", "--controllers", "3", "--min-insync", "3", "--acks", "1",
        "--no-idempotence", "--consumer-mode", "subscribe", "--record-size", "64",
        "--out", "x", "--no-report", "--faults", "kill,voter-partition", "--targets",
        "leader, follower", "--broker-config", "a.b=1", "--spark-master", "local[1]",
    ])
    got = run_overrides(args, {"duration": 9, "broker-config": {"c": "2"}})
    assert got == {
        "brokers": 5, "controllers": 3, "min_insync": 3, "acks": "1", "idempotence": False,
        "consumer_mode": "subscribe", "record_size": 64, "out": "x", "report": False,
        "duration": 9, "faults": ["kill", "voter-partition"], "targets": ["leader", "follower"],
        "broker_config": {"c": "2", "a.b": "1"}, "spark_master": "local[1]",
    }
    RunConfig().replace(**got).validate()


def test_the_parser_has_an_option_for_every_plain_runconfig_field() -> None:
    # The dataclass is the one list of fields: a new field needs only its option here.
    dests = {a.dest for a in build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
             .choices["run"]._actions}
    internal = {"fast_faults", "drain_timeout", "collect_data"}  # set by scenarios and tests
    plain = {f.name for f in fields(RunConfig)} - SPECIAL_FIELDS - internal
    assert plain <= dests, sorted(plain - dests)
