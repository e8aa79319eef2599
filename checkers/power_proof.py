"""The per-record power-loss proof (DESIGN.md §4): a lost write, a vanished read or a reused
offset is excused by a power loss only when every replica that was in the partition's ISR
from the record's acknowledgement (or first read) until the crash lost power in it, and the
record lay at or above each one's recovery point, which the power-loss event records per
node and partition directory (``detail.lost``: what the cut removed).

A replica that left the ISR after the record was acknowledged still held it; a replica the
cut removed nothing from kept it. Either one not hit means the loss is Kafka's, not the
crash's: not excused. Where only the ISR *at the crash* lost the record (the others had left
it), Kafka without Eligible Leader Replicas still elects the returning member and the others
truncate to it: that is KIP-966's design limitation, a known-bug fact
(``crash_isr_power_loss``), never a silent excuse. And where every replica of the ISR since
the record's start lost power, so none came back clean, Kafka elects the last known leader
rather than the longest log (unclean recovery, KIP-966's second part, is not built:
KAFKA-15580): when the replica elected first after the crash lost the record, a replica
that kept it truncates to it. That is a known-bug fact too (``elected_lost_power_loss``).

Both become one boolean column over anomaly rows: an OR of a few literal terms (partition,
time range of the record's start, lowest offset), one per distinct recovery bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from contract.events import Event
from contract.faults import POWER_LOSS

from .observations import POWER_LOSS_WINDOW_NS, PartitionHistory, node_ids

#: Beyond this many terms the proof gives up on the rest (not excused: the safe side).
MAX_TERMS = 4096

#: The kinds the proof can excuse, and the offset column each is about.
KINDS = ("lost", "vanished", "reused-offset")


@dataclass(frozen=True)
class Term:
    """A record of partition ``key`` whose start lies in [``from_ns``, ``crash_ns``] and whose
    offset is at least ``min_offset`` was lost by the crash at ``crash_ns``."""

    key: str  # "topic:partition"
    from_ns: int
    crash_ns: int
    min_offset: int


@dataclass(frozen=True)
class Crash:
    """Power losses within POWER_LOSS_WINDOW_NS of each other: one simultaneous crash."""

    ts_ns: int  # the first of them
    hit: frozenset[int]
    # node -> "topic:partition" -> that node's recovery point, for partitions the cut shortened
    recovery: dict[int, dict[str, int]]
    isr_before: dict[str, list[int]]


def _dir_key(name: str) -> str | None:
    topic, _, part = name.rpartition("-")
    return f"{topic}:{int(part)}" if topic and part.isdigit() else None


def crashes(events: list[Event]) -> list[Crash]:
    """The run's power losses grouped into simultaneous crashes, each with what it cut."""
    starts = sorted((e for e in events if e.kind == POWER_LOSS and e.phase in ("start", "instant")),
                    key=lambda e: e.ts_ns)
    groups: list[list[Event]] = []
    for e in starts:
        if groups and e.ts_ns - groups[-1][0].ts_ns <= POWER_LOSS_WINDOW_NS:
            groups[-1].append(e)
        else:
            groups.append([e])
    out: list[Crash] = []
    for group in groups:
        hit: set[int] = set()
        recovery: dict[int, dict[str, int]] = {}
        for e in group:
            hit |= node_ids(e.targets)
            lost = e.detail.get("lost")
            for node, parts in (lost.items() if isinstance(lost, dict) else ()):
                for name, cut in (parts.items() if isinstance(parts, dict) else ()):
                    key = _dir_key(str(name))
                    try:
                        rp = int(cut["recovery_point"])
                        removed = int(cut.get("removed_batches") or 0)
                    except (KeyError, TypeError, ValueError):
                        continue
                    if key is not None and removed > 0:
                        recovery.setdefault(int(node), {})[key] = rp
        isr = group[0].detail.get("isr_before")
        out.append(Crash(group[0].ts_ns, frozenset(hit), recovery,
                         isr if isinstance(isr, dict) else {}))
    return out


def _cut_keys(crash: Crash) -> list[str]:
    """The partitions ("topic:partition") the crash cut on some node, sorted."""
    return sorted({k for r in crash.recovery.values() for k in r})


def _bound(crash: Crash, key: str, members: set[int]) -> int | None:
    """The lowest offset every one of ``members`` lost in ``crash`` (None: one kept it)."""
    if not members or not members <= crash.hit:
        return None
    points = [crash.recovery.get(m, {}).get(key) for m in members]
    if any(p is None for p in points):
        return None
    return max(p for p in points if p is not None)


def _isr_at_crash(crash: Crash, parts: PartitionHistory, key: str) -> set[int]:
    recorded = crash.isr_before.get(key)
    if recorded:
        return {int(m) for m in recorded}
    state = parts.state_at(key, crash.ts_ns - 1)
    return set(state.isr) if state is not None else set()


def _isr_since(crash: Crash, parts: PartitionHistory, key: str) -> Iterator[tuple[int, set[int]]]:
    """Walking back from ``crash`` through the partition's observed ISR changes: (the
    change's time, every replica in the ISR from then until the crash). The set only grows.
    Before the first observation the ISR is unknown: nothing is yielded for it."""
    members = _isr_at_crash(crash, parts, key)
    for c in reversed([c for c in parts.by_tp.get(key, []) if c.ts_ns < crash.ts_ns]):
        members |= set(c.isr)
        yield c.ts_ns, set(members)


def proof_terms(crash_list: list[Crash], parts: PartitionHistory) -> list[Term]:
    """The terms of the full proof: as the ISR since a moment only grows going back, its
    bound only rises, until a member the crash did not cut (no term before that)."""
    terms: list[Term] = []
    for crash in crash_list:
        for key in _cut_keys(crash):
            last: Term | None = None
            for since_ns, members in _isr_since(crash, parts, key):
                bound = _bound(crash, key, members)
                if bound is None:
                    break
                if last is not None and last.min_offset == bound:
                    terms.pop()  # the same bound holds from this earlier change on
                last = Term(key, since_ns, crash.ts_ns, bound)
                terms.append(last)
    return terms[:MAX_TERMS]


def crash_isr_terms(crash_list: list[Crash], parts: PartitionHistory) -> list[Term]:
    """KIP-966's evidence: the whole ISR at the crash lost the record (any start before it)."""
    terms: list[Term] = []
    for crash in crash_list:
        for key in _cut_keys(crash):
            bound = _bound(crash, key, _isr_at_crash(crash, parts, key))
            if bound is not None:
                terms.append(Term(key, 0, crash.ts_ns, bound))
    return terms[:MAX_TERMS]


def _first_leader_after(parts: PartitionHistory, key: str, ts_ns: int) -> int | None:
    """The first leader the observer saw for the partition after ``ts_ns`` (None: none)."""
    for c in parts.between(key, ts_ns + 1, 2**63 - 1):
        if c.leader >= 0:
            return c.leader
    return None


def elected_lost_terms(crash_list: list[Crash], parts: PartitionHistory) -> list[Term]:
    """KAFKA-15580's evidence (no unclean recovery): every replica in the partition's ISR
    from the record's start until the crash lost power in it, so none came back clean, and
    the replica first elected after it, one of them, lost the record (at or above its own
    recovery point) while another may have kept it: Kafka elects the last known leader,
    not the longest log. The bound is the elected replica's alone."""
    terms: list[Term] = []
    for crash in crash_list:
        for key in _cut_keys(crash):
            leader = _first_leader_after(parts, key, crash.ts_ns)
            bound = crash.recovery.get(leader, {}).get(key) if leader is not None else None
            if bound is None or leader not in _isr_at_crash(crash, parts, key):
                continue
            earliest: int | None = None
            for since_ns, members in _isr_since(crash, parts, key):
                if not members <= crash.hit:
                    break
                earliest = since_ns
            if earliest is not None:
                terms.append(Term(key, earliest, crash.ts_ns, bound))
    return terms[:MAX_TERMS]


def record_start() -> Column:
    """When the record was last known on the ISR: its acknowledgement (lost), its first
    read or acknowledgement, whichever came first (vanished), its offset's first read
    (reused-offset)."""
    kind = F.col("kind")
    return (F.when(kind == "lost", F.col("complete_ns"))
            .when(kind == "vanished", F.least(F.col("complete_ns"), F.col("event_ns")))
            .when(kind == "reused-offset", F.col("event_ns")))


def record_offset() -> Column:
    """The offset the proof is about: the acknowledged one (lost), where it was read
    (vanished), the reused one."""
    return F.when(F.col("kind") == "vanished", F.col("read_offset")).otherwise(F.col("offset"))


def covered(terms: list[Term]) -> Column:
    """True on rows of :data:`KINDS` that one of ``terms`` proves lost by a crash."""
    if not terms:
        return F.lit(False)
    tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
    start, offset = record_start(), record_offset()
    out: Column = F.lit(False)
    for t in terms:
        out = out | ((tp == t.key) & (start >= F.lit(t.from_ns)) & (start <= F.lit(t.crash_ns))
                     & (offset >= F.lit(t.min_offset)))
    return F.col("kind").isin(*KINDS) & F.coalesce(out, F.lit(False))
