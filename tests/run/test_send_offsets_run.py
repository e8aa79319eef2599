"""Run option send_offsets on a real cluster: each transactional producer names its own
consumer group in run.json and sends that group's offsets in its transactions (the
workload's end event counts the calls that returned). The scenarios that kill the group's
coordinator (scenarios/offsets_coordinator.py) run in the nightly; this is the workload
alone, short."""

from __future__ import annotations

import json

import pytest

from runner.config import RunConfig
from runner.orchestrator import run

pytestmark = pytest.mark.cluster


def test_each_transactional_producer_sends_its_own_groups_offsets(tmp_path, docker_client):
    cfg = RunConfig(scenario="send-offsets", out=str(tmp_path), duration=15, faults=[],
                    transactions=True, send_offsets=True, producers=2, consumers=1,
                    rate=50, liveness=0, check=False, report=False)
    out = run(cfg, None, progress=print)
    assert out.completed and out.error is None, out.error
    doc = json.loads((out.run_dir / "run.json").read_text())
    groups = doc["workload"]["transactions"]["offsets_groups"]
    assert groups == {"p0": groups["p0"], "p1": groups["p1"]}
    assert groups["p0"].startswith("kc-txn-0-offsets-") and \
        groups["p1"].startswith("kc-txn-1-offsets-")
    events = [json.loads(line) for line in
              (out.run_dir / "history" / "events.jsonl").read_text().splitlines()]
    end = next(e for e in events if e["kind"] == "phase" and e["phase"] == "end"
               and e["detail"].get("name") == "workload")
    sent = {p: st.get("offsets_sent") for p, st in end["detail"]["producers"].items()}
    assert all(n and n > 0 for n in sent.values()) and set(sent) == {"p0", "p1"}, sent
