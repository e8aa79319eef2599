"""Chaos in your own code: a run directory around a test body that brings its own clients.

The ``chaos`` pytest fixture is a :class:`ChaosSession` over ``kafka_cluster``; a script opens
one itself::

    with ChaosSession.open(cluster, out="runs/user", name="orders") as chaos:
        producer = chaos.producer({"acks": "all", "enable.idempotence": True})
        with chaos.kill("leader", topic="orders", partition=0):
            producer.produce("orders", b"...")
        producer.flush(30)
        result = chaos.check("orders")       # heal, drain, PySpark checker, HTML report
        assert result.count("lost") == 0

The session is the fault API (:class:`nemesis.cluster_faults.ClusterFaults`) plus what a run's
orchestrator does around the workload: the run directory and its event log, recorded clients
(``workloads.recording``) that write the history, the observer, and at the end heal, drain,
run.json, the checker and the report. Leaving the session (or the fixture's teardown) always
heals, also when the body raised.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka.admin import ConfigResource

from chaos.plugin_result import ChaosResult
from compose.cluster import KafkaCluster
from contract.events import END, START, Event, parse_events
from contract.faults import FAULTS
from contract.known_bugs import unknown_ids
from contract.windows import FaultWindow, fault_windows
from nemesis.cluster_faults import ClusterFaults
from runner.rundir import kafka_version_of, new_run_dir, save_run_json, versions
from workloads import EventLog, Observer, drain
from workloads.recording import RecordingConsumer, RecordingProducer

_SECRET = re.compile(r"password|secret|token", re.I)


def _public(config: dict[str, str]) -> dict[str, str]:
    """Settings fit for run.json: credentials are left out."""
    return {k: v for k, v in config.items() if not _SECRET.search(k)}


class ChaosSession(ClusterFaults):
    """Faults, recorded clients and the check of one test body's run directory.

    ``run_dir`` must exist (see :meth:`open`). ``name`` labels run.json's scenario and the
    result; ``spark_master`` is the checker's (default: local). ``accept_known``: registry
    ids (contract/known_bugs.py) whose records the verdict accepts, each record still
    counted and named (run.json ``accept_known``).
    """

    def __init__(self, cluster: KafkaCluster, run_dir: str | Path, *, name: str = "user",
                 seed: int = 0, topic: str = "chaos", spark_master: str | None = None,
                 accept_known: list[str] | tuple[str, ...] = ()) -> None:
        if unknown := unknown_ids(tuple(accept_known)):
            raise ValueError(f"accept_known: unknown bug id {unknown[0]!r} "
                             f"(see: kafka-chaos bugs)")
        self.accept_known = list(accept_known)
        self.run_dir = Path(run_dir)
        (self.run_dir / "history").mkdir(parents=True, exist_ok=True)
        super().__init__(cluster, EventLog(self.run_dir / "history" / "events.jsonl"),
                         topic=topic, seed=seed)
        self.name = name
        self.seed = seed
        self.spark_master = spark_master
        self.started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.producers: list[RecordingProducer] = []
        self.consumers: list[RecordingConsumer] = []
        self.result: ChaosResult | None = None
        #: Called with each check()'s result (the pytest fixture records it for the summary).
        self.on_result: Callable[[ChaosResult], Any] | None = None
        self._observer: Observer | None = None
        self._closed = False
        self.events.phase("workload", "start")

    @classmethod
    def open(cls, cluster: KafkaCluster, out: str | Path = "runs/user", name: str = "user",
             **kwargs: Any) -> ChaosSession:
        """A session in a new run directory ``<out>/<name>/<UTC time>/``."""
        safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", name) or "user"
        return cls(cluster, new_run_dir(out, safe), name=name, **kwargs)

    # ------------------------------------------------------------------ clients
    def producer(self, config: dict[str, Any] | None = None, **settings: Any) -> RecordingProducer:
        """A :class:`RecordingProducer` on this cluster writing this session's history
        (``bootstrap.servers`` filled in; ``settings`` use ``_`` for ``.``)."""
        conf = self._config(config, settings)
        producer = RecordingProducer(conf, self.run_dir, producer_id=len(self.producers))
        self.producers.append(producer)
        return producer

    def consumer(self, config: dict[str, Any] | None = None, *, reader: str | None = None,
                 **settings: Any) -> RecordingConsumer:
        """A :class:`RecordingConsumer` on this cluster (reader ``c0``, ``c1``, … unless
        named)."""
        conf = self._config(config, settings)
        consumer = RecordingConsumer(conf, self.run_dir, reader or f"c{len(self.consumers)}")
        self.consumers.append(consumer)
        return consumer

    def offset_groups(self) -> list[str]:
        """The groups of the recorded consumers whose group metadata was taken (a
        transaction's offsets go to them): each broker fault records their coordinator, the
        evidence that names librdkafka#5456 / #5511 on a hung send_offsets_to_transaction."""
        return sorted({str(c.config["group.id"]) for c in self.consumers
                       if c.offers_offsets and c.config.get("group.id") is not None})

    def transactional_ids(self) -> list[str]:
        """The recorded producers' transactional ids, when a consumer handed out its group
        metadata (their coordinators tell a hang at the transaction coordinator from one at
        the group's)."""
        if not self.offset_groups():
            return []
        return sorted({str(p.config["transactional.id"]) for p in self.producers
                       if p.config.get("transactional.id")})

    def _config(self, config: dict[str, Any] | None, settings: dict[str, Any]) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.cluster.bootstrap_servers}
        conf.update(config or {})
        conf.update({k.replace("_", "."): v for k, v in settings.items()})
        return conf

    def watch(self, *topics: str) -> None:
        """Samples leader, ISR and high watermark of the topics' partitions several times a
        second into observations.parquet (the report's timeline; power-loss excuses)."""
        if self._observer is None and topics:
            self._observer = Observer(self.run_dir, self.cluster.bootstrap_servers,
                                      list(topics)).start()

    # ------------------------------------------------------------------ history
    def history_events(self) -> list[Event]:
        """The events recorded so far (fault start/end, errors, phases, rebalances)."""
        path = self.run_dir / "history" / "events.jsonl"
        return parse_events(path.read_text() if path.exists() else "")[0]

    def fault_windows(self) -> list[FaultWindow]:
        """The fault windows of the history, paired as the checker and the report pair them."""
        return fault_windows(self.history_events())

    # ------------------------------------------------------------------ the end
    def check(self, topic: str, *, drain_timeout: float = 120.0,
              isolation_level: str = "read_uncommitted", report: bool = True) -> ChaosResult:
        """Ends the body's part: closes the recorded clients, heals, waits for every broker,
        drains ``topic`` from the beginning (reader ``drain``), writes run.json, runs the
        PySpark checker (results.json) and the HTML report. Returns the result."""
        return self._finish([topic], drain_timeout, isolation_level, report, None)

    def check_pipeline(self, input: str, output: str, *, delivery: str = "exactly-once",
                       drain_timeout: float = 120.0, report: bool = True) -> ChaosResult:
        """:meth:`check` for a consume-transform-produce application reading ``input`` and
        writing ``output`` (its recorded producer passing ``source=`` the consumed
        message): both topics are drained read_committed, and the pipeline check
        (checkers/pipeline.py) decides whether every committed input record has exactly
        one output (``delivery="at-least-once"``: at least one) and no output came from
        input that was never committed. ``result.pipeline`` holds its counts."""
        from checkers.pipeline import DELIVERIES

        if delivery not in DELIVERIES:
            raise ValueError(f"delivery {delivery!r}: one of {', '.join(DELIVERIES)}")
        return self._finish([input, output], drain_timeout, "read_committed", report,
                            {"input": input, "output": output, "delivery": delivery})

    def _finish(self, topics: list[str], drain_timeout: float, isolation_level: str,
                report: bool, pipeline: dict[str, str] | None) -> ChaosResult:
        if self._closed:
            raise RuntimeError("check() after the session was closed")
        self._close_clients()  # flushes what the producers still hold: still the workload
        self.events.phase("workload", "end")
        self.events.phase("heal", "start")
        self.heal()
        self.cluster.wait_brokers(sorted(self.cluster.brokers), timeout_s=120)
        self.events.phase("heal", "end")
        counts = {t: len(self.cluster.describe(t)) for t in topics}
        drain(self.run_dir, self.cluster.bootstrap_servers, topics, counts, self.events,
              timeout_s=drain_timeout, isolation_level=isolation_level,  # type: ignore[arg-type]
              brokers=len(self.cluster.brokers))
        self._stop_observer()
        self.write_run_json(topics[0], counts[topics[0]], isolation_level, pipeline)
        from checkers import check_run

        check_run(self.run_dir, spark_master=self.spark_master)
        if report:
            from reports import render_run

            render_run(self.run_dir)
        self.result = ChaosResult.from_run_dir(self.run_dir, label=self.name)
        if self.on_result is not None:
            self.on_result(self.result)
        return self.result

    def write_run_json(self, topic: str, partitions: int, isolation_level: str,
                       pipeline: dict[str, str] | None = None) -> dict[str, Any]:
        """run.json (DESIGN.md §3) of this session: the cluster, the topic's settings and
        the recorded clients' settings, which the checker's guarantee model reads."""
        cfg = self.cluster.cfg
        version = kafka_version_of(self.cluster.image, None if cfg.image else cfg.kafka_version)
        kinds = sorted({e.kind for e in self.history_events()
                        if e.kind in FAULTS and e.phase in (START, END)})
        doc: dict[str, Any] = {
            "scenario": self.name,
            "run_id": self.run_dir.name,
            "started_at": self.started_at,
            "seed": self.seed,
            "cluster": {"brokers": len(self.cluster.brokers),
                        "controllers": "combined" if cfg.controllers == 0 else cfg.controllers,
                        "kafka_version": version, "image": self.cluster.image},
            "workload": {
                "source": "user",  # the test body's own clients, not the built-in workload
                "topic": topic, "partitions": partitions, "producers": len(self.producers),
                "consumers": [{"id": c.reader, "mode": c.mode or "subscribe",
                               "group_id": c.kafka_config.get("group.id"),
                               "isolation_level": c.kafka_config.get("isolation.level",
                                                                     "read_committed")}
                              for c in self.consumers],
                "transactions": {"enabled": any(p.config.get("transactional.id")
                                                for p in self.producers)},
                "drain": {"isolation_level": isolation_level},
            },
            "faults": {"kinds": kinds, "schedule": "user"},
            "broker_config": {**cfg.default_broker_config(), **cfg.broker_config},
            "topic_config": self._topic_config(topic),
            "producer_config": _public(self.producers[0].kafka_config) if self.producers else {},
            # every producer's own settings: the checker judges each record by its producer's
            "producer_configs": {str(p.producer_id): _public(p.kafka_config)
                                 for p in self.producers},
            "consumer_config": _public(self.consumers[0].kafka_config) if self.consumers else {},
            "options": {"collect_data": False},
            # known bugs whose records the verdict accepts (each record still named)
            "accept_known": list(self.accept_known),
            "versions": versions(version),
        }
        if pipeline:
            doc["pipeline"] = pipeline
        save_run_json(self.run_dir, doc)
        return doc

    def _topic_config(self, topic: str) -> dict[str, str]:
        """The topic's replication factor and every setting it overrides."""
        parts = self.cluster.describe(topic)
        out = {"replication.factor": str(len(parts[0].replicas))} if parts else {}
        admin = self.cluster.admin()
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entries = admin.describe_configs([res])[res].result(timeout=30)
        for name, entry in entries.items():
            if not entry.is_default and entry.value is not None:
                out[name] = str(entry.value)
        return out

    def _close_clients(self) -> None:
        for producer in self.producers:
            producer.close()
        for consumer in self.consumers:
            consumer.close()

    def _stop_observer(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer = None

    def close(self) -> None:
        """Heals everything, closes the recorded clients and the event log (idempotent;
        every step runs even when an earlier one failed)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.heal()
        finally:
            try:
                self._close_clients()
            finally:
                self._stop_observer()
                self.events.close()

    def __enter__(self) -> ChaosSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
