"""all-brokers-down and brokers-fenced (scenarios/liveness.py) on a real cluster. The client
host cut from every broker for 30 s, healed: every client is live again within the bound, on
the release that fixed librdkafka#5088 and on 2.10.0, where this recipe did not reproduce it.
Every broker cut from the controllers for 75 s, healed:
the controllers did fence every broker, and every client recovered or is named by the open
bug that left it without a broker. Nightly: three runs of 1.5-4 min, each building a client
venv on first use."""

from __future__ import annotations

import pytest

from tests.scenarios.test_operations_scenarios import assert_expected, run_scenario

pytestmark = [pytest.mark.cluster, pytest.mark.nightly]


@pytest.mark.parametrize("client", ["2.10.0", "2.10.1"])
def test_every_client_recovers_after_all_brokers_were_down(client, tmp_path, docker_client):  # type: ignore[no-untyped-def]
    res = run_scenario("all-brokers-down", tmp_path, client_version=client)
    cut = [e for e in res["_events"] if e["kind"] == "partition" and e["phase"] == "start"]
    assert len(cut) == 1 and cut[0]["detail"]["shape"] == "client"
    assert sorted(cut[0]["targets"]) == [1, 2, 3]  # every broker
    assert {(a, b) for a, b in cut[0]["detail"]["cuts"]} >= {("client", "n1"), ("n1", "client")}
    for kind in ("stuck-producer", "stuck-consumer", "hung-call"):
        entry = res["anomalies"][kind]
        assert entry.get("checked") is not False and entry["count"] == 0, (kind, entry)
    assert res["expectations"]["met"], res["expectations"]
    phase = [e for e in res["_events"] if e["kind"] == "phase" and e["phase"] == "end"
             and e["detail"].get("name") == "liveness"]
    assert len(phase) == 1 and phase[0]["detail"]["progressed"], phase
    assert all(phase[0]["detail"]["progressed"].values()), phase  # every client, in the bound


def test_every_broker_fenced_then_healed(tmp_path, docker_client):  # type: ignore[no-untyped-def]
    res = run_scenario("brokers-fenced", tmp_path, client_version="2.16.2")
    assert not [e for e in res["_events"] if e["kind"] == "fault-error"]
    cuts = [e for e in res["_events"] if e["kind"] == "voter-partition" and e["phase"] == "start"]
    assert [c["detail"]["shape"] for c in cuts] == ["brokers-from-controllers"], cuts
    first = {(a, b) for a, b in cuts[0]["detail"]["cuts"]}
    brokers, voters = {"n1", "n2", "n3"}, {"n101", "n102", "n103"}
    assert first == {(b, c) for b in brokers for c in voters} | {
        (c, b) for b in brokers for c in voters}, first  # the client and the quorum untouched
    logs = res["_run_dir"] / "logs"
    fenced = {b for b in (1, 2, 3) for n in (101, 102, 103)
              if f"Fencing broker {b} at epoch" in (logs / f"node-{n}.log").read_text()}
    assert fenced == {1, 2, 3}, fenced  # the cut outlasted the session: all were fenced
    assert_expected(res)
    for kind in ("stuck-producer", "stuck-consumer"):
        entry = res["anomalies"][kind]
        assert entry.get("checked") is not False, (kind, entry)
        assert sum(entry["known_bugs"].values()) == entry["count"], (kind, entry)
