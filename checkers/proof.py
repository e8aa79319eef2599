"""What a run must show before its verdict can be trusted (DESIGN.md §4, "nothing passes
vacuously"): the divergence check ran when it was asked for, the fault schedule hit the
cluster, and a transactional run learned the outcome of its transactions.

Each check returns the facts for results.json and, when the run cannot prove something it
claims to test, one reason that makes the verdict ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.events import COLLECT_ERROR, END, FAULT_ERROR, PHASE
from contract.faults import FAULT_KINDS

from .history import Event

#: Event kinds a fault records when it starts (the registry's kinds). Their ends and restarts
#: (start, resume, heal) are not new faults.
FAULT_EVENT_KINDS = frozenset(FAULT_KINDS)
NOT_CHECKED = "not checked"
MAX_ERRORS_LISTED = 20


@dataclass(frozen=True)
class DivergenceStatus:
    """Whether the replicas' logs were compared, and why not when they were not."""

    checked: bool
    reason: str | None = None  # why not checked; None when checked
    unknown: str | None = None  # the verdict's reason when the check was asked for


def _asked_for_data(run_cfg: dict[str, Any]) -> bool:
    options = run_cfg.get("options")
    return isinstance(options, dict) and bool(options.get("collect_data"))


def divergence_status(run_cfg: dict[str, Any], events: list[Event], compared: bool,
                      note: str = "") -> DivergenceStatus:
    """``compared``: the divergence reader found ``logs/data``.

    A run asked for the replicas' data when run.json's ``options.collect_data`` is true or
    the run recorded a ``collect-error``. A failed copy, or data asked for and absent (the
    run crashed before copying), leaves the check undone: ``unknown``. A run that did not
    ask and has no data says "not checked" and its verdict does not depend on it.
    """
    errors = [e for e in events
              if e.kind == COLLECT_ERROR and e.detail.get("what", "data") == "data"]
    if errors:
        what = "; ".join(f"{e.detail.get('node', '?')}: {e.detail.get('error', '?')}"
                         for e in errors[:MAX_ERRORS_LISTED])
        reason = f"the copy of the replicas' data failed ({what})"
        return DivergenceStatus(False, reason, f"divergence not checked: {reason}")
    if compared:
        return DivergenceStatus(True)
    if _asked_for_data(run_cfg):
        reason = ("the replicas' data was asked for but logs/data is absent (the run ended "
                  "before copying it)")
        return DivergenceStatus(False, reason, f"divergence not checked: {reason}")
    return DivergenceStatus(False, NOT_CHECKED + (f": {note}" if note else ""))


@dataclass
class FaultCounts:
    """Faults that took effect (start events) and faults whose start failed."""

    applied: int = 0
    errors: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    error_examples: list[dict[str, Any]] = field(default_factory=list)

    def stats(self) -> dict[str, Any]:
        return {"applied": self.applied, "errors": self.errors, "by_kind": self.by_kind,
                "error_examples": self.error_examples}


def fault_counts(events: list[Event]) -> FaultCounts:
    """Counts start/instant events of fault kinds and ``fault-error`` events."""
    out = FaultCounts()
    for e in events:
        if e.kind == FAULT_ERROR:
            out.errors += 1
            if len(out.error_examples) < MAX_ERRORS_LISTED:
                out.error_examples.append({"ts_ns": e.ts_ns, **e.detail})
        elif e.kind in FAULT_EVENT_KINDS and e.phase in ("start", "instant"):
            out.applied += 1
            out.by_kind[e.kind] = out.by_kind.get(e.kind, 0) + 1
    return out


def faults_asked(run_cfg: dict[str, Any]) -> bool:
    """The schedule asked for faults: random kinds listed, or a scripted scenario."""
    faults = run_cfg.get("faults")
    if not isinstance(faults, dict):
        return False
    if faults.get("schedule") == "scripted":
        return True
    return bool(faults.get("kinds"))


def faults_unknown(run_cfg: dict[str, Any], counts: FaultCounts) -> str | None:
    """The reason a run that asked for faults and got none proves nothing about them."""
    if not faults_asked(run_cfg) or counts.applied:
        return None
    tail = f" ({counts.errors} fault starts failed)" if counts.errors else ""
    return f"no fault took effect: the schedule asked for faults and none was applied{tail}"


def transaction_outcomes(writes: DataFrame) -> dict[str, int]:
    """Distinct transactions by outcome (committed / aborted / unknown); one small
    aggregation. A transaction whose writes disagree counts under its strongest outcome."""
    rank = (F.when(F.col("txn_outcome") == "committed", 2)
            .when(F.col("txn_outcome") == "aborted", 1).otherwise(0))
    rows = (writes.where(F.col("txn").isNotNull()).groupBy("txn")
            .agg(F.max(rank).alias("r")).groupBy("r").count().collect())
    names = {2: "committed", 1: "aborted", 0: "unknown"}
    out = {"committed": 0, "aborted": 0, "unknown": 0}
    for r in rows:
        out[names[int(r["r"])]] += int(r["count"])
    total = sum(out.values())
    # the share a scenario may bound (expect.stats "transactions.unknown_percent": "<=20")
    out["unknown_percent"] = round(100 * out["unknown"] / total) if total else 0
    return out


def transactions_unknown(transactional: bool, outcomes: dict[str, int]) -> str | None:
    """A transactional run that learned no transaction's outcome proves nothing."""
    if not transactional:
        return None
    total = outcomes["committed"] + outcomes["aborted"] + outcomes["unknown"]
    if total and outcomes["committed"] == 0 and outcomes["aborted"] == 0:
        return (f"the outcome of every transaction is unknown ({total}): the run shows "
                "nothing about transactions")
    return None


def producers_unknown(events: list[Event]) -> str | None:
    """The reason a producer process that did not end cleanly leaves the verdict open.

    A producer writes an attempt's row when its delivery report arrives and the rest at its
    end; one that crashed or was killed (exit code other than 0 in the workload's end event)
    took the attempts it still held with it. Records of those attempts read later would look
    unexpected, and acknowledgements never recorded prove nothing, so the verdict cannot rest
    on its history. A run without a workload end event (it crashed) is unknown already."""
    bad: list[str] = []
    for e in events:
        if e.kind == PHASE and e.phase == END and e.name == "workload":
            producers = e.detail.get("producers")
            if not isinstance(producers, dict):
                continue
            for name, st in sorted(producers.items()):
                # no exitcode: a history written before it was recorded (nothing known)
                if isinstance(st, dict) and "exitcode" in st and st["exitcode"] != 0:
                    bad.append(f"{name} (exit code {st['exitcode']})")
    if not bad:
        return None
    return ("producer process(es) did not end cleanly, so their history may miss attempts: "
            + ", ".join(bad))
