"""The contract package: light to import, one definition of each table, and the grammar."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contract.anomalies import ANOMALY_KINDS, DEFINITIONS, MEANINGS, REPORT_ORDER, UNITS
from contract.conditions import ConditionError, holds, normalise_condition
from contract.exit_codes import exit_code_of_results, exit_code_of_valid, missed_expectations
from contract.faults import (
    CLOSERS,
    EXISTING_CLUSTER_FAULTS,
    FAULT_KINDS,
    FAULTS,
    RANDOM_FAULT_KINDS,
    fault_css,
    fault_css_rules,
)
from contract.settings import (
    ProducerSettingsError,
    normalise_acks,
    producer_settings,
    settings_from_run,
)
from workloads.config import ProducerConfig, WorkloadConfigError


def test_importing_the_contract_loads_nothing_heavy() -> None:
    code = ("import sys, contract, contract.schemas, contract.events, contract.faults, "
            "contract.windows, contract.anomalies, contract.conditions, contract.settings, "
            "contract.exit_codes, contract.results, contract.known_bugs, contract.owners, "
            "contract.mechanisms\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('pyspark', 'docker', 'confluent_kafka', 'testcontainers', 'jinja2')]\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_every_anomaly_kind_has_a_definition_unit_meaning_and_place() -> None:
    assert "reused-offset" in ANOMALY_KINDS and ANOMALY_KINDS[-1] == "divergence"
    assert set(REPORT_ORDER) == set(ANOMALY_KINDS) and len(REPORT_ORDER) == len(ANOMALY_KINDS)
    for table in (DEFINITIONS, UNITS, MEANINGS):
        assert set(table) == set(ANOMALY_KINDS) and all(table.values())


def test_fault_registry_closers_and_css() -> None:
    assert FAULT_KINDS == ("kill", "stop", "pause", "partition", "slow", "hold", "power-loss",
                           "cpu-throttle", "voter-partition", "poll-stall", "consumer-down")
    # poll-stall and consumer-down aim at the run's consumers, never drawn at random; they
    # touch no node
    for kind in ("poll-stall", "consumer-down"):
        assert kind not in RANDOM_FAULT_KINDS and kind in EXISTING_CLUSTER_FAULTS
    # hold is scripted only (stale-txn-requests); the random nemesis never draws it
    assert "hold" not in RANDOM_FAULT_KINDS and FAULTS["hold"].params == ("hold_s",)
    assert CLOSERS == {"start": ("kill", "stop", "power-loss"), "resume": ("pause",),
                       "heal": ("partition", "slow", "voter-partition")}
    assert FAULTS["slow"].params == ("delay_ms", "jitter_ms", "loss", "rate_kbit")
    assert fault_css("power-loss") == "f-power" and fault_css("disk-full") == "f-other"
    rules = fault_css_rules()
    assert rules.count("svg .f-kill rect") == 1  # kill and stop share a class: one rule
    assert all(f"svg .{f.css} rect" in rules for f in FAULTS.values())


@pytest.mark.parametrize(("cond", "norm", "actual", "met"), [
    (0, "==0", 0, True), ("0", "==0", 1, False), (">0", ">0", 3, True), (" <= 5 ", "<=5", 6, False),
    ("!=2", "!=2", 2, False), (">=1", ">=1", 1, True), ("<1", "<1", 0, True),
])
def test_condition_grammar(cond: object, norm: str, actual: int, met: bool) -> None:
    assert normalise_condition(cond) == norm
    assert holds(cond, actual) is met


@pytest.mark.parametrize("bad", [True, 1.5, "> zero", "=>1", "-1", "", None, "==1 ==2"])
def test_condition_grammar_refuses(bad: object) -> None:
    with pytest.raises(ConditionError):
        normalise_condition(bad)


def test_exit_codes() -> None:
    assert [exit_code_of_valid(v) for v in (True, False, "unknown", None)] == [0, 1, 2, 2]
    assert exit_code_of_results(None) == 2 and exit_code_of_results({"valid": False}) == 1
    # a valid run that missed a stated expectation exits 1 (it exited 0 before issue 44)
    missed = {"valid": True, "expectations": {"met": False, "details": [
        {"what": "lost >0", "actual": 0, "met": False}, {"what": "valid == True",
                                                          "actual": True, "met": True}]}}
    assert exit_code_of_results(missed) == 1
    assert missed_expectations(missed) == ["lost >0 (got 0)"]
    met = {"valid": True, "expectations": {"met": True, "details": []}}
    assert exit_code_of_results(met) == 0 and missed_expectations(met) == []
    assert exit_code_of_results({**missed, "valid": "unknown"}) == 2


def test_settings_defaults_and_transactions() -> None:
    s = settings_from_run({})
    assert (s.acks, s.min_insync, s.unclean, s.idempotence, s.transactional) == (
        "all", 1, False, False, False)
    t = settings_from_run({"producer_config": {"transactional.id": "t", "acks": "-1"},
                           "workload": {"transactions": {"enabled": False}}})
    assert t.transactional and t.idempotence and t.acks == "all"


def test_acks_minus_one_is_all_everywhere() -> None:
    from runner.config import RunConfig, RunConfigError

    assert [normalise_acks(v) for v in ("all", "-1", " ALL ", "1", "0", "2", None)] == [
        "all", "all", "all", "1", "0", None, None]
    cfg = RunConfig(acks="-1", transactions=True)
    cfg.validate()  # -1 is acks=all
    assert cfg.acks == "all"  # spelled one way for everything downstream
    with pytest.raises(RunConfigError, match="transactions need acks=all"):
        RunConfig(acks="1", transactions=True).validate()
    with pytest.raises(RunConfigError, match="acks must be 0, 1 or all"):
        RunConfig(acks="2").validate()
    assert ProducerConfig(acks="-1", transactional=True).idempotent  # type: ignore[arg-type]


#: Producer settings refused, with the one line that says why (contract.settings's rules):
#: (acks, idempotence, transactions, producer_config) -> message.
REFUSED = [
    (("2", None, False, {}), "acks must be 0, 1 or all (-1 is all), got '2'"),
    (("all", None, False, {"acks": "two"}), "acks must be 0, 1 or all (-1 is all), got 'two'"),
    (("0", True, False, {}), "enable.idempotence=true needs acks=all, got acks=0"),
    (("1", True, False, {}), "enable.idempotence=true needs acks=all, got acks=1"),
    (("all", None, False, {"acks": "1", "enable.idempotence": "true"}),
     "enable.idempotence=true needs acks=all, got acks=1"),
    (("1", None, True, {}), "transactions need acks=all, got acks=1"),
    (("all", False, True, {}), "transactions need enable.idempotence=true"),
    (("all", None, True, {"enable.idempotence": "false"}),
     "transactions need enable.idempotence=true"),
]


@pytest.mark.parametrize("given,message", REFUSED)
def test_producer_rules_are_one_rule_with_one_message(given, message) -> None:
    from runner.config import RunConfig, RunConfigError

    acks, idempotence, transactions, extra = given
    with pytest.raises(ProducerSettingsError) as rule:
        producer_settings(acks, idempotence, transactions, extra)
    with pytest.raises(RunConfigError) as run:
        RunConfig(acks=acks, idempotence=idempotence, transactions=transactions,
                  producer_config=extra).validate()
    with pytest.raises(WorkloadConfigError) as workload:  # a hand-written workload caller
        ProducerConfig(acks=acks, enable_idempotence=idempotence,
                       transactional=transactions, extra=extra).validate()
    assert str(rule.value) == str(run.value) == str(workload.value) == message


def test_producer_settings_in_force() -> None:
    assert producer_settings("all") == ("all", True)  # idempotence follows acks=all
    assert producer_settings("1") == ("1", False)
    assert producer_settings("-1", False) == ("all", False)
    assert producer_settings("1", None, False, {"acks": "-1"}) == ("all", True)
    assert producer_settings("all", None, False, {"enable.idempotence": "false"}) == (
        "all", False)
    assert producer_settings("all", None, True) == ("all", True)
