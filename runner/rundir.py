"""The run directory: where it goes, ``runs/latest``, and run.json (DESIGN.md §3)."""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from contract.atomic_files import write_atomic
from runner.config import RunConfig
from workloads.client_info import client_versions
from workloads.drivers import LibrdkafkaDriver


def new_run_dir(out: str | Path, scenario: str) -> Path:
    """``<out>/<scenario>/<UTC timestamp>/`` (unique), with ``<out>/latest`` pointing at it."""
    root = Path(out)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run = root / scenario / stamp
    n = 1
    while run.exists():
        n += 1
        run = root / scenario / f"{stamp}-{n}"
    (run / "history").mkdir(parents=True)
    (run / "logs").mkdir()
    latest = root / "latest"
    tmp = root / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run.relative_to(root))
    os.replace(tmp, latest)
    return run


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions(kafka_version: str, client: dict[str, Any] | None = None) -> dict[str, Any]:
    """run.json's ``versions``. ``client`` is the workload driver's part
    (workloads.drivers.ClientDriver.versions: ``client``, ``client_version``, and for
    confluent-kafka its ``confluent_kafka``/``librdkafka``; None: this interpreter's
    confluent-kafka), replaced by what the processes themselves report when they stop
    (:func:`record_client_versions`). The observer and the drain run in the orchestrator's
    process: ``orchestrator_*``."""
    own = client_versions()
    own_ck, own_rd = own["confluent_kafka"], own["librdkafka"]
    workload = client if client is not None else LibrdkafkaDriver().versions()
    return {
        "kafka": kafka_version,
        **workload,
        "client_reported_by": [],
        "orchestrator_confluent_kafka": own_ck,
        "orchestrator_librdkafka": own_rd,
        "spark": _version("pyspark"),
        "kafka_chaos": _version("kafka-chaos"),
        "python": platform.python_version(),
    }


def write_run_json(run_dir: Path, cfg: RunConfig, *, image: str, kafka_version: str,
                   broker_config: dict[str, str], producer_config: dict[str, str],
                   consumer_config: dict[str, str], workload: dict[str, Any],
                   expect: dict[str, Any] | None, mechanism: list[dict[str, Any]] | None,
                   scenario_doc: str | None = None,
                   client: dict[str, Any] | None = None) -> dict[str, Any]:
    """Writes run.json (atomically) and returns it."""
    doc: dict[str, Any] = {
        "scenario": cfg.scenario,
        "run_id": run_dir.name,
        "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seed": cfg.seed,
        "cluster": {
            "brokers": cfg.brokers,
            "controllers": "combined" if cfg.controllers == 0 else cfg.controllers,
            "kafka_version": kafka_version,
            "image": image,
        },
        "workload": workload,
        "faults": {"kinds": list(cfg.faults), "interval_s": cfg.fault_interval,
                   "targets": list(cfg.targets),
                   "schedule": "scripted" if scenario_doc else "random"},
        "broker_config": broker_config,
        "topic_config": {"replication.factor": str(cfg.replication_factor),
                         **cfg.effective_topic_config()},
        "producer_config": producer_config,
        "consumer_config": consumer_config,
        "options": asdict(cfg),
        "versions": versions(kafka_version, client),
    }
    if scenario_doc:
        doc["scenario_doc"] = scenario_doc
    if expect:
        doc["expect"] = expect
    if mechanism:
        doc["mechanism"] = mechanism
    if cfg.accept_known:
        doc["accept_known"] = list(cfg.accept_known)  # read by the checker's verdict
    save_run_json(run_dir, doc)
    return doc


#: Kafka and librdkafka properties whose values are secrets (passwords, keys, JAAS lines,
#: tokens): run.json is an artifact others read (the nightly workflow uploads it).
SECRET_KEY = re.compile(r"password|secret|jaas|token|credential|\.pem$|\.key$|keystore\.key",
                        re.IGNORECASE)
REDACTED = "[redacted]"


def redact(value: Any) -> Any:
    """``value`` with the value of every secret-looking key, at any depth, replaced."""
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and SECRET_KEY.search(k) and v is not None
                else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def save_run_json(run_dir: Path, doc: dict[str, Any]) -> None:
    """Writes ``doc`` as ``run_dir/run.json``, atomically (a temporary file, then renamed),
    with secret-looking client and broker properties redacted. The one writer of the
    file: a run's :func:`write_run_json` and :func:`record_client_versions`, and a test
    body's session (``chaos.user_api``)."""
    write_atomic(run_dir / "run.json", json.dumps(redact(doc), indent=2, default=str))


def record_client_versions(run_dir: Path, stats: dict[str, dict[str, Any]]) -> None:
    """Puts the client versions the workload processes reported (their stats' ``client``)
    into run.json's ``versions``: what they loaded, not what the orchestrator expected.
    Processes that disagree (never expected) show every version, comma-separated."""
    reports = {name: st["client"] for name, st in stats.items()
               if isinstance(st.get("client"), dict)}
    path = run_dir / "run.json"
    if not reports or not path.exists():
        return
    doc = json.loads(path.read_text())
    v = doc.setdefault("versions", {})
    by = sorted({*v.get("client_reported_by", []), *reports})
    keys = sorted({k for r in reports.values() for k in r if k != "python"})
    for key in keys:  # client_version, and confluent_kafka/librdkafka for that client
        seen = sorted({str(r.get(key)) for r in reports.values()})
        if v.get("client_reported_by") and v.get(key) is not None:  # earlier reports count
            seen = sorted({*seen, *str(v.get(key)).split(",")})
        v[key] = ",".join(seen)
    v["client_reported_by"] = by
    save_run_json(run_dir, doc)


def kafka_version_of(image: str, requested: str | None) -> str:
    """The Kafka version a run uses: asked for, or read from the image tag."""
    if requested:
        return requested
    tag = image.rsplit(":", 1)[-1] if ":" in image else ""
    return tag.split("-", 1)[0] or "unknown"
