"""One chaos run, end to end: cluster up → observer → consumers, producers and the nemesis →
heal → drain → (cluster down) → check → report.

This module and the CLI are the only places that wire the stages together. Every exit path
(normal end, exception, Ctrl-C, SIGTERM) heals the faults, stops the workload processes,
collects the logs and removes the cluster; the history written so far stays readable.
"""

from __future__ import annotations

import logging
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compose.cluster import CollectFailure, KafkaCluster
from compose.config import FAST_FAULTS, ClusterConfig
from compose.nodes_file import load_nodes
from compose.remote import ExternalCluster, SshNode
from compose.stop_signals import signals_raise, stop_request
from contract.events import (
    COLLECT_ERROR,
    CONSUMERS_STOPPED,
    END,
    INSTANT,
    INTERRUPTED,
    NEMESIS_ERROR,
    RUN_ERROR,
    START,
    parse_events,
)
from contract.liveness import DEFAULT_BOUND_S, LIVENESS_PHASE, SLACK_S
from nemesis.dead_man import DeadManSwitches, sweep_spec
from nemesis.faults.base import FaultContext
from nemesis.schedule import Nemesis
from runner.clients import ensure_driver
from runner.config import (
    TOPIC,
    RunConfig,
    RunConfigError,
    host_key_refusal,
    space_refusal,
    ssh_peer_refusal,
)
from runner.rundir import kafka_version_of, new_run_dir, record_client_versions, write_run_json
from scenarios.base import DoneWhen, Scenario
from workloads import (
    CallWatcher,
    ConsumerConfig,
    ConsumerSpec,
    EventLog,
    Observer,
    ProcessGroup,
    ProducerConfig,
    drain,
)
from workloads.drivers import ClientDriver, LibrdkafkaDriver

log = logging.getLogger("kafka_chaos.run")
# How long the brokers get to serve again after a heal.
_HEAL_WAIT_S = 120
Progress = Callable[[str], None]


@dataclass
class RunOutcome:
    """What a run produced: where, whether it finished, and the checker's results."""

    run_dir: Path
    completed: bool = False
    interrupted: bool = False
    error: str | None = None
    results: dict[str, Any] | None = None
    report: Path | None = None
    stats: dict[str, Any] = field(default_factory=dict)


def _producer_config(cfg: RunConfig, offsets_groups: dict[int, str] | None = None
                     ) -> ProducerConfig:
    return ProducerConfig(offsets_groups=dict(offsets_groups or {}),
        acks=cfg.acks,  # type: ignore[arg-type]  # RunConfig spells acks 0, 1 or all
        enable_idempotence=cfg.idempotence, rate=cfg.rate, record_size=cfg.record_size,
        # the run stops them (its stop flag) after the liveness phase, which follows the
        # duration and the final heal; their own deadline only backs that up
        duration_s=cfg.duration + (cfg.liveness + _HEAL_WAIT_S + 60 if cfg.liveness else 0),
        transactional=cfg.transactions, seed=cfg.seed, max_records=cfg.max_records,
        idle_s={cfg.producers - 1: cfg.idle_producer} if cfg.idle_producer else {},
        extra=dict(cfg.producer_config))


def _consumer_config(cfg: RunConfig) -> ConsumerConfig:
    return ConsumerConfig(isolation_level=cfg.isolation_level,  # type: ignore[arg-type]
                          group_protocol=cfg.group_protocol,  # type: ignore[arg-type]
                          restart_close_delay_s=cfg.restart_close_delay,
                          extra=dict(cfg.consumer_config))


def _log_to(run_dir: Path) -> logging.Handler:
    handler = logging.FileHandler(run_dir / "logs" / "framework.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("kafka_chaos")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler


class Run:
    """The state of one run, so cleanup can reach everything that was started."""

    def __init__(self, cfg: RunConfig, scenario: Scenario | None, progress: Progress,
                 driver: ClientDriver | None = None) -> None:
        self.cfg = cfg
        # the client that writes and reads (None: the installed confluent-kafka)
        self.driver: ClientDriver = driver if driver is not None else LibrdkafkaDriver()
        self.scenario = scenario
        self.say = progress
        self.run_dir = new_run_dir(cfg.out, cfg.scenario)
        self.events = EventLog(self.run_dir / "history" / "events.jsonl")
        self.cluster: KafkaCluster | ExternalCluster | None = None
        # On a cluster kafka-chaos did not start, the run writes to a topic of its own and
        # deletes it at the end; a random suffix keeps two runs started in the same second
        # (their run ids) apart, and only a topic this run created is deleted.
        self.topic = (f"{TOPIC}-{self.run_dir.name}-{secrets.token_hex(3)}"
                      if cfg.bootstrap_servers else TOPIC)
        self.topic_created = False
        # producer id -> its offsets group (run option send_offsets; picked at setup)
        self.offsets_groups: dict[int, str] = {}
        self.txn_ids: dict[int, str] = {}  # producer id -> its transactional.id (send_offsets)
        self.observer: Observer | None = None
        self.producers: ProcessGroup | None = None
        self.consumers: ProcessGroup | None = None
        self.nemesis: Nemesis | None = None
        self.watch: CallWatcher | None = None
        self.dead_man: DeadManSwitches | None = None
        self.t0 = time.monotonic()

    def step(self, msg: str) -> None:
        self.say(f"[{time.monotonic() - self.t0:6.1f}s] {msg}")
        log.info(msg)

    def phase(self, name: str, total_s: float | None = None) -> None:
        """Tells a progress display that supports phases (runner.progress.Progress) that a
        long piece of work begins; a plain callable such as print is left alone."""
        hook = getattr(self.say, "phase", None)
        if callable(hook):
            hook(name, total_s)

    # ------------------------------------------------------------------ phases
    def setup(self) -> None:
        cfg = self.cfg
        self.events.phase("setup", "start")
        if cfg.check:
            # The checker's JVM starts (and compiles its plans on a tiny history shaped by
            # these settings) while the cluster starts, not after the drain.
            from checkers import warm_up

            warm_up(cfg.spark_master, {
                "cluster": {"brokers": cfg.brokers},
                "topic_config": {"replication.factor": str(cfg.replication_factor),
                                 **cfg.effective_topic_config()},
                "producer_config": _producer_config(cfg).kafka_config()})
        if cfg.bootstrap_servers:
            image, version, broker_config = self._existing_cluster()
        else:
            image, version, broker_config = self._own_cluster()
        self.cluster.create_topic(self.topic, cfg.partitions, cfg.replication_factor,  # type: ignore[union-attr]
                                  cfg.effective_topic_config())
        self.topic_created = True
        if cfg.send_offsets:
            from runner.offsets_groups import pick_offsets_groups

            ids = _producer_config(cfg)  # send_offsets needs transactions: each has an id
            self.txn_ids = {i: ids.kafka_config(i)["transactional.id"]
                            for i in range(cfg.producers)}
            self.offsets_groups = pick_offsets_groups(
                self.cluster,  # type: ignore[arg-type]  # validate(): ours, not an external one
                self.txn_ids)
        pcfg, ccons = _producer_config(cfg, self.offsets_groups), _consumer_config(cfg)
        workload = {
            "topic": self.topic, "partitions": cfg.partitions, "producers": cfg.producers,
            "rate": cfg.rate, "duration_s": cfg.duration, "record_size": cfg.record_size,
            "max_records": cfg.max_records,
            "restart_close_delay_s": cfg.restart_close_delay,
            "liveness_s": cfg.liveness,
            "consumers": [{"id": f"c{i}", "mode": cfg.consumer_mode,
                           "isolation_level": cfg.isolation_level,
                           "group_protocol": cfg.group_protocol}
                          for i in range(cfg.consumers)],
            "transactions": {"enabled": cfg.transactions,
                             # producer -> the group whose offsets its transactions send
                             "offsets_groups": {f"p{i}": g
                                                for i, g in self.offsets_groups.items()},
                             "records_per_txn": pcfg.records_per_txn,
                             "abort_share": pcfg.abort_share},
        }
        sc = self.scenario
        write_run_json(
            self.run_dir, cfg, image=image, kafka_version=version, broker_config=broker_config,
            producer_config=pcfg.kafka_config(), consumer_config=ccons.kafka_config(),
            workload=workload, expect=sc.expect_for(cfg, version) if sc else None,
            mechanism=sc.mechanism_for(cfg, version) if sc else None,
            scenario_doc=sc.doc if sc and sc.script else None,
            client=self.driver.versions())
        self.events.phase("setup", "end")

    def _own_cluster(self) -> tuple[str, str, dict[str, str]]:
        """Starts the cluster; returns its image, Kafka version and broker settings."""
        cfg = self.cfg
        broker_config = {**(FAST_FAULTS if cfg.fast_faults else {}), **cfg.broker_config}
        ccfg = ClusterConfig(brokers=cfg.brokers, controllers=cfg.controllers,
                             image=cfg.image, broker_config=broker_config)
        if cfg.kafka_version:
            ccfg.kafka_version = cfg.kafka_version
        self.phase("cluster start (builds the image on first use)")
        self.step(f"starting {cfg.brokers}-broker cluster "
                  f"({cfg.image or 'Kafka ' + ccfg.kafka_version})")
        cluster = self.cluster = KafkaCluster(ccfg)
        cluster.start()
        self.step(f"cluster up: {cluster.bootstrap_servers}")
        version = kafka_version_of(cluster.image,
                                   cfg.kafka_version or (None if cfg.image else ccfg.kafka_version))
        return cluster.image, version, {**ccfg.default_broker_config(), **broker_config}

    def _existing_cluster(self) -> tuple[str, str, dict[str, str]]:
        """Checks the existing cluster and its nodes answer; starts nothing. Its broker
        settings are its own (not known here), so none are recorded."""
        cfg = self.cfg
        assert cfg.bootstrap_servers
        specs = load_nodes(cfg.nodes) if cfg.nodes else []
        by_ssh = sum(s.container is None for s in specs)
        self.step(f"existing cluster at {cfg.bootstrap_servers}; faults on {by_ssh} node(s) "
                  f"over SSH, {len(specs) - by_ssh} container(s) on this engine")
        # What a killed run left, unless a live run is at work; before the nodes are looked
        # up: a container a dead run killed has no address until the sweep starts it.
        for spec in specs:
            self.step(f"sweep: {sweep_spec(spec).describe()}")
        cluster = self.cluster = ExternalCluster(cfg.bootstrap_servers, specs)
        cluster.start()
        return "", cluster.kafka_version or "unknown", {}

    def workload(self) -> None:
        cfg, cluster = self.cfg, self.cluster
        assert cluster is not None
        boot = cluster.bootstrap_servers
        self.observer = Observer(self.run_dir, boot, [self.topic]).start()
        if cfg.consumers:
            specs = [ConsumerSpec(f"c{i}", cfg.consumer_mode) for i in range(cfg.consumers)]  # type: ignore[arg-type]
            self.consumers = self.driver.start_consumers(self.run_dir, boot, self.topic,
                                                         cfg.partitions, _consumer_config(cfg),
                                                         specs)
        self.events.phase("workload", "start")
        began = time.monotonic()  # a script's `at` steps count from here (the history's t0)
        self.phase("workload", cfg.duration)
        self.step(f"workload: {cfg.producers} producer(s) for {cfg.duration:.0f}s, "
                  f"faults: {self._fault_summary()}")
        self.producers = self.driver.start_producers(self.run_dir, boot, self.topic,
                                                     cfg.partitions,
                                                     _producer_config(cfg, self.offsets_groups),
                                                     cfg.producers)
        slots = {**(self.consumers.slots if self.consumers else {}), **self.producers.slots}
        # a hung send_offsets_to_transaction names its group and transactional id
        # (checkers/hung_calls.py finds their coordinators in the faults' start events)
        notes = {f"p{i}": {"send_offsets_to_transaction": {
            "group": g, "transactional_id": self.txn_ids[i]}}
            for i, g in self.offsets_groups.items()}
        self.watch = CallWatcher(self.events, slots, cfg.liveness or DEFAULT_BOUND_S,
                                 call_notes=notes).start()
        notes_groups = sorted(set(self.offsets_groups.values()))
        notes_txn = sorted(self.txn_ids[i] for i in self.offsets_groups)
        nodes = list(cluster.nodes.values()) if isinstance(cluster, ExternalCluster) else []
        if nodes:
            self.dead_man = DeadManSwitches(nodes, self.run_dir.name, cfg.dead_man)
            self.dead_man.arm_all()  # before any fault: none may run unguarded
            self.step(f"dead-man switch armed on {len(self.dead_man.switches)} node(s): "
                      f"they undo our faults {cfg.dead_man:.0f}s after we stop renewing")
        self.nemesis = Nemesis(FaultContext(cluster, self.events, self.topic,
                                            random.Random(cfg.seed),
                                            consumers=self._group_consumers,
                                            groups=lambda: notes_groups,
                                            transactional_ids=lambda: notes_txn))
        self.nemesis.heal_retry_s = cfg.dead_man if self._ssh_nodes() else 0.0
        self.nemesis.began = began
        deadline = time.monotonic() + cfg.duration
        self.nemesis.deadline = deadline
        if self.scenario and self.scenario.script:
            self.nemesis.run_script(self.scenario.script)
            if self.scenario.settle_s is not None:
                # The script is done: keep producing only long enough to see the cluster
                # serve normally again, not until the configured duration.
                deadline = min(deadline, time.monotonic() + self.scenario.settle_s)
        elif cfg.faults:
            self.nemesis.run_random(cfg.faults, cfg.targets, cfg.fault_interval, deadline)
        elif (self.scenario and self.scenario.done_when is not None
              and self._wait_until(self.nemesis, self.scenario.done_when, deadline)):
            settle = self.scenario.settle_s or 0.0
            self.step(f"the scenario's end condition holds: the workload ends in {settle:.0f}s")
            deadline = min(deadline, time.monotonic() + settle)
        self.nemesis.wait(deadline - time.monotonic())
        if cfg.liveness:
            self.liveness()
        stats = self.producers.stop(timeout_s=60)
        record_client_versions(self.run_dir, stats)
        self.events.phase("workload", "end", producers=stats)
        self.step("workload done: " + ", ".join(
            f"{k}: {v.get('ok', 0)} ok / {v.get('info', 0)} info / {v.get('fail', 0)} fail"
            for k, v in sorted(stats.items())))

    def _group_consumers(self) -> dict[str, Any]:
        """Reader -> call-watch slot of each consumer in a group (a poll-stall's targets:
        an assign-mode reader has no group, and no max.poll.interval.ms to exceed)."""
        if self.consumers is None or self.cfg.consumer_mode == "assign":
            return {}
        return dict(self.consumers.slots)

    def liveness(self) -> None:
        """The final heal, then the liveness phase: the clients go on until every one has
        made progress since its start (a subscribe-mode group: one of its members), or
        for the bound. Its end event lists each client's first progress; the checker
        judges them from the history (checkers/liveness.py)."""
        assert self.nemesis is not None and self.cluster is not None
        assert self.watch is not None and self.producers is not None
        cfg, watch = self.cfg, self.watch
        self.nemesis.heal_all()
        self.cluster.wait_brokers(sorted(self.cluster.brokers), timeout_s=_HEAL_WAIT_S)
        self.step(f"healed: every client must make progress within {cfg.liveness:.0f}s")
        start = self.events.phase(LIVENESS_PHASE, START, bound_s=cfg.liveness,
                                  slack_s=SLACK_S)["ts_ns"]
        producers = list(self.producers.slots)
        consumers = list(self.consumers.slots) if self.consumers else []
        progressed: dict[str, int | None] = dict.fromkeys(producers + consumers)
        end = time.monotonic() + cfg.liveness
        while True:
            for name in progressed:
                if (at := watch.progress_ns(name)) >= start:
                    progressed[name] = progressed[name] or at
            readers = [progressed[c] for c in consumers]
            done = (all(progressed[p] for p in producers)
                    and (any(readers) if cfg.consumer_mode == "subscribe" else all(readers)))
            if done or self.nemesis.wait(min(0.25, end - time.monotonic())) \
                    or time.monotonic() >= end:
                break
        self.events.phase(LIVENESS_PHASE, END, progressed=progressed)
        stuck = sorted(n for n, at in progressed.items() if at is None)
        self.step("liveness: every client made progress" if done else
                  f"liveness: no progress within {cfg.liveness:.0f}s from {', '.join(stuck)}")

    def _wait_until(self, nemesis: Nemesis, done: DoneWhen, deadline: float) -> bool:
        """Polls the events recorded so far until ``done`` holds (True), or until the
        deadline passes or the run is stopped (False)."""
        while time.monotonic() < deadline:
            events, _ = parse_events(self.events.path.read_text(encoding="utf-8"))
            if done(events):
                return True
            if nemesis.wait(min(0.5, deadline - time.monotonic())):
                return False
        return False

    def _ssh_nodes(self) -> list[SshNode]:
        cluster = self.cluster
        if not isinstance(cluster, ExternalCluster):
            return []
        return [n for n in cluster.nodes.values() if isinstance(n, SshNode)]

    def _disarm(self) -> None:
        """Removes the dead-man switches after the final heal; one that fired meanwhile
        (the run's SSH was cut, or the run stalled, longer than the deadline) healed its
        node at another time than the history's fault ends say: recorded."""
        assert self.dead_man is not None
        fired, errors = self.dead_man.disarm_all()
        for f in fired:
            self.events.emit(NEMESIS_ERROR, INSTANT, [f.node_id], {
                "message": f"node {f.node_id}: the dead-man switch fired (node clock "
                           f"{f.at}) and undid: {'; '.join(f.undo) or 'nothing'}"})
        for e in errors:
            self.events.emit(NEMESIS_ERROR, INSTANT, [], {"message": e})
            log.warning(e)

    def _fault_summary(self) -> str:
        if self.scenario and self.scenario.script:
            return f"scripted ({self.scenario.name})"
        if not self.cfg.faults:
            return "none"
        return f"{','.join(self.cfg.faults)} every ~{self.cfg.fault_interval:.0f}s"

    def heal_and_drain(self) -> bool:
        assert self.cluster is not None and self.nemesis is not None
        self.phase("heal + drain")
        self.events.phase("heal", "start")
        self.nemesis.heal_all()
        self.cluster.wait_brokers(sorted(self.cluster.brokers), timeout_s=_HEAL_WAIT_S)
        self.events.phase("heal", "end")
        self.step("healed; draining every partition from the beginning")
        res = drain(self.run_dir, self.cluster.bootstrap_servers, self.topic, self.cfg.partitions,
                    self.events, timeout_s=self.cfg.drain_timeout,
                    isolation_level="read_committed" if self.cfg.transactions
                    else "read_uncommitted", brokers=len(self.cluster.brokers))
        self.step(f"drain {'complete' if res.complete else 'INCOMPLETE'}: "
                  f"{res.records} records read")
        return bool(res.complete)

    def collect(self, cluster: KafkaCluster | ExternalCluster) -> None:
        """Copies the nodes' logs (and data) out; every copy that failed is a
        ``collect-error`` event, so the checker cannot mistake it for "replicas agree"."""
        try:
            if isinstance(cluster, ExternalCluster):  # only the run's own topic
                failures = cluster.collect(self.run_dir / "logs", self.cfg.collect_data,
                                           [self.topic])
            else:
                failures = cluster.collect(self.run_dir / "logs", data=self.cfg.collect_data)
        except Exception as e:  # noqa: BLE001 - recorded; teardown goes on
            failures = [CollectFailure(-1, "data" if self.cfg.collect_data else "log",
                                       f"{type(e).__name__}: {e}")]
        for f in failures:
            self.events.emit(COLLECT_ERROR, INSTANT, [f.node] if f.node >= 0 else [],
                             {"node": f.node, "what": f.what, "error": f.error})

    def _consumers_stopped(self, stats: dict[str, dict[str, Any]]) -> None:
        """The consumers' exit codes go into events.jsonl as the producers' go into the
        workload's end event: the checker reads an exit other than 0 as missing reads."""
        self.events.emit(CONSUMERS_STOPPED, INSTANT, [], {"consumers": stats})
        record_client_versions(self.run_dir, stats)

    def teardown(self, interrupted: bool = False) -> None:
        """Runs on every exit path; each step guarded so the others still happen.

        Our own cluster is removed right after, so healing it does not wait for restarted
        brokers to serve; after Ctrl-C the clients get less time to finish what is in
        flight (what they do not finish is recorded as unknown)."""
        steps: list[tuple[str, Callable[[], Any]]] = []
        own = self.cluster is not None and not isinstance(self.cluster, ExternalCluster)
        clients_s = 10 if interrupted else 30
        if self.nemesis:
            nemesis = self.nemesis
            steps.append(("heal", lambda: nemesis.heal_all(settle=not own)))
        if self.dead_man:
            steps.append(("dead-man", self._disarm))
        if self.producers:
            steps.append(("producers", lambda: self.producers.stop(timeout_s=clients_s)))  # type: ignore[union-attr]
        if self.consumers:
            steps.append(("consumers", lambda: self._consumers_stopped(
                self.consumers.stop(timeout_s=clients_s))))  # type: ignore[union-attr]
        if self.watch:
            steps.append(("call watch", self.watch.stop))  # after the clients stopped
        if self.observer:
            steps.append(("observer", self.observer.stop))
        if self.cluster:
            cluster = self.cluster
            steps.append(("collect", lambda: self.collect(cluster)))
            if isinstance(cluster, ExternalCluster) and self.topic_created:
                steps.append(("topic", lambda: cluster.delete_topic(self.topic)))
            steps.append(("cluster", cluster.stop))
        for name, fn in steps:
            t0 = time.monotonic()
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - teardown must finish
                log.error("teardown step %s failed: %s", name, e)
            log.info("teardown step %s: %.1fs", name, time.monotonic() - t0)
        self.events.close()


def _interrupted(r: Run, exc: BaseException) -> None:
    r.events.emit(INTERRUPTED, INSTANT, [], {"signal": type(exc).__name__})
    r.step("interrupted: healing and cleaning up (history so far is kept)")


def run(cfg: RunConfig, scenario: Scenario | None = None,
        progress: Progress = print) -> RunOutcome:
    """Runs one chaos run and returns its outcome (results when checked).

    Raises RunConfigError or ClientVenvError before anything starts (the client of
    ``cfg.client_spec`` is built, on first use, before the cluster)."""
    cfg.validate()
    why = ((scenario.refusal(cfg) if scenario is not None else None) or space_refusal(cfg)
           or ssh_peer_refusal(cfg, scenario.script_faults
                               if scenario is not None and scenario.script else None)
           or host_key_refusal(cfg))
    if why is not None:
        raise RunConfigError(why)
    r = Run(cfg, scenario, progress, ensure_driver(cfg.client_spec, say=progress))
    handler = _log_to(r.run_dir)
    out = RunOutcome(r.run_dir)
    with signals_raise() as stop:
        try:
            try:
                r.step(f"run directory {r.run_dir}")
                r.setup()
                r.workload()
                r.heal_and_drain()
                out.completed = True
            finally:
                # From here to the end of the teardown signals are only counted: one that
                # lands just before this line raises (and disarms) and is handled below.
                stop.disarm()
        except Exception as e:  # noqa: BLE001 - recorded; the run dir stays checkable
            if (signalled := stop_request(e)) is not None:
                # a stop signal that C code handed on as a SystemError (stop_request)
                out.interrupted = True
                _interrupted(r, signalled)
            else:
                out.error = f"{type(e).__name__}: {e}"
                log.exception("run failed")
                r.events.emit(RUN_ERROR, INSTANT, [], {"error": out.error})
                r.step(f"run failed: {out.error}")
        except (KeyboardInterrupt, SystemExit) as e:
            out.interrupted = True
            _interrupted(r, e)
        finally:
            r.phase("teardown")
            r.teardown(interrupted=out.interrupted or stop.caught > 0)
            r.step("cluster left running, as found" if cfg.bootstrap_servers
                   else "cluster removed")
    # a signal during the teardown of a finished run: the user asked to stop, so no check
    out.interrupted = out.interrupted or stop.caught > 0
    try:
        if cfg.check and not out.interrupted:
            r.phase("check (PySpark)")
            r.step("checking the history (PySpark)")
            from checkers import check_run

            out.results = check_run(r.run_dir, spark_master=cfg.spark_master)
        if cfg.report and not out.interrupted:
            from reports import ReportError, render_run

            try:
                out.report = render_run(r.run_dir)
            except ReportError as e:  # a run that failed before its run.json: no page
                r.step(f"no report: {e}")
    finally:
        closer = getattr(progress, "close", None)
        if callable(closer):  # ends the last phase of a progress display
            closer()
        logging.getLogger("kafka_chaos").removeHandler(handler)
        handler.close()
    return out
