"""What a report states about a run, read from ``run.json`` and ``results.json``.

Nothing here decides anything: the verdict, the counts and whether each anomaly is allowed are
the checker's (``results.json``). This module only turns them into words and rows, and fills in
Kafka's documented defaults for settings a run left unset so that the reader sees the value that
was in force.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract.anomalies import MEANINGS, REPORT_ORDER
from contract.clients import CONFLUENT_KAFKA
from contract.settings import (
    DEFAULT_ACKS,
    DEFAULT_IDEMPOTENCE,
    DEFAULT_ISOLATION,
    DEFAULT_MIN_INSYNC,
    DEFAULT_UNCLEAN,
    raw_acks,
    topic_settings,
    transactions_enabled,
)


@dataclass(frozen=True)
class Setting:
    """One configuration value as shown, with whether it was a default."""

    name: str
    value: str
    defaulted: bool = False


@dataclass
class AnomalyRow:
    """One anomaly kind as the checker reported it."""

    kind: str
    count: int
    allowed: bool
    why: str
    examples: list[dict[str, Any]] = field(default_factory=list)
    definition: str = ""
    checked: bool = True  # False: the checker could not (or was not asked to) look
    known: list[str] = field(default_factory=list)  # "7 duplicates match librdkafka#4953 (open)"

    @property
    def meaning(self) -> str:
        """What the kind means: the checker's definition, else DESIGN.md §4's, shortened."""
        return self.definition or MEANINGS.get(self.kind, "")

    @property
    def status(self) -> str:
        """``none``, ``allowed``, ``violation`` or ``undecided`` — the colour of the row.

        ``unseen`` records are neither: the drain could not read their partition completely,
        so the run cannot tell lost from not-yet-read (DESIGN.md §4: the verdict is unknown).
        """
        if not self.checked and self.count == 0:
            return "unchecked"
        if self.count == 0:
            return "none"
        if self.kind == "unseen" and not self.allowed:
            return "undecided"
        return "allowed" if self.allowed else "violation"


@dataclass
class Verdict:
    """The checker's verdict and one sentence saying why."""

    value: str  # "valid" | "invalid" | "unknown"
    reason: str
    notes: list[str] = field(default_factory=list)


def _get(cfg: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    return None


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_fmt(v) for v in value) or "none"
    return str(value)


def settings(run: dict[str, Any]) -> list[Setting]:
    """The configuration that matters for durability, defaults filled in and marked."""
    cluster = run.get("cluster") or {}
    workload = run.get("workload") or {}
    topic = topic_settings(run)
    producer = run.get("producer_config") or {}
    consumer = run.get("consumer_config") or {}
    faults = run.get("faults") or {}
    versions = run.get("versions") or {}

    def s(name: str, value: Any, default: Any = None) -> Setting:
        if value is None:
            return Setting(name, "?" if default is None else _fmt(default), default is not None)
        return Setting(name, _fmt(value))

    rf = _get(topic, "replication.factor", "default.replication.factor")
    return [
        s("Kafka version", _get(cluster, "kafka_version") or versions.get("kafka")),
        s("brokers", cluster.get("brokers")),
        s("partitions", workload.get("partitions")),
        s("replication.factor", rf),
        s("min.insync.replicas", topic.get("min.insync.replicas"), DEFAULT_MIN_INSYNC),
        s("unclean.leader.election", topic.get("unclean.leader.election.enable"),
          DEFAULT_UNCLEAN),
        s("acks", raw_acks(producer), DEFAULT_ACKS),
        s("enable.idempotence", producer.get("enable.idempotence"), DEFAULT_IDEMPOTENCE),
        s("transactions", transactions_enabled(run)),
        s("isolation.level", consumer.get("isolation.level"), DEFAULT_ISOLATION),
        s("faults", faults.get("kinds") if faults else None, []),
        s("fault interval (s)", faults.get("interval_s") if faults else None),
        s("duration (s)", workload.get("duration_s")),
        # after the final heal, every client must progress within it (0: not checked)
        s("liveness bound (s)", _liveness(workload.get("liveness_s"))),
        s("group.protocol", consumer.get("group.protocol"), "classic"),
        s("producers × rate/s", _pair(workload.get("producers"), workload.get("rate"))),
        s("seed", run.get("seed")),
        # The producers' and consumers' client (run.json versions: what they reported).
        s("client", _client(versions)),
        *([s("librdkafka", versions.get("librdkafka"))]
          if (versions.get("client") or CONFLUENT_KAFKA) == CONFLUENT_KAFKA else []),
        *_orchestrator_client(versions),
    ]


def _client(versions: dict[str, Any]) -> str | None:
    """"java 4.1.1": the client that wrote and read the records and its version (a run.json
    from before versions.client: confluent-kafka)."""
    kind = versions.get("client") or CONFLUENT_KAFKA
    # confluent_kafka first: record_client_versions puts what the processes loaded there
    version = (versions.get("confluent_kafka") if kind == CONFLUENT_KAFKA else None) \
        or versions.get("client_version")
    return f"{kind} {version}" if version else str(kind)


def _liveness(bound: Any) -> Any:
    """workload.liveness_s as shown: "off" for 0, None (unknown) when not recorded."""
    if isinstance(bound, int | float) and not isinstance(bound, bool):
        return "off" if bound == 0 else f"{bound:g}"
    return None


def _orchestrator_client(versions: dict[str, Any]) -> list[Setting]:
    """The observer's and the drain's client (the orchestrator's own), shown when it is not
    the workload's (a ``--client`` or ``--client-version`` run)."""
    ck, rd = versions.get("orchestrator_confluent_kafka"), versions.get("orchestrator_librdkafka")
    if ck is None or (ck, rd) == (versions.get("confluent_kafka"), versions.get("librdkafka")):
        return []
    return [Setting("observer + drain client", f"confluent-kafka {ck}, librdkafka {rd}")]


def _pair(a: Any, b: Any) -> str | None:
    return None if a is None and b is None else f"{_fmt(a)} × {_fmt(b)}"


def anomaly_rows(results: dict[str, Any] | None) -> list[AnomalyRow]:
    """Every anomaly kind (the report's order first, then any extra the checker reported)."""
    anomalies = (results or {}).get("anomalies") or {}
    guarantees = (results or {}).get("guarantees") or {}
    kinds = list(REPORT_ORDER) + sorted(k for k in anomalies if k not in REPORT_ORDER)
    rows = []
    for kind in kinds:
        a = anomalies.get(kind) or {}
        count = int(a.get("count") or 0)
        allowed = bool(a.get("allowed", False))
        # The anomaly's own "why" may say more than the guarantee (e.g. how many were excused).
        why = str(a.get("why") or guarantees.get(kind) or a.get("reason") or "")
        checked = a.get("checked") is not False
        if not checked and a.get("reason"):
            reason = str(a["reason"])
            why = reason if reason.startswith("not checked") else f"not checked: {reason}"
        examples = [e for e in (a.get("examples") or []) if isinstance(e, dict)]
        definition = str(a.get("definition") or "")
        known = known_bug_lines(kind, a.get("known_bugs") or {}, results or {})
        rows.append(AnomalyRow(kind, count, allowed, why, examples, definition, checked, known))
    return rows


_PLURAL = {"lost": "lost writes", "unseen": "unseen writes", "duplicate": "duplicates",
           "reorder": "reorders", "poll-skip": "poll skips",
           "nonmonotonic-poll": "backward polls", "reused-offset": "reused offsets"}


def known_bug_lines(kind: str, counts: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """"N duplicates match librdkafka#4953 (open)" per known bug the checker counted for
    ``kind`` (status from results.json's top-level ``known_bugs``; accepted ones say so)."""
    entries = results.get("known_bugs") or {}
    accepted = set(results.get("accepted_known") or [])
    out = []
    for bug_id, n in sorted(counts.items()):
        status = (entries.get(bug_id) or {}).get("status")
        line = f"{int(n):,} {_PLURAL.get(kind, kind)} match {bug_id}"
        line += f" ({status})" if status else ""
        if bug_id in accepted:
            line += ", accepted by this run"
        out.append(line)
    return out


def verdict(results: dict[str, Any] | None, rows: list[AnomalyRow]) -> Verdict:
    """The checker's verdict in one sentence; ``unknown`` when the run was never checked."""
    if results is None:
        return Verdict("unknown", "No results.json: this run has not been checked (or the "
                       "checker failed before writing its results).")
    raw = results.get("valid")
    value = "valid" if raw is True else "invalid" if raw is False else "unknown"
    stats = results.get("stats") or {}
    writes = stats.get("writes") or {}
    ok = int(writes.get("ok") or 0)
    violations = [r for r in rows if r.status == "violation"]
    allowed = [r for r in rows if r.status == "allowed"]
    notes: list[str] = []
    if value == "invalid":
        found = [f"{r.count:,} {r.kind}" for r in violations]
        found += [str(v) for v in results.get("violations") or []]  # e.g. the pipeline check's
        parts = ", ".join(found) or "anomalies"
        reason = f"The configuration forbids what was found: {parts}."
    elif value == "valid":
        if allowed:
            parts = ", ".join(f"{r.count:,} {r.kind}" for r in allowed)
            reason = f"No forbidden anomaly in {ok:,} acknowledged writes; this configuration " \
                     f"allows what was found: {parts}."
        else:
            reason = f"All {ok:,} acknowledged writes were read back and no anomaly was found."
    else:
        reasons = [str(r) for r in results.get("unknown_reasons") or [] if r]
        checker = results.get("checker") or {}
        if checker.get("error"):
            reasons.append(f"the checker failed ({checker['error']})")
        if stats.get("drain_complete") is False and not reasons:
            reasons.append("the final drain did not read every partition completely")
        unseen = next((r for r in rows if r.kind == "unseen"), None)
        if unseen and unseen.count and not any("unseen" in r for r in reasons):
            reasons.append(f"{unseen.count:,} acknowledged writes are unseen")
        mech = results.get("mechanism") or {}
        if mech.get("observed") is False:
            reasons.append("the scenario's mechanism was not observed")
        if results.get("error"):
            reasons.append(str(results["error"]))
        reason = ("The facts could not be established: " + "; ".join(reasons) + "."
                  if reasons else "The checker could not establish the facts.")
    notes += [f"{r.kind}: not checked" for r in rows if not r.checked]
    # a producer killed in a hung call, judged anyway (checkers/killed_in_call.py)
    notes += [f"Judged although {k}: every reader reads read_committed, and nothing but "
              "its never-committed open transaction went unrecorded."
              for k in stats.get("killed_in_call") or []]
    expectations = results.get("expectations") or {}
    if expectations.get("met") is False:
        missed = [d.get("what", "?") for d in expectations.get("details", []) if not d.get("met")]
        notes.append("Scenario expectations not met: " + ", ".join(map(str, missed)) + ".")
    elif expectations.get("met") is True:
        notes.append("The scenario's own expectations were met.")
    return Verdict(value, reason, notes)
