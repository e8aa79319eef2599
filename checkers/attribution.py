"""Fault attribution for examples: which faults were active when a record was acknowledged
and when it went missing, and what its partition's leader/ISR/epoch did around then."""

from __future__ import annotations

from typing import Any

from contract.events import INSTANT, PHASE, PRODUCER_EPOCH, REBALANCE, Event
from contract.windows import fault_windows

from .observations import PartitionHistory, tp_key
from .positions import rebalance_polls

#: Instant events (a kill, a restart) this close to a moment are reported with it.
INSTANT_WINDOW_NS = 5_000_000_000
#: Partition changes this long before the ack and after the loss are reported.
CHANGE_WINDOW_NS = 10_000_000_000
MAX_CHANGES_PER_EXAMPLE = 12
#: torn-transaction: faults this long before the transaction's first attempt are reported.
TXN_LOOKBACK_NS = 10_000_000_000

class Attributor:
    """Answers "what was going on" for a moment and a partition."""

    def __init__(self, events: list[Event], parts: PartitionHistory):
        self.faults = fault_windows(events)
        # rebalances and epoch changes are the clients' own events, not faults
        self.instants = [e for e in events if e.kind not in (PHASE, REBALANCE, PRODUCER_EPOCH)
                         and e.phase == INSTANT]
        self.parts = parts
        self.rebalances = rebalance_polls(events)

    def active(self, ts_ns: int | None) -> list[dict[str, Any]]:
        """Faults active at ``ts_ns`` and instant events within a few seconds of it."""
        if ts_ns is None:
            return []
        out = [f.brief() for f in self.faults if f.active_at(ts_ns)]
        for e in self.instants:
            if abs(e.ts_ns - ts_ns) <= INSTANT_WINDOW_NS:
                b = e.brief()
                b["seconds_from_moment"] = round((e.ts_ns - ts_ns) / 1e9, 3)
                out.append(b)
        return out

    def annotate(self, ex: dict[str, Any], kind: str) -> dict[str, Any]:
        """Add ``faults_at_ack``, ``missing_ns``, ``faults_at_missing`` and
        ``partition_changes`` to an example."""
        topic, part = ex.get("topic"), ex.get("partition")
        key = tp_key(topic, part) if topic is not None and part is not None else None
        ack = ex.get("complete_ns")
        missing = ex.get("event_ns")
        if kind in ("lost", "unseen") and key is not None and ack is not None:
            # The first leader/epoch change after the ack is when an unreplicated tail goes.
            change = self.parts.first_leadership_change_after(key, ack)
            missing = change.ts_ns if change is not None else None
        ex["faults_at_ack"] = self.active(ack)
        if kind == "torn-transaction" and ex.get("txn_invoke_ns") is not None:
            # the stale request that decided it was sent up to one transaction earlier
            lo, hi = ex["txn_invoke_ns"] - TXN_LOOKBACK_NS, missing or ack or ex["txn_invoke_ns"]
            ex["faults_during_txn"] = [f.brief() for f in self.faults if f.start_ns <= hi
                                       and (f.end_ns is None or f.end_ns >= lo)]
        ex["missing_ns"] = missing
        ex["faults_at_missing"] = self.active(missing)
        if key is not None:
            moments = [m for m in (ack, missing) if m is not None]
            if moments:
                changes = self.parts.between(key, min(moments) - CHANGE_WINDOW_NS,
                                             max(moments) + CHANGE_WINDOW_NS)
                ex["partition_changes"] = [c.brief() for c in changes[:MAX_CHANGES_PER_EXAMPLE]]
                before = self.parts.state_at(key, min(moments))
                if before is not None:
                    ex["partition_state"] = {"leader": before.leader, "isr": list(before.isr),
                                             "leader_epoch": before.leader_epoch}
        return ex
