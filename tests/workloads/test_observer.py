"""The observer records leadership changes when a leader dies, and never hangs."""

from __future__ import annotations

from pathlib import Path

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.cluster import KafkaCluster
from tests.workloads.conftest import read_table
from tests.workloads.helpers import rows
from workloads import Observer

pytestmark = pytest.mark.cluster


def test_leader_kill_is_observed(cluster: KafkaCluster, topic: str, tmp_path: Path) -> None:
    old = cluster.describe(topic)[0].leader
    obs = Observer(tmp_path, cluster.bootstrap_servers, [topic], interval_s=0.25).start()
    try:
        for attempt in Retrying(stop=stop_after_delay(20), wait=wait_fixed(0.2), reraise=True):
            with attempt:
                assert obs.samples >= 3
        cluster.node(old).kill()
        try:
            for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.5),
                                    reraise=True):
                with attempt:
                    new = cluster.describe(topic)[0].leader
                    assert new not in (old, -1)
            # Samples go on while the broker is dead.
            n = obs.samples
            for attempt in Retrying(stop=stop_after_delay(20), wait=wait_fixed(0.2),
                                    reraise=True):
                with attempt:
                    assert obs.samples >= n + 3
        finally:
            cluster.node(old).start()
            cluster.wait_brokers(cluster.cfg.broker_ids, timeout_s=120)
            cluster.wait_partitions(topic, timeout_s=120)
        # The observer samples on its own clock (and may ask a broker whose metadata lags
        # by a moment): let it take a few samples after the full ISR is back.
        n = obs.samples
        for attempt in Retrying(stop=stop_after_delay(20), wait=wait_fixed(0.2), reraise=True):
            with attempt:
                assert obs.samples >= n + 8
    finally:
        obs.stop()

    obs_rows = [r for r in rows(read_table(tmp_path, "observations")) if r["partition"] == 0]
    assert {r["topic"] for r in obs_rows} == {topic}
    leaders = [r["leader"] for r in obs_rows]
    assert leaders[0] == old
    assert any(ld not in (old, -1) for ld in leaders), leaders
    # The dead broker left the ISR, and the full ISR came back after the restart.
    shrunk = [i for i, r in enumerate(obs_rows) if old not in r["isr"]]
    assert shrunk
    assert any(set(r["isr"]) == set(r["replicas"]) == {1, 2, 3}
               for r in obs_rows[shrunk[-1] + 1:]), "full ISR not observed after the restart"
    epochs = [r["leader_epoch"] for r in obs_rows if r["leader_epoch"] is not None]
    assert epochs and max(epochs) > epochs[0], "leader epoch did not increase"
    assert any(r["high_watermark"] is not None for r in obs_rows)
    assert all(r["log_end_offsets"] is None for r in obs_rows)
