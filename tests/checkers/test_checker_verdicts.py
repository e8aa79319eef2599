"""The guarantee model, the verdict, attribution, and the run-directory edge cases."""

from __future__ import annotations

import json
import os

import pytest

from checkers import check_run
from checkers.guarantees import rules
from contract.anomalies import ANOMALY_KINDS
from contract.exit_codes import exit_code_of_results as exit_code
from contract.settings import settings_from_run
from tests.support.literal import History


def _cfg(**sections: dict) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in sections.items()}


@pytest.mark.parametrize(("producer", "topic", "allowed"), [
    ({"acks": "all"}, {"min.insync.replicas": 2}, False),
    ({"acks": "1"}, {"min.insync.replicas": 2}, True),
    ({"acks": "0"}, {"min.insync.replicas": 2}, True),
    # min.insync.replicas=1 alone allows nothing (issue 44): only the lone in-sync
    # leader's own power loss loses a record, which is the per-record proof
    ({"acks": -1}, {"min.insync.replicas": 1}, False),
    ({}, {}, False),  # broker default min.insync.replicas=1
    ({"acks": "all"}, {"min.insync.replicas": 2, "unclean.leader.election.enable": "true"},
     True),
])
def test_lost_rule(producer: dict, topic: dict, allowed: bool) -> None:  # type: ignore[type-arg]
    s = settings_from_run(_cfg(producer_config=producer, topic_config=topic))
    r = rules(s)["lost"]
    assert r.allowed is allowed
    assert r.why.startswith("allowed" if allowed else "forbidden")


def test_topic_config_overrides_broker_config() -> None:
    s = settings_from_run(_cfg(broker_config={"min.insync.replicas": 1},
                               topic_config={"min.insync.replicas": 3}))
    assert s.min_insync == 3


def test_idempotence_rules() -> None:
    off = settings_from_run({})
    assert rules(off)["duplicate"].allowed and rules(off)["reorder"].allowed
    on = settings_from_run(_cfg(producer_config={"enable.idempotence": "true"}))
    assert not rules(on)["duplicate"].allowed and not rules(on)["reorder"].allowed
    txn = settings_from_run(_cfg(producer_config={"transactional.id": "x"}))
    assert txn.idempotence and not rules(txn)["duplicate"].allowed


def test_never_allowed_kinds() -> None:
    lax = settings_from_run(_cfg(producer_config={"acks": "1"}))
    for kind in ("inconsistent-offset", "offset-mismatch", "failed-visible", "unexpected",
                 "aborted-read", "divergence", "poll-skip", "nonmonotonic-poll"):
        assert not rules(lax)[kind].allowed, kind


@pytest.mark.spark
def test_allowed_anomalies_leave_valid_true(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    h.run["producer_config"] = {"acks": "1", "enable.idempotence": False}
    for s in range(4):
        h.write(0, s, offset=s)
    h.drain(0, 0, 0, 0).drain(0, 1, 0, 1).drain(0, 2, 0, 1)  # seq 1 duplicated
    h.run["consumer_config"] = {"group.id": "g"}
    for off in (0, 2, 0):
        h.read("c1", 0, off, 0, off if off != 2 else 1, mode="subscribe")
    # one rebalance at poll 1: both steps (polls 0 -> 1 and 1 -> 2) crossed it; c2 of its
    # group read offset 1, which c1's skip 0 -> 2 passed over (else it is not excused)
    h.read("c2", 0, 1, 0, 1, mode="subscribe")
    h.event("rebalance", at_ms=1001, reader="c1", what="revoked", poll=1, partitions=["t:0"])
    h.drain_end()
    r = check(h)
    a = r["anomalies"]
    assert a["lost"]["count"] == 2 and a["lost"]["allowed"]  # seq 2 and 3
    assert a["duplicate"]["count"] == 1 and a["duplicate"]["allowed"]
    assert a["poll-skip"]["count"] == 1 and a["poll-skip"]["allowed"]
    assert a["nonmonotonic-poll"]["count"] == 1 and a["nonmonotonic-poll"]["allowed"]
    assert r["valid"] is True and exit_code(r) == 0
    assert r["guarantees"]["lost"].startswith("allowed: acks=1")


@pytest.mark.spark
def test_power_loss_of_whole_isr_excuses_loss_and_attribution(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    # (no "divergence ==0": this history has no replicas' logs, so divergence is not checked)
    h.run["expect"] = {"valid": True, "anomalies": {"lost": ">0"}}
    h.run["mechanism"] = [{"kind": "fault", "fault": "power-loss"},
                          {"kind": "isr-shrunk-to", "size": 1},
                          {"kind": "leader-changed"}]
    h.event("phase", "start", 0, name="workload")
    h.observe(0, 0, leader=1, isr=[1, 2, 3], epoch=5)
    h.event("pause", "start", 5, targets=[2, 3])
    h.observe(8, 0, leader=1, isr=[1], epoch=5)
    for s in range(6):
        h.write(0, s, offset=s, at_ms=10 + s)
    # node 1 lost everything from offset 4 on (its recovery point)
    h.event("power-loss", "instant", 30, targets=[1], lost={
        "1": {"t-0": {"recovery_point": 4, "removed_batches": 2, "removed_bytes": 200}}})
    h.event("pause", "end", 35, targets=[2, 3])
    h.observe(40, 0, leader=2, isr=[2, 3], epoch=6)
    h.write(0, 6, offset=4, at_ms=50)  # after the power loss: must survive
    for s in range(4):
        h.drain(0, s, 0, s)
    h.drain(0, 4, 0, 6)
    h.event("phase", "end", 60, name="workload")
    h.drain_end()
    r = check(h)
    lost = r["anomalies"]["lost"]
    # acknowledged while the ISR was replica 1 alone, which lost power and them (at or above
    # its recovery point): the per-record proof excuses them, no design limitation is named
    assert lost["count"] == 2 and lost["excused"] == 2 and lost["allowed"]
    assert lost["known_bugs"] == {} and "known_bug" not in lost["examples"][0]
    assert lost["examples"][0]["excuse"] == "power-loss"
    assert r["valid"] is True
    ex = lost["examples"][0]
    assert (ex["seq"], ex["acked_offset"]) == (4, 4)
    at_ack = {f["kind"]: f for f in ex["faults_at_ack"]}
    assert at_ack["pause"]["start_ns"] < ex["complete_ns"] < at_ack["pause"]["end_ns"]
    assert at_ack["power-loss"]["seconds_from_moment"] > 0  # an instant event soon after
    assert ex["missing_ns"] is not None
    assert any(c["leader"] == 2 and c["prev_leader"] == 1 for c in ex["partition_changes"])
    assert ex["partition_state"]["isr"] == [1]
    assert r["expectations"]["met"] is True
    assert r["mechanism"]["observed"] is True
    # one record acked before the power loss but on a partition whose ISR survived: not excused
    assert r["stats"]["power_loss_covered_partitions"] == ["t:0"]
    ts = r["timeseries"]
    assert ts["points"] and sum(p["ok"] for p in ts["points"]) == 7
    assert r["stats"]["duration_s"] == pytest.approx(0.06)


@pytest.mark.spark
def test_no_drain_end_and_unobserved_mechanism_are_unknown(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    h.run["mechanism"] = [{"kind": "offline"}]
    h.write(0, 0, offset=0).write(0, 1, offset=1)
    h.drain(0, 0, 0, 0)
    r = check(h)
    assert r["valid"] == "unknown" and exit_code(r) == 2
    assert r["anomalies"]["unseen"]["count"] == 1 and r["anomalies"]["lost"]["count"] == 0
    assert r["mechanism"]["observed"] is False
    assert len(r["unknown_reasons"]) == 3


@pytest.mark.spark
def test_drain_end_offsets_decide_per_partition(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    for p in (0, 1):
        h.write(p, 0, partition=p, offset=0).write(p, 1, partition=p, offset=1)
        h.drain(p, 0, p, 0)
    h.drain(1, 1, 1, 1)
    # partition 0: the drain reached offset 0 of end 2 (incomplete); partition 1: done
    h.drain_end(complete=False, end_offsets={"t:0": 2, "t:1": 2})
    r = check(h)
    assert r["anomalies"]["unseen"]["count"] == 1 and r["anomalies"]["lost"]["count"] == 0
    assert r["stats"]["drain"]["complete_partitions"] == ["t:1"]
    assert r["valid"] == "unknown"


@pytest.mark.spark
def test_checker_error_writes_unknown_results(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = History().save(tmp_path / "bad")
    with open(os.path.join(path, "run.json"), "w") as fh:
        fh.write("{ not json")
    r = check_run(path)
    assert r["valid"] == "unknown" and "error" in r and exit_code(r) == 2
    with open(os.path.join(path, "results.json")) as fh:
        saved = json.load(fh)
    assert saved["error"] == r["error"] and len(saved["anomalies"]) == len(ANOMALY_KINDS)


@pytest.mark.spark
def test_empty_run_directory_and_file_uri(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    os.makedirs(tmp_path / "empty" / "history" / "writes.parquet")
    r = check_run(f"file://{tmp_path / 'empty'}")
    assert "error" not in r, r.get("traceback")
    assert r["stats"]["writes"] == {"ok": 0, "fail": 0, "info": 0}
    assert r["valid"] == "unknown"  # no run.json, no drain
    assert os.path.exists(tmp_path / "empty" / "results.json")


def test_cli_module_help() -> None:
    from checkers.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


@pytest.mark.spark
def test_cli_module_on_a_valid_run(spark, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from checkers.__main__ import main

    h = History()
    h.write(0, 0, offset=0).write(0, 1, outcome="fail", error="NOT_ENOUGH_REPLICAS")
    h.drain(0, 0, 0, 0).drain_end()
    assert main([h.save(tmp_path / "run")]) == 0
    assert capsys.readouterr().out.startswith("valid: True")


@pytest.mark.spark
def test_epoch_rise_seen_across_samples_without_an_epoch(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    h.run["mechanism"] = [{"kind": "leader-epoch-increased"}]
    h.write(0, 0, offset=0)
    h.drain(0, 0, 0, 0)
    h.drain_end(complete=True, end_offsets={"t:0": 1})
    # The observer learns the epoch only on some samples: 0, unknown, 1.
    h.observe(0, 0, 1, [1, 2, 3], epoch=0)
    h.observe(250, 0, 2, [2, 3], epoch=None)
    h.observe(500, 0, 2, [2, 3], epoch=1)
    r = check(h)
    assert r["mechanism"]["observed"] is True, r["mechanism"]
    assert "epoch 0 -> 1" in r["mechanism"]["details"][0]["evidence"]


@pytest.mark.spark
def test_a_run_without_acknowledged_writes_is_unknown(check) -> None:  # type: ignore[no-untyped-def]
    h = History()
    h.write(0, 0, outcome="info", offset=None).write(0, 1, outcome="fail", offset=None)
    h.drain_end(complete=True, end_offsets={"t:0": 0})
    r = check(h)
    assert r["valid"] == "unknown" and exit_code(r) == 2
    assert any("no write was acknowledged" in x for x in r["unknown_reasons"])
