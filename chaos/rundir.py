"""The run directory: where it goes, ``runs/latest``, and run.json (DESIGN.md §3)."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from chaos.config import RunConfig


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


def versions(kafka_version: str) -> dict[str, Any]:
    import confluent_kafka

    return {
        "kafka": kafka_version,
        "confluent_kafka": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "spark": _version("pyspark"),
        "kafka_chaos": _version("kafka-chaos"),
        "python": platform.python_version(),
    }


def write_run_json(run_dir: Path, cfg: RunConfig, *, image: str, kafka_version: str,
                   broker_config: dict[str, str], producer_config: dict[str, str],
                   consumer_config: dict[str, str], workload: dict[str, Any],
                   expect: dict[str, Any] | None, mechanism: list[dict[str, Any]] | None,
                   scenario_doc: str | None = None) -> dict[str, Any]:
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
        "versions": versions(kafka_version),
    }
    if scenario_doc:
        doc["scenario_doc"] = scenario_doc
    if expect:
        doc["expect"] = expect
    if mechanism:
        doc["mechanism"] = mechanism
    if cfg.accept_known:
        doc["accept_known"] = list(cfg.accept_known)  # read by the checker's verdict
    tmp = run_dir / ".run.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2, default=str))
    os.replace(tmp, run_dir / "run.json")
    return doc


def kafka_version_of(image: str, requested: str | None) -> str:
    """The Kafka version a run uses: asked for, or read from the image tag."""
    if requested:
        return requested
    tag = image.rsplit(":", 1)[-1] if ":" in image else ""
    return tag.split("-", 1)[0] or "unknown"
