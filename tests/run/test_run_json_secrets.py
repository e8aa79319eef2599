"""run.json is an artifact others read (the nightly workflow uploads it): secret-looking
client and broker properties are written redacted, at any depth (issue 47). Before: written
as given."""

from __future__ import annotations

import json

from runner.rundir import REDACTED, save_run_json


def test_secret_properties_are_redacted_and_the_rest_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    doc = {
        "producer_config": {"sasl.jaas.config": "org.apache...PlainLoginModule password=hunter2",
                            "ssl.key.password": "hunter2", "ssl.key.pem": "-----BEGIN KEY",
                            "ssl.key.location": "/etc/kafka/client.key", "acks": "all",
                            "enable.idempotence": "true"},
        "workload": {"consumers": [{"consumer_config": {"sasl.password": "hunter2",
                                                        "isolation.level": "read_committed"}}]},
        "producer_configs": {"0": {"sasl.oauthbearer.client.secret": "hunter2"}},
    }
    save_run_json(tmp_path, doc)
    text = (tmp_path / "run.json").read_text()
    assert "hunter2" not in text and "BEGIN KEY" not in text
    got = json.loads(text)
    pc = got["producer_config"]
    assert pc["sasl.jaas.config"] == pc["ssl.key.password"] == pc["ssl.key.pem"] == REDACTED
    # what the checker reads, and paths, stay as they were
    assert (pc["acks"], pc["enable.idempotence"], pc["ssl.key.location"]) == (
        "all", "true", "/etc/kafka/client.key")
    consumer = got["workload"]["consumers"][0]["consumer_config"]
    assert consumer == {"sasl.password": REDACTED, "isolation.level": "read_committed"}
    assert got["producer_configs"]["0"]["sasl.oauthbearer.client.secret"] == REDACTED
