"""The checks, each one small unit behind :class:`checkers.combine.Check`, and ``CHECKS``,
their order (the order of results.json's unknown reasons).

Row checks (identity, reorder, positions) return their anomaly rows lazily; ``RowAnomalies``
turns the rows of all of them, collected once, into results.json entries. Adding an anomaly
kind: the kind in ``contract/anomalies.py`` (definition, unit) with its rule in
``checkers/guarantees.py``, its rows in an existing row check (or a new check added to
``CHECKS``), and its known-answer test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.anomalies import (
    ANOMALY_KINDS,
    DEFINITIONS,
    DOWN_AFTER_HEAL,
    LIVENESS_KINDS,
    MAX_EXAMPLES,
    UNITS,
)

from . import guarantees
from .attribution import Attributor
from .combine import CheckResult
from .context import CheckContext
from .divergence import check_divergence
from .examples import build_example
from .identity import identity_anomalies, reorder_anomalies
from .known import applicable
from .liveness import by_bug, judge
from .pipeline import PipelineCheck
from .positions import position_anomalies, rebalance_polls
from .proof import (
    consumers_idle,
    consumers_unknown,
    divergence_status,
    drain_unknown,
    fault_counts,
    faults_unknown,
    producers_unknown,
    transaction_outcomes,
    transactions_unknown,
)
from .reconnect import judge_reconnects
from .together import together
from .torn import examinable, torn_transactions
from .verdict import mechanism

DIVERGENCE = "divergence"
TORN = "torn-transaction"


def anomaly_entry(kind: str, count: int, excused: int, examples: list[dict[str, Any]],
                  ctx: CheckContext, by_bug: dict[str | None, tuple[int, int]] | None,
                  known_bugs: dict[str, int]) -> dict[str, Any]:
    """One results.json anomaly entry, judged by the guarantee model."""
    settings = ctx.settings
    rule = guarantees.rules(settings)[kind]
    allowed, why, accepted = guarantees.decide(kind, count, excused, rule, by_bug,
                                               settings.accept_known)
    entry: dict[str, Any] = {"count": count, "allowed": allowed, "why": why,
                             "unit": UNITS[kind], "definition": DEFINITIONS[kind],
                             "known_bugs": known_bugs}
    if excused:
        entry["excused"] = excused
    if accepted:
        entry["accepted"] = accepted
    entry["examples"] = examples
    return entry


@dataclass
class RunFacts:
    """What the verdict needs before anything counts: run.json, the drain, an ack."""

    name: str = "facts"

    def run(self, ctx: CheckContext) -> CheckResult:
        unknown: list[str] = []
        if not ctx.run_json_found:
            unknown.append("run.json is missing: the guarantee model assumed Kafka's defaults")
        if not ctx.drain.ended:
            unknown.append("the history has no drain end event: the final read did not finish")
        if ctx.ws.ok == 0:
            # A workload that never got an acknowledgement proves nothing about durability.
            unknown.append("no write was acknowledged: the run shows nothing about durability")
        return CheckResult(unknown=unknown)


@dataclass
class IdentityCheck:
    """The kinds about one write (lost, unseen, duplicate, …: identity.py lists them)."""

    name: str = "identity"

    def run(self, ctx: CheckContext) -> CheckResult:
        return CheckResult(rows=[identity_anomalies(ctx.identity_table(), ctx.inputs,
                                                    ctx.acks())])


@dataclass
class ReorderCheck:
    """reorder, over the same persisted identity table as IdentityCheck."""

    name: str = "reorder"

    def run(self, ctx: CheckContext) -> CheckResult:
        return CheckResult(rows=[reorder_anomalies(ctx.identity_table(), ctx.inputs,
                                                   ctx.acks())])


@dataclass
class TornTransactionsCheck:
    """torn-transaction (torn.py): unknown-outcome transactions visible in part."""

    name: str = "torn-transactions"

    def run(self, ctx: CheckContext) -> CheckResult:
        if not examinable(ctx.inputs):
            return CheckResult()
        return CheckResult(rows=[torn_transactions(ctx.identity_table(), ctx.writes,
                                                   ctx.inputs)])


@dataclass
class PositionsCheck:
    """The position kinds of positions.py (one exchange by topic and partition)."""

    name: str = "positions"

    def run(self, ctx: CheckContext) -> CheckResult:
        inp = ctx.inputs
        return CheckResult(rows=[position_anomalies(ctx.reads, inp.partitions, inp.topics,
                                                    inp.readers, rebalance_polls(ctx.events),
                                                    groups={r: inp.settings.group(r)
                                                            for r in inp.readers})])


@dataclass
class RowAnomalies:
    """Every kind but divergence and the liveness kinds, from the row checks' findings
    (collected once here)."""

    name: str = "anomalies"

    def run(self, ctx: CheckContext) -> CheckResult:
        findings, _ = together(ctx.findings, ctx.series)
        attributor = Attributor(ctx.events, ctx.history)
        anomalies: dict[str, dict[str, Any]] = {}
        for kind in ANOMALY_KINDS:
            if kind in (DIVERGENCE, DOWN_AFTER_HEAL) or kind in LIVENESS_KINDS:  # their own
                continue
            examples = [build_example(kind, row, attributor, ctx.settings.accept_known)
                        for row in findings.examples.get(kind, [])]
            anomalies[kind] = anomaly_entry(kind, findings.counts.get(kind, 0),
                                            findings.excused.get(kind, 0), examples, ctx,
                                            findings.by_bug.get(kind),
                                            findings.known_bugs(kind))
            if findings.findings.get(kind):  # the broker's findings (batch_ids.py)
                anomalies[kind]["findings"] = dict(sorted(findings.findings[kind].items()))
        if ctx.settings.transactional and not examinable(ctx.inputs):
            # no read_committed drain: its reads cannot show what a transaction exposed, so
            # the count is a lower bound (an expectation of 0 is not met on it)
            anomalies[TORN].update(checked=False, reason="the drain read with "
                                   "read_uncommitted: torn transactions were not examined")
        reason = drain_unknown(ctx.drain.incomplete, ctx.ws.ok_by_partition,
                               anomalies["unseen"]["count"])
        return CheckResult(anomalies=anomalies, unknown=[reason] if reason else [])


@dataclass
class DivergenceCheck:
    """Replica divergence (divergence.py) and whether it was checked when asked (proof.py)."""

    name: str = "divergence"

    def run(self, ctx: CheckContext) -> CheckResult:
        div = check_divergence(ctx.run, ctx.spark)
        status = divergence_status(ctx.run_cfg, ctx.events, div.checked, div.note,
                                   div.offsets_compared, div.copies,
                                   ctx.settings.replication_factor,
                                   sorted(ctx.ws.ok_by_partition))
        div.checked = status.checked
        entry = anomaly_entry(DIVERGENCE, div.count, 0, div.examples, ctx, None, {})
        examples = entry.pop("examples")
        entry["checked"] = div.checked
        if status.reason:
            entry["reason"] = status.reason
        entry["examples"] = examples
        stats = {**div.stats(), **({"reason": status.reason} if status.reason else {})}
        return CheckResult(anomalies={DIVERGENCE: entry},
                           unknown=[status.unknown] if status.unknown else [],
                           stats={"divergence": stats})


@dataclass
class LivenessCheck:
    """stuck-producer, stuck-consumer and hung-call after the final heal (liveness.py)."""

    name: str = "liveness"

    def run(self, ctx: CheckContext) -> CheckResult:
        s = ctx.settings
        found = judge(ctx.events, ctx.writes, ctx.reads, s.liveness_s, s.reader_modes,
                      {r: s.group(r) for r in s.reader_modes}, applicable(s),
                      s.broker_session_timeout_s, settings=s)
        anomalies: dict[str, dict[str, Any]] = {}
        for kind in LIVENESS_KINDS:
            examples = found.examples[kind]
            by_bug = found.by_bug(kind)
            entry = anomaly_entry(kind, len(examples), 0, examples[:MAX_EXAMPLES], ctx, by_bug,
                                  {b: n for b, (n, _) in by_bug.items() if b is not None})
            if kind in found.unchecked:
                entry.update(checked=False, reason=found.unchecked[kind])
            anomalies[kind] = entry
        return CheckResult(anomalies=anomalies, unknown=found.unknown)


@dataclass
class ReconnectCheck:
    """down-after-heal: a producer still reporting every broker down once the faults had
    healed for the liveness bound (reconnect.py)."""

    name: str = "reconnect"

    def run(self, ctx: CheckContext) -> CheckResult:
        found = judge_reconnects(ctx.events, ctx.writes, ctx.settings, applicable(ctx.settings))
        examples = found.examples
        bugs = by_bug(examples)
        entry = anomaly_entry(DOWN_AFTER_HEAL, len(examples), 0, examples[:MAX_EXAMPLES], ctx,
                              bugs, {b: n for b, (n, _) in bugs.items() if b is not None})
        if found.unchecked is not None:
            entry.update(checked=False, reason=found.unchecked)
        return CheckResult(anomalies={DOWN_AFTER_HEAL: entry}, unknown=found.unknown)


@dataclass
class FaultsCheck:
    """Faults that took effect, when the schedule asked for some."""

    name: str = "faults"

    def run(self, ctx: CheckContext) -> CheckResult:
        faults = fault_counts(ctx.events)
        reason = faults_unknown(ctx.run_cfg, faults)
        return CheckResult(unknown=[reason] if reason else [], stats={"faults": faults.stats()})


@dataclass
class ProducersCheck:
    """Every producer process ended cleanly, so its history holds all its attempts."""

    name: str = "producers"

    def run(self, ctx: CheckContext) -> CheckResult:
        reason, proved = producers_unknown(ctx.events, ctx.settings, ctx.rs.per_reader)
        return CheckResult(unknown=[reason] if reason else [],
                           stats={"killed_in_call": proved} if proved else {})


@dataclass
class ConsumersCheck:
    """Every configured consumer ended cleanly and read something of what it was given."""

    name: str = "consumers"

    def run(self, ctx: CheckContext) -> CheckResult:
        reasons = [consumers_unknown(ctx.events),
                   consumers_idle(ctx.run_cfg, ctx.events, ctx.ws.ok_by_partition,
                                  ctx.rs.last_read_ns, ok_last_offset=ctx.ws.ok_last_offset,
                                  read_to=ctx.rs.read_to)]
        return CheckResult(unknown=[r for r in reasons if r])


@dataclass
class TransactionsCheck:
    """Transaction outcomes of a transactional run."""

    name: str = "transactions"

    def run(self, ctx: CheckContext) -> CheckResult:
        if not ctx.settings.transactional:
            return CheckResult()
        txns = transaction_outcomes(ctx.writes)
        reason = transactions_unknown(True, txns)
        return CheckResult(unknown=[reason] if reason else [], stats={"transactions": txns})


@dataclass
class MechanismCheck:
    """The scenario's mechanism (verdict.py), when the run names one."""

    name: str = "mechanism"

    def run(self, ctx: CheckContext) -> CheckResult:
        if not ctx.settings.mechanism:
            return CheckResult()
        mech = mechanism(ctx.settings.mechanism, ctx.events, ctx.history)
        unknown = [] if mech["observed"] else [
            "the scenario's mechanism was not observed: "
            + "; ".join(d["kind"] for d in mech["details"] if not d["observed"])]
        return CheckResult(unknown=unknown, extra={"mechanism": mech})


@dataclass
class StatsCheck:
    """Counts, drain, availability and the timeseries (stats.py)."""

    name: str = "stats"

    def run(self, ctx: CheckContext) -> CheckResult:
        ws, drain, per_reader = ctx.ws, ctx.drain, ctx.rs.per_reader
        t0, t1 = ctx.workload_window()
        duration = max(0.0, (t1 - t0) / 1e9) if t0 is not None and t1 is not None else 0.0
        series, longest, total = ctx.series()
        stats: dict[str, Any] = {
            "writes": {"ok": ws.ok, "fail": ws.fail, "info": ws.info},
            "reads": sum(per_reader.values()),
            "reads_by_reader": per_reader,
            "drain_complete": drain.ended and not drain.incomplete,
            "drain": {"ended": drain.ended, "complete_flag": drain.flag,
                      "complete_partitions": drain.complete[:1000],
                      "incomplete_partitions": drain.incomplete[:1000]},
            "duration_s": round(duration, 3),
            "ack_rate_per_s": round(ws.ok / duration, 3) if duration > 0 else 0.0,
            "unavailable_s": longest,
            "unavailable_total_s": total,
            "errors": dict(sorted(ws.errors.items(), key=lambda kv: -kv[1])),
            "partition_changes": ctx.n_changes,
            "power_loss_covered_partitions": sorted(ctx.power),
            "events": len(ctx.events),
            "events_unparsed_lines": ctx.bad_lines,
        }
        return CheckResult(stats=stats,
                           extra={"timeseries": series} if series is not None else {})


# The order is the order of the unknown reasons; the row checks come before RowAnomalies,
# which collects their rows.
CHECKS = (RunFacts(), IdentityCheck(), ReorderCheck(), TornTransactionsCheck(), PositionsCheck(),
          RowAnomalies(), DivergenceCheck(), LivenessCheck(), ReconnectCheck(), FaultsCheck(),
          ProducersCheck(), ConsumersCheck(), TransactionsCheck(), PipelineCheck(),
          MechanismCheck(), StatsCheck())

# results.json's stats keys in their published order (each check adds its own).
STATS_ORDER = ("writes", "reads", "reads_by_reader", "drain_complete", "drain", "duration_s",
               "ack_rate_per_s", "unavailable_s", "unavailable_total_s", "errors", "faults",
               "transactions", "divergence", "partition_changes",
               "power_loss_covered_partitions", "events", "events_unparsed_lines")
