"""The workload seam: a client driver starts the run's producers and consumers of one client.

The orchestrator asks a :class:`ClientDriver` for its producers and consumers and gets a
:class:`ProcessGroup` either way; every driver writes the same history (the same Parquet
tables and events), so the checker never knows which client wrote it, and run.json's
``versions`` say it (:meth:`ClientDriver.versions`).

- :class:`LibrdkafkaDriver`: confluent-kafka in Python processes of our own
  (workloads/producer.py, consumer.py), this interpreter's or a cached venv's release.
- :class:`ForeignDriver`: a client in another language, one driver process per producer or
  consumer, each with a Python recorder (workloads/foreign.py,
  contract/driver_protocol.py); the Java client's is workloads/java/KcDriver.java.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from contract.clients import CONFLUENT_KAFKA, ClientSpec, unsupported
from workloads.client_info import client_versions
from workloads.config import ConsumerConfig, ConsumerSpec, ProducerConfig, WorkloadConfigError
from workloads.foreign import DriverSpec, driver_main
from workloads.processes import (
    ChildInterpreter,
    ProcessGroup,
    new_group,
    spawn,
    start_consumers,
    start_producers,
)


class ClientDriver(Protocol):
    """Starts a run's producers and consumers with one client."""

    @property
    def client(self) -> ClientSpec:
        """Which client and version write and read."""

    def start_producers(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                        cfg: ProducerConfig, count: int, stop_event: Any = None,
                        first_id: int = 0) -> ProcessGroup:
        """``count`` producers (ids ``first_id``…), each writing its part of writes.parquet."""

    def start_consumers(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                        cfg: ConsumerConfig, specs: list[ConsumerSpec],
                        stop_event: Any = None) -> ProcessGroup:
        """One consumer per spec, each writing its part of reads.parquet."""

    def versions(self) -> dict[str, Any]:
        """run.json ``versions`` entries of the client (before the processes report)."""


@dataclass(frozen=True)
class LibrdkafkaDriver:
    """confluent-kafka: this interpreter's (``interpreter`` None) or a cached venv's."""

    interpreter: ChildInterpreter | None = None

    @property
    def client(self) -> ClientSpec:
        return ClientSpec(CONFLUENT_KAFKA, self.interpreter.confluent_kafka
                          if self.interpreter else None)

    def start_producers(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                        cfg: ProducerConfig, count: int, stop_event: Any = None,
                        first_id: int = 0) -> ProcessGroup:
        return start_producers(run_dir, bootstrap, topic, partitions, cfg, count, stop_event,
                               first_id, interpreter=self.interpreter)

    def start_consumers(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                        cfg: ConsumerConfig, specs: list[ConsumerSpec],
                        stop_event: Any = None) -> ProcessGroup:
        return start_consumers(run_dir, bootstrap, topic, partitions, cfg, specs, stop_event,
                               interpreter=self.interpreter)

    def versions(self) -> dict[str, Any]:
        interp = self.interpreter
        if interp is None:
            own = client_versions()
            return {"client": CONFLUENT_KAFKA, "client_version": own["confluent_kafka"],
                    "confluent_kafka": own["confluent_kafka"], "librdkafka": own["librdkafka"],
                    "client_venv": None}
        return {"client": CONFLUENT_KAFKA, "client_version": interp.confluent_kafka,
                "confluent_kafka": interp.confluent_kafka, "librdkafka": interp.librdkafka,
                "client_venv": str(interp.venv) if interp.venv else None}


#: librdkafka property names that Kafka's Java client (and the drivers that follow its names)
#: calls otherwise.
KAFKA_NAMES = {"fetch.wait.max.ms": "fetch.max.wait.ms"}


@dataclass(frozen=True)
class ForeignDriver:
    """A client in another language: ``command`` starts its driver (the spec's path is
    added). ``client`` is its kind and the version the driver was built against."""

    spec: ClientSpec
    command: tuple[str, ...]

    @property
    def client(self) -> ClientSpec:
        return self.spec

    def _refuse(self, transactional: bool = False, partitioner: str = "round-robin",
                modes: list[str] | None = None, group_protocol: str = "classic") -> None:
        # the run's configuration was refused the same way before anything started
        # (runner.config.RunConfig.validate); this is for callers that start drivers
        why = unsupported(self.spec, transactional=transactional, partitioner=partitioner,
                          consumer_modes=modes or [], group_protocol=group_protocol)
        if why:
            raise WorkloadConfigError(why)

    def start_producers(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                        cfg: ProducerConfig, count: int, stop_event: Any = None,
                        first_id: int = 0) -> ProcessGroup:
        cfg.validate()
        self._refuse(cfg.transactional, cfg.partitioner)
        group = new_group(lambda s: f"p{s['producer']}", stop_event)
        for i in range(first_id, first_id + count):
            spec = self.producer_spec(bootstrap, topic, partitions, cfg, i)
            spawn(group, f"p{i}", f"kc-producer-{i}", driver_main, Path(run_dir), spec)
        return group

    def producer_spec(self, bootstrap: str, topic: str, partitions: int, cfg: ProducerConfig,
                      i: int) -> DriverSpec:
        """What producer ``i``'s driver is told (contract.driver_protocol.SPEC_KEYS)."""
        parts = list(cfg.partitions) if cfg.partitions is not None else list(range(partitions))
        values = {"role": "producer", "name": f"p{i}", "bootstrap": bootstrap,
                  "topic": topic, "partitions": parts, "producer": i, "rate": cfg.rate,
                  "duration_s": cfg.duration_s, "max_records": cfg.max_records,
                  "record_size": cfg.record_size, "close_timeout_s": cfg.flush_timeout_s,
                  "records_per_txn": cfg.records_per_txn, "abort_share": cfg.abort_share,
                  "seed": cfg.seed}
        return DriverSpec(list(self.command), self.spec.kind, values,
                          self._names(cfg.kafka_config(i)), cfg.flush_timeout_s,
                          cfg.history_chunk_rows, cfg.history_flush_interval_s)

    def start_consumers(self, run_dir: Path, bootstrap: str, topic: str, partitions: int,
                        cfg: ConsumerConfig, specs: list[ConsumerSpec],
                        stop_event: Any = None) -> ProcessGroup:
        if len({s.id for s in specs}) != len(specs):
            raise ValueError("consumer ids must be unique")
        self._refuse(modes=[c.mode for c in specs], group_protocol=cfg.group_protocol)
        group = new_group(lambda s: str(s["reader"]), stop_event)
        for c in specs:
            parts = c.partitions if c.partitions is not None else list(range(partitions))
            values = {"role": "consumer", "name": c.id, "bootstrap": bootstrap,
                      "topic": topic, "partitions": parts, "mode": c.mode,
                      "poll_timeout_ms": int(cfg.poll_timeout_s * 1000),
                      "restart_interval_s": cfg.restart_interval_s,
                      "restart_pause_s": cfg.restart_pause_s,
                      "restart_close_delay_s": cfg.restart_close_delay_s}
            conf = {**cfg.kafka_config(), "max.poll.records": str(cfg.max_poll_records)}
            if c.mode == "restart":  # alone in its group, as the librdkafka workload's
                conf["group.id"] = f"{cfg.group_id}-{c.id}"
            spec = DriverSpec(list(self.command), self.spec.kind, values, self._names(conf),
                              history_chunk_rows=cfg.history_chunk_rows,
                              history_flush_interval_s=cfg.history_flush_interval_s)
            spawn(group, c.id, f"kc-consumer-{c.id}", driver_main, Path(run_dir), spec)
        return group

    def _names(self, conf: dict[str, str]) -> dict[str, str]:
        return {KAFKA_NAMES.get(k, k): v for k, v in conf.items()}

    def versions(self) -> dict[str, Any]:
        # librdkafka does not write nor read the workload's records (the drain and the
        # observer still use the orchestrator's: orchestrator_* in run.json)
        return {"client": self.spec.kind, "client_version": self.spec.version,
                "confluent_kafka": None, "librdkafka": None, "client_venv": None}
