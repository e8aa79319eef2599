"""What a run must show before its verdict can be trusted (DESIGN.md §4, "nothing passes
vacuously"): the divergence check ran when it was asked for and compared every copy, the
fault schedule hit the cluster, a transactional run learned the outcome of its transactions,
the drain finished every partition holding acknowledged writes, and every configured
process ended cleanly and every consumer read what it was given.

Each check returns the facts for results.json and, when the run cannot prove something it
claims to test, one reason that makes the verdict ``unknown``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.events import COLLECT_ERROR, CONSUMERS_STOPPED, END, FAULT_ERROR, PHASE, REBALANCE
from contract.faults import FAULT_KINDS
from contract.settings import Settings

from .history import Event, exit_codes
from .killed_in_call import killed_in_calls, readers_miss_open_transactions

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


def _short_copies(copies: dict[str, int], partitions: list[str], rf: int) -> list[str]:
    """The partitions (written ones, and every one found in logs/data) with fewer than
    ``rf`` copies, as "t:0 (2 copies)"."""
    keys = sorted(set(copies) | set(partitions))
    return [f"{k} ({copies.get(k, 0)} cop{'y' if copies.get(k, 0) == 1 else 'ies'})"
            for k in keys if copies.get(k, 0) < rf]


def divergence_status(run_cfg: dict[str, Any], events: list[Event], compared: bool,
                      note: str = "", offsets_compared: int = 0,
                      copies: dict[str, int] | None = None,
                      replication_factor: int | None = None,
                      partitions: list[str] | None = None) -> DivergenceStatus:
    """``compared``: the divergence reader found ``logs/data``; ``offsets_compared``,
    ``copies`` ("topic:partition" -> replicas found): what it looked at; ``partitions``:
    those the run wrote acknowledged records to.

    A run asked for the replicas' data when run.json's ``options.collect_data`` is true or
    the run recorded a ``collect-error``. A failed copy, or data asked for and absent (the
    run crashed before copying), leaves the check undone: ``unknown``. A run that did not
    ask and has no data says "not checked" and its verdict does not depend on it.

    Data found proves nothing by being there: when no offset was compared, or a partition
    has fewer copies than ``replication_factor`` (2 when run.json does not say) — a replica
    whose copy is missing could be the one that diverged — the check is undone and the
    verdict ``unknown``. At replication factor 1 there is no second copy: nothing can
    diverge, so "not checked" without touching the verdict.
    """
    errors = [e for e in events
              if e.kind == COLLECT_ERROR and e.detail.get("what", "data") == "data"]
    if errors:
        what = "; ".join(f"{e.detail.get('node', '?')}: {e.detail.get('error', '?')}"
                         for e in errors[:MAX_ERRORS_LISTED])
        reason = f"the copy of the replicas' data failed ({what})"
        return DivergenceStatus(False, reason, f"divergence not checked: {reason}")
    if compared:
        rf = replication_factor if replication_factor is not None else 2
        if rf == 1:
            return DivergenceStatus(False, "replication.factor 1: one copy of each partition, "
                                           "nothing to compare")
        short = _short_copies(copies or {}, partitions or [], rf)
        if short:
            reason = (f"fewer copies than replication.factor {rf} of {len(short)} partition"
                      f"{'' if len(short) == 1 else 's'}: "
                      + ", ".join(short[:MAX_ERRORS_LISTED])
                      + (", ..." if len(short) > MAX_ERRORS_LISTED else ""))
            return DivergenceStatus(False, reason, f"divergence not checked: {reason}")
        if offsets_compared == 0:
            reason = "no offset of any replica was compared"
            return DivergenceStatus(False, reason, f"divergence not checked: {reason}")
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


def _unclean_exits(stats: Any, but: Iterable[str] = ()) -> list[str]:
    """"name (exit code N)" of each process whose recorded exit code is not 0, but those
    named in ``but``."""
    bad: list[str] = []
    if not isinstance(stats, dict):
        return bad
    for name, st in sorted(stats.items()):
        # no exitcode: a history written before it was recorded (nothing known)
        if isinstance(st, dict) and "exitcode" in st and st["exitcode"] != 0 \
                and name not in but:
            bad.append(f"{name} (exit code {st['exitcode']})")
    return bad


def producers_unknown(events: list[Event], settings: Settings,
                      readers: Iterable[str] = ()) -> tuple[str | None, list[str]]:
    """The reason a producer process that did not end cleanly leaves the verdict open, and
    the producers whose unclean end is proved harmless (their summaries).

    A producer writes an attempt's row when its delivery report arrives and the rest at its
    end; one that crashed or was killed (exit code other than 0 in the workload's end event)
    took the attempts it still held with it. Records of those attempts read later would look
    unexpected, and acknowledgements never recorded prove nothing, so the verdict cannot rest
    on its history. A run without a workload end event (it crashed) is unknown already.
    Harmless: a process that ended inside a call it entered with its rows written, when no
    reader (``readers``: those that read) could be served its open transaction
    (checkers/killed_in_call.py)."""
    killed = killed_in_calls(events, exit_codes(events)[0])
    reader = readers_miss_open_transactions(settings, readers)
    proved = sorted(killed) if reader is None else []
    bad = [b for e in events if e.kind == PHASE and e.phase == END and e.name == "workload"
           for b in _unclean_exits(e.detail.get("producers"), proved)]
    summaries = [killed[name].summary() for name in proved]
    if not bad:
        return None, summaries
    extra = (f" ({', '.join(sorted(killed))} ended in a call entered with their rows written, "
             f"but {reader} reads read_uncommitted: it could be served their open "
             "transaction)") if killed and reader is not None else ""
    return ("producer process(es) did not end cleanly, so their history may miss attempts: "
            + ", ".join(bad) + extra), summaries


def consumers_unknown(events: list[Event]) -> str | None:
    """The reason a consumer process that did not end cleanly leaves the verdict open.

    The orchestrator records the consumers' exit codes when it stops them (a
    ``consumers-stopped`` event, after the drain). A consumer that crashed or was killed
    took its unwritten reads with it, and one that died early read nothing after: what it
    did not record cannot show a skip, a backward step or a record that vanished later. A
    history without the event (written before exits were recorded) says nothing here."""
    bad = [b for e in events if e.kind == CONSUMERS_STOPPED
           for b in _unclean_exits(e.detail.get("consumers"))]
    if not bad:
        return None
    return ("consumer process(es) did not end cleanly, so their reads may be missing from the "
            "history: " + ", ".join(bad))


def _given_partitions(reader: str, mode: str, spec: dict[str, Any], topic: str | None,
                      written: list[str], events: list[Event]) -> tuple[dict[str, int], str]:
    """The partitions a configured consumer was given (each with when it first was: a
    ``ts_ns``, 0 for "from the start"), and how to name it.

    ``assign``: its spec's ``partitions`` (ints of the run's topic, or "topic:partition"),
    else every written partition. A group member (``subscribe``, ``restart``): every
    partition its ``assigned`` / ``restart`` rebalance events name; one that recorded no
    assignment at all never joined the group, so all the written partitions were its to
    read (an empty assignment is recorded, and gives it none)."""
    if mode == "assign":
        parts = spec.get("partitions")
        if isinstance(parts, list):
            return {p if isinstance(p, str) else f"{topic}:{p}": 0 for p in parts}, mode
        return dict.fromkeys(written, 0), mode
    given: dict[str, int] = {}
    joined = False
    for e in sorted(events, key=lambda e: e.ts_ns):
        if (e.kind == REBALANCE and e.detail.get("reader") == reader
                and e.detail.get("what") in ("assigned", "restart")):
            joined = True
            for p in e.detail.get("partitions") or []:
                given.setdefault(str(p), e.ts_ns)
    if not joined:
        return dict.fromkeys(written, 0), f"{mode}, never assigned"
    return dict(sorted(given.items())), mode


def _group_of(spec: dict[str, Any], mode: str) -> str | None:
    """The consumer group a configured consumer read in: a test body's member names its
    ``group_id``; the built-in workload's ``subscribe`` members share one group and each
    ``restart`` reader is alone in its own; an ``assign`` reader is in none."""
    if mode == "assign":
        return None
    if spec.get("group_id"):
        return str(spec["group_id"])
    return "workload" if mode == "subscribe" else f"restart:{spec['id']}"


def _group_covers(partition: str, since: int, others: list[str],
                  last_read_ns: dict[str, dict[str, int]], last_ok: int | None,
                  read_to: dict[str, dict[str, int]]) -> bool:
    """Whether another member of a silent member's group covers its silence on a
    partition: one read a record of it at or after ``since`` (when the silent one was
    first given it), or one read it up to its last acknowledged write (``last_ok``)."""
    return any(last_read_ns.get(m, {}).get(partition, -1) >= since
               or (last_ok is not None and read_to.get(m, {}).get(partition, -1) >= last_ok)
               for m in others)


def consumers_idle(run_cfg: dict[str, Any], events: list[Event], ok_by_partition: dict[str, int],
                   last_read_ns: dict[str, dict[str, int]], *, ok_last_offset: dict[str, int],
                   read_to: dict[str, dict[str, int]]) -> str | None:
    """The reason a configured consumer that read nothing leaves the verdict open.

    Each consumer that run.json's ``workload.consumers`` lists was given partitions
    (``_given_partitions``). An ``assign`` consumer reads each of its own from the
    beginning, so it must have read at least one record of each that holds acknowledged
    writes; a group member may hold a partition for a moment with nothing new in it, so it
    must have read something when any of its partitions holds acknowledged writes (so must
    a test body's own assign consumer, ``workload.source: "user"``, whose partitions
    run.json does not list). A consumer that did not shows nothing of what consumers see (a
    skip, a backward step, a record read and gone later), and its silence is no proof they
    are fine. A group member that read nothing is covered, partition by partition, by
    another member of its group that read a record of the partition after the silent one
    was first given it: the group read on where that member did not (as a restarting
    service's incarnation that crashed before its first fetch); or by another member that
    read the partition's last acknowledged write (``ok_last_offset``, ``read_to``: the
    highest offset each reader read): nothing acknowledged was left there that its group
    had not read (as an incarnation given a partition its group had copied to the end, then
    restarted before a first fetch). Judged from the history alone: reads per reader and
    partition against the acknowledged writes of the partitions it was assigned or
    subscribed to."""
    workload = run_cfg.get("workload")
    specs = workload.get("consumers") if isinstance(workload, dict) else None
    if not isinstance(specs, list):
        return None
    topic = workload.get("topic") if isinstance(workload, dict) else None
    user = isinstance(workload, dict) and workload.get("source") == "user"
    written = sorted(ok_by_partition)
    members: dict[str, list[str]] = {}
    for spec in specs:
        if isinstance(spec, dict) and "id" in spec:
            group = _group_of(spec, str(spec.get("mode") or "subscribe"))
            if group is not None:
                members.setdefault(group, []).append(str(spec["id"]))
    idle: list[str] = []
    for spec in specs:
        if not isinstance(spec, dict) or "id" not in spec:
            continue
        reader = str(spec["id"])
        mode = str(spec.get("mode") or "subscribe")
        parts, label = _given_partitions(reader, mode, spec, topic, written, events)
        if user and mode != "assign" and label.endswith("never assigned"):
            # a test body's own group member that never joined (an application's consumer
            # closed or crashed before its first assignment, as a restarting service's
            # incarnations do) was given no partition the history knows of
            continue
        seen = last_read_ns.get(reader, {})
        # A group member may hold a partition for a moment with nothing new in it; a test
        # body's own assign consumer (workload.source "user") chose partitions run.json
        # does not list: for both, reading anything at all is enough.
        whole = mode != "assign" or ("partitions" not in spec and user)
        if whole and seen:
            continue
        group = _group_of(spec, mode)
        others = [m for m in members.get(group, []) if m != reader] if group else []
        missed = [f"{p} ({ok_by_partition[p]} acknowledged)" for p, since in parts.items()
                  if ok_by_partition.get(p) and p not in seen
                  and not (label == mode and _group_covers(p, since, others, last_read_ns,
                                                           ok_last_offset.get(p), read_to))]
        if missed:
            idle.append(f"{reader} ({label}) " + ", ".join(missed[:MAX_ERRORS_LISTED])
                        + (", ..." if len(missed) > MAX_ERRORS_LISTED else ""))
    if not idle:
        return None
    return ("consumer(s) read nothing of partitions holding acknowledged writes they were "
            "given: " + ", ".join(idle))


def drain_unknown(incomplete: list[str], ok_by_partition: dict[str, int],
                  unseen: int) -> str | None:
    """The reason partitions the final drain did not read completely leave the verdict open.

    ``unseen`` acknowledged writes nobody read are one reason. But a partition the drain did
    not finish that holds acknowledged writes is not known to hold them still even when a
    live consumer read every one of them: the record it read may have vanished since (a
    truncation after the read), and only the drain reads the final log."""
    if unseen:
        return (f"{unseen} acknowledged writes are unseen in partitions the drain did not read "
                f"completely: {incomplete[:20]}")
    parts = [p for p in incomplete if ok_by_partition.get(p)]
    if not parts:
        return None
    return (f"the drain did not read {len(parts)} partition{'' if len(parts) == 1 else 's'} "
            f"holding acknowledged writes completely, so the records read there are not known "
            f"to be in the log still: {parts[:20]}")
