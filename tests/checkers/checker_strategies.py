"""Hypothesis strategies that draw whole histories (writes, reads, the drain's reach,
rebalances) decision by decision, so a failing property shrinks to a small
literal history: every choice shrinks towards the plain case (append, read, no trouble)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

TPS: tuple[tuple[str, int], ...] = (("a", 0), ("a", 1), ("b", 0))
READERS = (("c0", "assign"), ("c1", "subscribe"), ("c2", "subscribe"))
#: The consumer group of the subscribe-mode readers (Settings.consumer_group).
GROUP = "g"


@dataclass
class Drawn:
    """A drawn history, in the shapes the reference and the Spark checker take."""

    writes: list[dict[str, Any]] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)
    complete: set[str] = field(default_factory=set)
    rebalances: dict[tuple[str, str, int], list[int]] = field(default_factory=dict)

    def spark_rebalances(self) -> dict[tuple[str, str, int], list[tuple[int, str]]]:
        return {k: [(p, "assigned") for p in v] for k, v in self.rebalances.items()}


def _read(reader: str, mode: str, poll: int, ns: int, tp: tuple[str, int], off: int,
          rec: tuple[int | None, int | None, bool]) -> dict[str, Any]:
    p, s, valid = rec
    return {"reader": reader, "mode": mode, "poll": poll, "read_ns": ns, "topic": tp[0],
            "partition": tp[1], "offset": off, "producer": p, "seq": s, "valid": valid}


@st.composite
def histories(draw: st.DrawFn, max_writes: int = 20) -> Drawn:
    """One history; small ones first (shrinking removes writes and trouble)."""
    h = Drawn()
    logs: dict[tuple[str, int], list[tuple[int | None, int | None, bool]]] = {
        tp: [] for tp in TPS}
    t = 1_000_000
    for i in range(draw(st.integers(0, max_writes))):
        producer = draw(st.integers(0, 2))
        tp = draw(st.sampled_from(TPS))
        outcome = draw(st.sampled_from(["ok", "info", "fail"]))
        txn = draw(st.sampled_from([None, "committed", "aborted", "unknown"]))
        lands = draw(st.sampled_from([True, False]))
        log = logs[tp]
        offset = None
        if lands:
            pos = len(log)
            if draw(st.sampled_from(["append", "insert"])) == "insert":
                pos = draw(st.integers(0, len(log)))  # stored before earlier records
            log.insert(pos, (producer, i, True))
            offset = pos
            if draw(st.sampled_from([False, True])):
                log.append((producer, i, True))  # a second copy
        stray = draw(st.sampled_from([None, "no-attempt", "undecodable"]))
        if stray == "no-attempt":
            log.append((draw(st.integers(0, 2)), 1000 + i, True))
        elif stray == "undecodable":
            log.append((None, None, False))
        reported = draw(st.sampled_from(["exact", "none", "other"]))
        if offset is not None and reported != "exact":
            offset = None if reported == "none" else draw(st.integers(0, 30))
        t += 1_000_000
        h.writes.append({"op_id": i, "producer": producer, "seq": i, "topic": tp[0],
                         "partition": tp[1], "invoke_ns": t, "complete_ns": t + 500_000,
                         "outcome": outcome, "offset": offset if outcome == "ok" else None,
                         "error": None, "txn": "x" if txn else None, "txn_outcome": txn})
    ns = 50_000_000
    for tp, log in logs.items():
        for off, rec in enumerate(log):
            if draw(st.sampled_from([True, False])):
                ns += 1
                h.reads.append(_read("drain", "drain", 0, ns, tp, off, rec))
        if draw(st.sampled_from([True, False])):
            h.complete.add(f"{tp[0]}:{tp[1]}")
        for reader, mode in READERS:
            off, poll = 0, 0
            for step in draw(st.lists(st.sampled_from([1, 2, 3, -1, 0]), max_size=12)):
                if off >= len(log):
                    break
                rec = log[off]
                if draw(st.sampled_from([False, True])):  # saw another record here
                    rec = (draw(st.integers(0, 2)), draw(st.integers(0, max_writes + 2)), True)
                ns += 1
                h.reads.append(_read(reader, mode, poll, ns, tp, off, rec))
                poll += draw(st.sampled_from([1, 0]))
                off = max(0, off + step)
    for reader, tp, poll in draw(st.lists(st.tuples(
            st.sampled_from(("c1", "c2")), st.sampled_from(TPS), st.integers(0, 12)),
            max_size=3)):
        h.rebalances.setdefault((reader, tp[0], tp[1]), []).append(poll)
    h.rebalances = {k: sorted(v) for k, v in h.rebalances.items()}
    return h
