"""all-brokers-down (scenarios/liveness.py) on a real cluster: the client host cut from every
broker for 30 s, healed; every client is live again within the bound, on the release that
fixed librdkafka#5088 and on 2.10.0, where this recipe did not reproduce it. Nightly: two
90 s runs, each building a client venv on first use."""

from __future__ import annotations

import pytest

from tests.scenarios.test_operations_scenarios import run_scenario

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
