"""The liveness kinds (contract.liveness): stuck-producer, stuck-consumer, hung-call.

The run opens a ``liveness`` phase after the final heal, once the brokers serve again; its
window is ``[start, min(end, start + bound)]``. The facts are read from the history, not
from the run's own bookkeeping:

- a producer is stuck when no write of it was acknowledged (``complete_ns``) in the window
  and the phase lasted the whole bound (one that attempted all the records the run's
  ``max_records`` asked of it had stopped by itself, with nothing left to send: not
  stuck); a producer that made no progress but whose process
  did not end cleanly (its unwritten rows may hold the acknowledgements), or a phase cut
  short before the bound, cannot tell: ``unknown`` for that producer. Except one that ended
  inside a call serving no delivery report, entered before the window and never returned
  (checkers/killed_in_call.py): it is stuck, and carries that hung call's facts, so a
  send_offsets_to_transaction that never returned names librdkafka#5511 here too;
- a consumer (an assign- or restart-mode reader; the readers of one subscribe-mode group
  together, since a member may rightly hold no partition) is stuck when it read nothing in
  the window while a partition it reads held a record above the highest offset it had read:
  one the drain read (still in the log, and visible to the drain's isolation level) whose
  write was acknowledged at least the slack before the window's end. A consumer at the log
  end is not stuck;
- a stuck consumer each of whose waiting partitions came in an assignment whose committed
  offsets were answered NOT_COORDINATOR as a whole, and was never read after, names
  librdkafka#5586 (checkers/offset_fetch.py);
- a stuck consumer that a poll-stall kept from polling past its max.poll.interval.ms and
  that then recorded a fatal INVALID_REQUEST names librdkafka#5541 (checkers/poll_stall.py);
- a hung call is one ``hung-call`` start event (the run wrote it while the call blocked);
  a send_offsets_to_transaction whose group's coordinator the run took down while it waited,
  its transaction's coordinator up, names librdkafka#5456 (#5511 when the group's stayed
  down past the session timeout; checkers/hung_calls.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.anomalies import LIVENESS_KINDS
from contract.events import CLIENT_LOG, END, PHASE, START
from contract.known_bugs import LEADER_UNKNOWN, NO_BROKERS_METADATA, KnownBug
from contract.liveness import LIVENESS_PHASE, SLACK_S
from contract.schemas import DRAIN_READER
from contract.settings import Settings

from .history import Event, exit_codes
from .hung_calls import tagged_hung_calls
from .killed_in_call import blocked_through, killed_in_calls
from .known import tag_known
from .offset_fetch import fetch_evidence, offset_fetch_fact
from .poll_stall import evidence, stall_facts

STUCK_PRODUCER, STUCK_CONSUMER, HUNG = LIVENESS_KINDS
#: How much shorter than the bound a phase may be (clock reads) and still count as whole.
_WHOLE_TOLERANCE_NS = 500_000_000


@dataclass
class Judged:
    """What the liveness check found: examples by kind, reasons it cannot tell, and the
    kinds it did not check (kind -> why)."""

    examples: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {k: [] for k in LIVENESS_KINDS})
    unknown: list[str] = field(default_factory=list)
    unchecked: dict[str, str] = field(default_factory=dict)

    def by_bug(self, kind: str) -> dict[str | None, tuple[int, int]]:
        """:func:`by_bug` of the kind's examples."""
        return by_bug(self.examples[kind])


def by_bug(examples: list[dict[str, Any]]) -> dict[str | None, tuple[int, int]]:
    """Known-bug id (None: none) -> (count, 0) of a client kind's examples (every instance
    is an example: the liveness kinds count clients and calls, not records)."""
    out: dict[str | None, tuple[int, int]] = {}
    for ex in examples:
        bug = (ex.get("known_bug") or {}).get("id")
        out[bug] = (out.get(bug, (0, 0))[0] + 1, 0)
    return out


@dataclass(frozen=True)
class Window:
    """The liveness phase as recorded: its window and whether it lasted the bound."""

    start_ns: int
    end_ns: int
    bound_s: float
    slack_s: float

    @property
    def hi_ns(self) -> int:
        return min(self.end_ns, self.start_ns + int(self.bound_s * 1e9))

    @property
    def whole(self) -> bool:
        return self.end_ns - self.start_ns >= self.bound_s * 1e9 - _WHOLE_TOLERANCE_NS

    def span(self) -> str:
        return f"{(self.hi_ns - self.start_ns) / 1e9:.1f} s after the heal"


def liveness_window(events: list[Event], bound_s: float) -> Window | str:
    """The recorded liveness phase, or why there is none to judge."""
    start = end = None
    for e in events:
        if e.kind == PHASE and e.name == LIVENESS_PHASE:
            if e.phase == START and start is None:
                start = e
            elif e.phase == END and start is not None:
                end = e
    if start is None:
        return "the history has no liveness phase: the run ended before its final heal"
    if end is None:
        return "the liveness phase has no end event: the run ended during it"
    slack = start.detail.get("slack_s")
    return Window(start.ts_ns, end.ts_ns, float(start.detail.get("bound_s") or bound_s),
                  float(slack) if isinstance(slack, int | float) else SLACK_S)


def _tag_stuck_clients(out: Judged, writes: DataFrame, reads: DataFrame, events: list[Event],
                       lo: int, hi: int,
                       known: Sequence[KnownBug], settings: Settings | None = None) -> None:
    """The facts of each stuck client, and the known bug they name.

    ``logged_leader_unknown`` (a producer): the
    client logged librdkafka#5430's line after its last acknowledgement before the window
    and by the window's end: a metadata update left one of its partitions without a
    leader, and nothing after that was acknowledged. ``logged_no_brokers`` (a producer or
    consumer): the client (a consumer: one of its readers) logged librdkafka#5301's
    metadata line after its last progress before the window (its last acknowledgement;
    its readers' last read) and by the window's end. ``offset_fetch_not_coordinator`` (a
    consumer): checkers/offset_fetch.py. A stuck consumer's poll-stall facts
    (checkers/poll_stall.py, librdkafka#5541) are its own readers'; an entry names it only
    when it affects the librdkafka its fatal errors name, too."""
    stalls = (evidence(events, settings)
              if settings is not None and out.examples[STUCK_CONSUMER] else {})
    last_read = {str(r["reader"]): int(r["t"]) for r in reads.where(
        F.col("reader") != DRAIN_READER).groupBy("reader").agg(
        F.max("read_ns").alias("t")).collect()} if stalls else {}
    last_ack = {str(r["producer"]): int(r["t"]) for r in writes.where(
        (F.col("outcome") == "ok") & (F.col("complete_ns") < lo)).groupBy("producer").agg(
        F.max("complete_ns").alias("t")).collect()} if out.examples[STUCK_PRODUCER] else {}
    logged: dict[str, dict[str, list[int]]] = {LEADER_UNKNOWN: {}, NO_BROKERS_METADATA: {}}
    for e in events:
        bug = e.detail.get("bug") if e.kind == CLIENT_LOG else None
        if bug in logged:
            logged[str(bug)].setdefault(str(e.detail.get("client")), []).append(e.ts_ns)
    fetches = fetch_evidence(events)
    last_read_tp = {(str(r["reader"]), f"{r['topic']}:{r['partition']}"): int(r["t"])
                    for r in reads.where(F.col("reader") != DRAIN_READER).groupBy(
                        "reader", "topic", "partition").agg(
                        F.max("read_ns").alias("t")).collect()} if (
        fetches.failed and out.examples[STUCK_CONSUMER]) else {}
    read_before = {str(r["reader"]): int(r["t"]) for r in reads.where(
        (F.col("reader") != DRAIN_READER) & (F.col("read_ns") < lo)).groupBy("reader").agg(
        F.max("read_ns").alias("t")).collect()} if logged[NO_BROKERS_METADATA] else {}

    def logged_since(bug: str, clients: list[str], after: dict[str, int]) -> bool:
        return any(after.get(c, -1) < t <= hi for c in clients
                   for t in logged[bug].get(c, []))

    for kind in (STUCK_PRODUCER, STUCK_CONSUMER):
        for ex in out.examples[kind]:
            name = str(ex["client"])
            facts: dict[str, bool] = {}
            here = known
            if kind == STUCK_PRODUCER:
                facts.update(ex.get("call_facts", {}))  # blocked in a hung call: its facts
                after = {name: last_ack.get(name[1:], -1)}
                facts["logged_leader_unknown"] = logged_since(LEADER_UNKNOWN, [name], after)
                facts["logged_no_brokers"] = logged_since(NO_BROKERS_METADATA, [name], after)
            else:
                facts["logged_no_brokers"] = logged_since(
                    NO_BROKERS_METADATA, [str(r) for r in ex["readers"]], read_before)
                facts["offset_fetch_not_coordinator"] = offset_fetch_fact(
                    fetches, ex, hi, last_read_tp)
            if kind == STUCK_CONSUMER and stalls and settings is not None:
                stall, versions = stall_facts(list(ex["readers"]), settings, stalls,
                                              last_read, hi)
                facts.update(stall)
                here = [b for b in known if b.component != "librdkafka"
                        or all(b.affects(v) for v in versions)]
            tag_known([ex], kind, facts, here)


def _counts(df: DataFrame, key: str) -> dict[str, int]:
    return {str(r[key]): int(r["n"]) for r in df.groupBy(key).agg(
        F.count(F.lit(1)).alias("n")).collect()}


def _waiting(writes: DataFrame, reads: DataFrame, cutoff_ns: int) -> dict[str, int]:
    """"topic:partition" -> the highest offset the drain read whose write was acknowledged
    by ``cutoff_ns``: a record every consumer of the partition should have read by then."""
    acked = (writes.where((F.col("outcome") == "ok") & (F.col("complete_ns") <= cutoff_ns))
             .select("producer", "seq").distinct())
    drained = reads.where(F.col("reader") == DRAIN_READER).select(
        "topic", "partition", "offset", "producer", "seq")
    rows = (drained.join(acked, ["producer", "seq"], "left_semi")
            .groupBy("topic", "partition").agg(F.max("offset").alias("o")).collect())
    return {f"{r['topic']}:{r['partition']}": int(r["o"]) for r in rows}


def _read_up_to(reads: DataFrame, hi_ns: int) -> dict[str, dict[str, int]]:
    """reader -> "topic:partition" -> the highest offset it read by ``hi_ns``."""
    out: dict[str, dict[str, int]] = {}
    for r in (reads.where((F.col("reader") != DRAIN_READER) & (F.col("read_ns") <= hi_ns))
              .groupBy("reader", "topic", "partition").agg(F.max("offset").alias("o"))
              .collect()):
        out.setdefault(str(r["reader"]), {})[f"{r['topic']}:{r['partition']}"] = int(r["o"])
    return out


def consumer_units(modes: dict[str, str], groups: dict[str, str | None]) -> dict[str, list[str]]:
    """What is judged as one consumer: each assign- or restart-mode reader alone, the
    readers of one subscribe-mode group together (named ``group <id>``)."""
    units: dict[str, list[str]] = {}
    for reader, mode in sorted(modes.items()):
        group = groups.get(reader)
        name = f"group {group}" if mode == "subscribe" and group else reader
        units.setdefault(name, []).append(reader)
    return units


def _finished(writes: DataFrame, max_records: int) -> set[str]:
    """The producers that attempted every record ``max_records`` asked of them (seqs count
    from 0): they stopped by themselves."""
    if max_records <= 0:
        return set()
    return {str(r["producer"]) for r in writes.groupBy("producer").agg(
        F.max("seq").alias("last")).where(F.col("last") >= max_records - 1).collect()}


def judge(events: list[Event], writes: DataFrame, reads: DataFrame, bound_s: float | None,
          modes: dict[str, str], groups: dict[str, str | None],
          known: Sequence[KnownBug] = (), session_timeout_s: float = 9.0,
          settings: Settings | None = None) -> Judged:
    """The liveness facts of one run (``bound_s``: run.json's workload.liveness_s); stuck
    clients and hung calls carry the known bug whose facts hold (``known``: the registry
    entries that apply to the run,
    checkers.known.applicable; ``session_timeout_s``: the brokers' session timeout;
    ``settings``: the run's, for the per-reader facts of a poll-stall)."""
    out = Judged()
    out.examples[HUNG], hung_facts = tagged_hung_calls(events, session_timeout_s, known)
    if bound_s is None:
        why = "the run was recorded before liveness was checked"
        out.unchecked = dict.fromkeys(LIVENESS_KINDS, why)
        return out
    if bound_s <= 0:
        out.unchecked = dict.fromkeys((STUCK_PRODUCER, STUCK_CONSUMER),
                                      "the run had no liveness phase (liveness 0)")
        return out
    window = liveness_window(events, bound_s)
    if isinstance(window, str):
        out.unchecked = dict.fromkeys((STUCK_PRODUCER, STUCK_CONSUMER), window)
        out.unknown.append(f"liveness cannot be told: {window}")
        return out
    lo, hi = window.start_ns, window.hi_ns
    p_exits, c_exits = exit_codes(events)
    acks = _counts(writes.where((F.col("outcome") == "ok") & F.col("complete_ns").between(lo, hi)),
                   "producer")
    finished = _finished(writes, settings.max_records if settings else 0)
    killed = killed_in_calls(events, p_exits)
    for name in sorted(set(p_exits) | {f"p{p}" for p in acks}):
        if acks.get(name[1:], 0) or name[1:] in finished:
            continue
        call = killed.get(name)
        if window.whole and call is not None and blocked_through(call, lo):
            # blocked in one call through the window: no acknowledgement could be recorded
            out.examples[STUCK_PRODUCER].append({
                "client": name, "window_ns": [lo, hi],
                "blocked_in": {"call": call.call, "since_ns": call.since_ns},
                "call_facts": hung_facts.get((name, call.since_ns), {}),
                "summary": f"{name} got no acknowledgement in the {window.span()}: blocked "
                           f"in {call.call}() from before it, never returned"})
            continue
        if cannot := _cannot_tell(name, p_exits.get(name), window):
            out.unknown.append(cannot)
            continue
        out.examples[STUCK_PRODUCER].append({
            "client": name, "window_ns": [lo, hi],
            "summary": f"{name} got no acknowledgement in the {window.span()}"})
    read = _counts(reads.where((F.col("reader") != DRAIN_READER)
                               & F.col("read_ns").between(lo, hi)), "reader")
    idle = {u: rs for u, rs in consumer_units(modes, groups).items()
            if not any(read.get(r, 0) for r in rs)}
    if idle:
        waiting = _waiting(writes, reads, hi - int(window.slack_s * 1e9))
        upto = _read_up_to(reads, hi)
        for unit, readers in sorted(idle.items()):
            behind = {tp: o for tp, o in sorted(waiting.items())
                      if o > max((upto.get(r, {}).get(tp, -1) for r in readers), default=-1)}
            if not behind:
                continue  # at the log end: nothing to read
            codes = [_cannot_tell(r, c_exits.get(r), window) for r in readers]
            if any(codes):
                out.unknown.extend(c for c in codes if c)
                continue
            if outwaits := _session_outwaits(unit, readers, modes, settings, window):
                out.unknown.append(outwaits)
                continue
            out.examples[STUCK_CONSUMER].append({
                "client": unit, "readers": readers, "window_ns": [lo, hi],
                "behind": {tp: {"read_up_to": max((upto.get(r, {}).get(tp, -1)
                                                   for r in readers), default=-1),
                                "acknowledged_up_to": o} for tp, o in behind.items()},
                "summary": f"{unit} read nothing in the {window.span()} while "
                        f"{len(behind)} partition(s) held acknowledged records it had not "
                        f"read (e.g. {next(iter(behind))} up to offset "
                        f"{next(iter(behind.values()))})"})
    if out.examples[STUCK_PRODUCER] or out.examples[STUCK_CONSUMER]:
        _tag_stuck_clients(out, writes, reads, events, lo, hi, known, settings)
    return out


def _session_outwaits(unit: str, readers: list[str], modes: dict[str, str],
                      settings: Settings | None, window: Window) -> str | None:
    """Why a KIP-848 group consumer that read nothing cannot be called stuck, or None: a
    member whose leave was lost in a fault keeps its partitions until the brokers'
    group.consumer.session.timeout.ms (re-armed when the coordinator moves), and a bound
    that does not outlast it (with the slack to read) proves nothing."""
    if settings is None or not any(
            modes.get(r) in ("subscribe", "restart") and settings.group_protocol(r) == "consumer"
            for r in readers):
        return None
    timeout = settings.group_session_timeout_s
    if timeout + window.slack_s < window.bound_s:
        return None
    return (f"liveness of {unit} cannot be told: a KIP-848 group member whose leave was lost "
            f"keeps its partitions for the brokers' group.consumer.session.timeout.ms "
            f"({timeout:g} s), which the bound of {window.bound_s:g} s does not outlast "
            f"(with its {window.slack_s:g} s slack)")


def _cannot_tell(name: str, exitcode: Any, window: Window) -> str | None:
    """Why a client that showed no progress cannot be called stuck, or None."""
    if exitcode is not None and exitcode != 0:
        return (f"liveness of {name} cannot be told: its process ended with exit code "
                f"{exitcode}, so its history may miss what it did in the liveness phase")
    if not window.whole:
        return (f"liveness of {name} cannot be told: the liveness phase ended after "
                f"{(window.end_ns - window.start_ns) / 1e9:.1f} s, before its bound of "
                f"{window.bound_s:g} s")
    return None
