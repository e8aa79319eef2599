"""A run's fault schedule as it happened, as a replayable scenario (``replay.toml``).

Every fault that took effect becomes a ``start`` step at the second it started and a
``stop`` step at the second it ended (``at`` steps: times since the workload began), with the
parameters it ran with. Its target is anchored to a cluster fact, not to a broker id: a
fault aimed at ``leader:0`` stays ``leader:0``; one aimed at a random broker that led
partition P when it struck becomes ``leader:P``, at a follower of partition P ``follower:P``
(from the observer's leader samples just before the start). Several brokers at once keep
their ids (the clusters kafka-chaos starts number their brokers alike). Faults that failed to
start are left out: they did not happen.

Pure functions of the history, tested on literal events (tests/explore).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from contract.atomic_files import read_regular
from contract.events import END, PHASE, START, Event, parse_events
from contract.faults import FAULTS
from contract.liveness import LIVENESS_PHASE
from contract.windows import fault_windows
from runner.config import RUN_FIELDS, RunConfigError

#: Target specs that already name a cluster fact (nemesis.faults.targets).
FACT_TARGETS = ("leader", "followers", "controller", "coordinator", "all", "follower")
#: RunConfig fields a replay file leaves out: where the run goes, and the random faults its
#: script replaces.
NOT_REPLAYED = ("scenario", "out", "faults", "fault_interval", "targets")


@dataclass(frozen=True)
class Happened:
    """One fault as it happened: seconds after the workload began (``end_s`` None: healed
    only at the end of the run), its anchored target and its parameters."""

    kind: str
    target: str
    start_s: float
    end_s: float | None
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def hold_s(self, until_s: float) -> float:
        return (self.end_s if self.end_s is not None else until_s) - self.start_s


@dataclass
class Schedule:
    """A run's faults as they happened and the workload's length after the last of them
    (``settle_s``: from the last step to the end of the workload phase)."""

    faults: list[Happened]
    settle_s: float

    def last_step_s(self) -> float:
        return max([0.0, *(f.end_s if f.end_s is not None else f.start_s for f in self.faults)])


#: (partition, leader, replicas) of each partition in the last sample before a moment.
Leaders = dict[int, tuple[int, tuple[int, ...]]]
#: One leader sample of the observer: (ts_ns, partition, leader, replicas).
Sample = tuple[int, int, int, tuple[int, ...]]


def leaders_at(samples: Sequence[Sample], ts_ns: int) -> Leaders:
    """Each partition's leader and replicas in the last sample at or before ``ts_ns``
    (``samples``: (ts_ns, partition, leader, replicas), any order)."""
    out: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    for ts, partition, leader, replicas in samples:
        if ts <= ts_ns and (partition not in out or out[partition][0] <= ts):
            out[partition] = (ts, leader, tuple(replicas))
    return {p: (leader, replicas) for p, (_, leader, replicas) in out.items()}


def anchor(spec: str, targets: list[int], leaders: Leaders) -> str:
    """The target a replay aims at: ``spec`` when it names a cluster fact, else the role the
    one node hit had (``leader:P``, ``follower:P``), else the ids hit."""
    if spec.split(":", 1)[0] in FACT_TARGETS:
        return spec
    if len(targets) == 1:
        node = targets[0]
        led = sorted(p for p, (leader, _) in leaders.items() if leader == node)
        if led:
            return f"leader:{led[0]}"
        follows = sorted(p for p, (leader, replicas) in leaders.items()
                         if node in replicas and leader != node)
        if follows:
            return f"follower:{follows[0]}"
    if targets:
        return ",".join(str(t) for t in sorted(targets))
    return spec


def _aim(kind: str, detail: dict[str, Any], targets: list[int], leaders: Leaders
         ) -> tuple[str, dict[str, Any]]:
    """A fault's anchored target and its parameters. A partition's recorded targets depend
    on its shape: a one-way cut records its target and the peer cut off (the peer becomes a
    parameter); halves and a ring shuffle the nodes themselves, so their spec stays."""
    spec = str(detail.get("target", "random"))
    params = {k: detail[k] for k in FAULTS[kind].params if detail.get(k) is not None}
    if kind == "voter-partition":
        return spec, params
    if kind == "partition":
        shape = params.get("shape", "isolate")
        if shape in ("halves", "ring"):
            return spec, params
        if shape == "one-way" and len(targets) == 2:
            return (anchor(spec, targets[:1], leaders),
                    {**params, "peer": anchor("random", targets[1:], leaders)})
    return anchor(spec, targets, leaders), params


def schedule(events: list[Event], samples: Sequence[Sample]) -> Schedule:
    """The faults of ``events`` as they happened, anchored by the leader ``samples``."""
    t0 = next((e.ts_ns for e in events if e.kind == PHASE and e.name == "workload"
               and e.phase == START), None)
    if t0 is None:
        return Schedule([], 0.0)
    happened: list[Happened] = []
    for w in fault_windows(events):
        if w.kind not in FAULTS:
            continue
        target, params = _aim(w.kind, w.detail, [int(t) for t in w.targets
                                                 if isinstance(t, int)],
                              leaders_at(samples, w.start_ns))
        began = w.detail.get("began_ns")  # when applying it began (older runs: none)
        start_ns = began if isinstance(began, int) and began <= w.start_ns else w.start_ns
        happened.append(Happened(
            w.kind, target, round(max(0.0, (start_ns - t0) / 1e9), 1),
            round((w.end_ns - t0) / 1e9, 1) if w.end_ns is not None else None, params))
    # the workload's own end: where the liveness phase (or the workload phase) ended it
    ends = [e.ts_ns for e in events if e.kind == PHASE and e.phase in (START, END)
            and ((e.name == LIVENESS_PHASE and e.phase == START)
                 or (e.name == "workload" and e.phase == END))]
    sched = Schedule(happened, 0.0)
    if ends:
        sched.settle_s = round(max(1.0, (min(ends) - t0) / 1e9 - sched.last_step_s()), 1)
    return sched


def steps(sched: Schedule) -> list[dict[str, Any]]:
    """The schedule as TOML step tables (scenarios.toml_file), in time order."""
    moments: list[tuple[float, int, dict[str, Any]]] = []
    for i, f in enumerate(sched.faults):
        ref = f"f{i + 1}"
        moments.append((f.start_s, 2 * i, {"action": "start", "fault": f.kind,
                                           "target": f.target, "as": ref, **f.params}))
        if f.end_s is not None:
            moments.append((f.end_s, 2 * i + 1, {"action": "stop", "ref": ref}))
    out: list[dict[str, Any]] = []
    last: float | None = None
    for at, _, step in sorted(moments, key=lambda m: (m[0], m[1])):
        if at != last:
            out.append({"action": "at", "seconds": at})
            last = at
        out.append(step)
    return out


def replay_config(run_json: dict[str, Any]) -> dict[str, Any]:
    """The run options a replay runs with: the original's (run.json ``options``), pinned
    to the Kafka version it ran, without the random faults the script replaces."""
    options = run_json.get("options")
    if not isinstance(options, dict):
        raise RunConfigError("run.json has no options: not a run of this kafka-chaos")
    out = {k: v for k, v in options.items()
           if k in RUN_FIELDS and k not in NOT_REPLAYED and v is not None}
    out["faults"] = []  # the script is the schedule; none drawn beside it
    cluster = run_json.get("cluster") or {}
    if not isinstance(cluster, dict):
        raise RunConfigError("run.json: cluster is not an object")
    version = cluster.get("kafka_version")
    if not out.get("kafka_version") and not out.get("image") and version:
        out["kafka_version"] = version
    return out


def scenario_doc(name: str, summary: str, config: dict[str, Any], sched: Schedule,
                 expect: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ``[[scenario]]`` table (scenarios.toml_file) replaying ``sched`` with ``config``."""
    entry: dict[str, Any] = {"name": name, "summary": summary, "config": config}
    if sched.faults:
        entry["settle"] = sched.settle_s
        entry["steps"] = steps(sched)
    if expect:
        entry["expect"] = expect
    return {"scenario": [entry]}


def to_toml(doc: dict[str, Any]) -> str:
    return tomli_w.dumps(doc)


@dataclass
class RunRecord:
    """What a replay needs of a run directory: its run.json, events and leader samples."""

    run_dir: Path
    run_json: dict[str, Any]
    events: list[Event]
    samples: list[Sample]

    @property
    def schedule(self) -> Schedule:
        return schedule(self.events, self.samples)

    def replay_doc(self, name: str | None = None) -> dict[str, Any]:
        scenario = str(self.run_json.get("scenario", "run"))
        return scenario_doc(name or replay_name(scenario),
                            f"{scenario} {self.run_dir.resolve().name} as it happened",
                            replay_config(self.run_json), self.schedule,
                            self.run_json.get("expect"))


def replay_name(scenario: str) -> str:
    base = "".join(c if c.isalnum() or c == "-" else "-" for c in scenario.lower())
    return ("replay-" + base)[:64].rstrip("-")


def read_run(run_dir: Path) -> RunRecord:
    """Reads a run directory, each file bounded in size and only when it is a regular file
    (a FIFO would block, ``/dev/zero`` never end); RunConfigError (one line) when it is no
    run directory or a file is damaged."""
    from reports.datasets import MAX_EVENTS_BYTES, MAX_JSON_BYTES, load_json

    run_json_path = run_dir / "run.json"
    events_path = run_dir / "history" / "events.jsonl"
    if not run_json_path.is_file() or not events_path.is_file():
        raise RunConfigError(f"{run_dir} is not a run directory (no run.json and "
                             "history/events.jsonl)")
    run_json = load_json(run_json_path)
    if run_json is None:
        raise RunConfigError(f"{run_json_path}: not a JSON object in a regular file of at "
                             f"most {MAX_JSON_BYTES >> 20} MiB")
    text = read_regular(events_path, MAX_EVENTS_BYTES)
    if text is None:
        raise RunConfigError(f"{events_path}: not a regular file of at most "
                             f"{MAX_EVENTS_BYTES >> 20} MiB")
    events, _bad = parse_events(text)
    return RunRecord(run_dir, run_json, events, _leader_samples(run_dir, run_json))


def _leader_samples(run_dir: Path, run_json: dict[str, Any]) -> list[Sample]:
    from reports.datasets import read_table

    table = read_table(run_dir / "history" / "observations.parquet",
                       ["ts_ns", "topic", "partition", "leader", "replicas"])
    # the observer samples only the run's own topic (run.json workload.topic)
    workload = run_json.get("workload")
    topic = workload.get("topic") if isinstance(workload, dict) else None
    return [(int(r["ts_ns"]), int(r["partition"]), int(r["leader"]), tuple(r["replicas"] or ()))
            for r in table.to_pylist()
            if None not in (r.get("ts_ns"), r.get("partition"), r.get("leader"))
            and (topic is None or r.get("topic") == topic)]
