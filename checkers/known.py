"""Known bugs on anomaly rows: the facts of contract/known_bugs.py as Spark columns, and
the column naming the first registry entry that explains each row (no Python UDF: a
condition is an AND of fact columns)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from contract.anomalies import ANOMALIES, CALL, CLIENT
from contract.events import END, Event
from contract.held_requests import HELD_END_TXN
from contract.known_bugs import KNOWN_BUGS, KnownBug, known_bug
from contract.settings import Settings
from contract.windows import fault_windows

from .batch_ids import same_ids
from .fresh_ids import fresh_head, moved_during
from .history import rebalances_of
from .power_proof import Term, covered
from .rereads import rise_before_reread
from .stalled import elected_between

#: Known-bug id -> the anomaly kinds it explains.
EXPLAINS: dict[str, tuple[str, ...]] = {b.id: b.kinds for b in KNOWN_BUGS}


@dataclass(frozen=True)
class KnownInputs:
    """What the facts need besides the anomaly rows."""

    settings: Settings
    # power_proof.crash_isr_terms: the whole ISR at a crash lost the record
    crash_isr: list[Term] = field(default_factory=list)
    # power_proof.elected_lost_terms: every ISR member since the record's start lost power
    # and the replica elected first after the crash lost the record
    elected_lost: list[Term] = field(default_factory=list)
    # fresh_producer_id_head (checkers/fresh_ids.py): producer -> its clients' first seqs,
    # and "producer:topic:partition:start" -> that client's first seq acked with an offset
    client_starts: dict[int, list[int]] = field(default_factory=dict)
    first_offset_acks: dict[str, int] = field(default_factory=dict)
    # ... and "topic:partition" -> times of power losses that cut its log (the keys
    # "producer:topic:partition:cut<ns>" of first_offset_acks count from those)
    state_cuts: dict[str, list[int]] = field(default_factory=dict)
    # fresh_ids.leader_moves: "topic:partition" -> when a new leader was first observed
    leader_moves: dict[str, list[int]] = field(default_factory=dict)
    # (transactional id, start_ns, end_ns): a hold fault held an EndTxn of that producer
    # (held_end_txns)
    held_end_txn: list[tuple[str, int, int]] = field(default_factory=list)
    # "reader:topic:partition" -> the polls of that reader's recorded restarts of it
    # (restart_polls)
    restarts: dict[str, list[int]] = field(default_factory=dict)
    # "topic:partition" keys whose stuck last stable offset (stalled.py) an unclean election
    # of the partition followed the decided transaction there
    unclean_stalls: list[str] = field(default_factory=list)
    # stalled.unclean_elections: "topic:partition" -> when a replica outside the last ISR
    # was first seen leading it
    unclean: dict[str, list[int]] = field(default_factory=dict)
    # marker_resume.resumed_after_marker: "reader:topic:partition:offset" of a restart-mode
    # reader's first read after a restart, right after an offset holding no record
    marker_resumptions: list[str] = field(default_factory=list)
    # rereads.reread_targets: (reader:topic:partition, poll, offset): a step back, an
    # observed rise of the partition's leader epoch in the span the reader's position was
    # the offset it stepped back onto (only where librdkafka#4261 applies)
    reread_targets: list[tuple[str, int, int]] = field(default_factory=list)


def applicable(settings: Settings) -> list[KnownBug]:
    """Registry entries of a component the run used whose affected versions include the
    run's (unknown: included)."""
    return [b for b in KNOWN_BUGS if settings.component_used(b.component)
            and b.affects(settings.known_bug_version(b.component))]


def fact_columns(inp: KnownInputs) -> dict[str, Column]:
    """Every fact of contract.known_bugs.FACTS as a boolean column over anomaly rows."""
    s = inp.settings
    kind = F.col("kind")
    eof: Column = F.lit(s.partition_eof)
    for reader, on in s.reader_partition_eof.items():
        eof = F.when(F.col("reader") == reader, F.lit(on)).otherwise(eof)
    return {
        "idempotent_producer": F.lit(s.idempotence),
        "non_transactional_producer": F.lit(not s.transactional),
        "epoch_bump_before": F.col("epoch_bump_ns").isNotNull(),
        # the segments show the copies in batches of one producer id and epoch: no resend
        "copies_in_new_epoch": F.col("kind").isin("duplicate", "reorder")
        & ~F.coalesce(same_ids(), F.lit(False)),
        "partition_eof": eof,
        "skipped_one_offset": (kind == "poll-skip")
        & (F.col("offset") - F.col("prev_offset") == 2),
        # a record the full power-loss proof excuses needs no design limitation's name
        "crash_isr_power_loss": covered(inp.crash_isr)
        & ~F.coalesce(F.col("excused"), F.lit(False)),
        "elected_lost_power_loss": covered(inp.elected_lost)
        & ~F.coalesce(F.col("excused"), F.lit(False)),
        "fresh_producer_id_head": (kind == "lost")
        & fresh_head(inp.client_starts, inp.first_offset_acks, inp.state_cuts),
        "leader_moved_in_flight": (kind == "lost") & moved_during(inp.leader_moves),
        "transactional_producer": F.lit(s.transactional),
        "end_txn_held": _end_txn_held(inp.held_end_txn),
        "restart_past_truncation": (kind == "poll-skip") & F.col("other_seq").isNotNull()
        & _across_restart(inp.restarts, s.reader_modes),
        "resumed_after_marker": (kind == "poll-skip") & F.concat_ws(
            ":", F.col("reader"), F.col("topic"), F.col("partition").cast("string"),
            F.col("offset").cast("string")).isin(inp.marker_resumptions),
        # a torn transaction's first attempt (invoke_ns), then an unclean election of its
        # partition, then a read_committed reader's read of it (event_ns)
        "unclean_election_in_txn": (kind == "torn-transaction")
        & elected_between(inp.unclean, F.col("invoke_ns"), F.col("event_ns")),
        "epoch_rise_before_reread": rise_before_reread(inp.reread_targets),
        "unclean_election_after_stalled_txn": (kind == "stalled-lso")
        & F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
        .isin(inp.unclean_stalls),
    }


def restart_polls(events: list[Event]) -> dict[str, list[int]]:
    """"reader:topic:partition" -> the polls of that reader's restarts of the partition
    (``rebalance`` events ``what: "restart"``, workloads/consumer.py)."""
    return {k: [poll for poll, _ in v] for k, v in rebalances_of(events, "restart").items()}


def _across_restart(restarts: dict[str, list[int]], modes: dict[str, str]) -> Column:
    """A restart-mode reader's step whose two reads' polls enclose one of its restarts of
    the partition (both ends included: a restart is recorded at the poll before it)."""
    items: list[Column] = []
    for key, polls in sorted(restarts.items()):
        if modes.get(key.split(":", 1)[0]) == "restart":
            items += [F.lit(key), F.array(*[F.lit(p).cast("long") for p in polls])]
    if not items:
        return F.lit(False)
    at = F.create_map(*items)[F.concat_ws(":", F.col("reader"), F.col("topic"),
                                          F.col("partition").cast("string"))]
    hit = F.exists(at, lambda p: (p >= F.col("prev_poll")) & (p <= F.col("poll")))
    return F.coalesce(hit, F.lit(False))


def _end_txn_held(held: list[tuple[str, int, int]]) -> Column:
    """A torn transaction whose producer's EndTxn a hold held, begun inside that hold.

    The transaction's id is ``<transactional.id>:<n>`` (workloads/txn_producer.py); its
    first attempt is the row's ``invoke_ns`` (checkers/torn.py). The stale EndTxn was sent
    on a connection opened before the hold, during it (else it was not held), by the
    producer's previous transaction, which ended before this one began; it reached the
    coordinator when the hold ended, deciding this one only if it had begun by then. So
    the transaction's first attempt lies inside the hold, and the hold named the
    producer's EndTxn (a few literals: holds are rare)."""
    if not held:
        return F.lit(False)
    producer = F.regexp_extract(F.col("txn"), r"^(.*):[^:]*$", 1)
    began = F.col("invoke_ns")
    out: Column = F.lit(False)
    for txn_id, start, end in held:
        out = out | ((producer == F.lit(txn_id)) & (began >= F.lit(start))
                     & (began <= F.lit(end)))
    return (F.col("kind") == "torn-transaction") & F.coalesce(out, F.lit(False))


def held_end_txns(events: list[Event]) -> list[tuple[str, int, int]]:
    """(transactional id, start_ns, end_ns) of every EndTxn a hold fault held, from its
    end events' ``held_end_txn`` (nemesis/faults/hold.py) and the window each closed."""
    windows = {(w.kind, tuple(map(str, w.targets)), w.end_ns): w.start_ns
               for w in fault_windows(events) if w.end_ns is not None}
    out: set[tuple[str, int, int]] = set()
    for e in events:
        if e.kind != "hold" or e.phase != END:
            continue
        start = windows.get((e.kind, tuple(map(str, e.targets)), e.ts_ns))
        if start is None:
            continue
        for req in e.detail.get(HELD_END_TXN) or []:
            if isinstance(req, dict) and isinstance(req.get("transactional_id"), str):
                out.add((req["transactional_id"], start, e.ts_ns))
    return sorted(out)


def known_bug_column(inp: KnownInputs) -> Column:
    """The id of the first applicable entry that explains the row, else null."""
    facts = fact_columns(inp)
    expr: Column = F.lit(None).cast("string")
    for bug in reversed(applicable(inp.settings)):
        if all(ANOMALIES[k].subject in (CLIENT, CALL) for k in bug.kinds):
            continue  # about clients and calls, not rows: liveness.py, reconnect.py tag them
        conds = [F.col("kind").isin(*bug.kinds)] + [facts[f] for f in sorted(bug.facts)]
        cond = reduce(lambda a, b: a & b, conds)
        expr = F.when(F.coalesce(cond, F.lit(False)), F.lit(bug.id)).otherwise(expr)
    return expr


def tag(bug_id: str | None, accepted: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The ``known_bug`` object of an example (with ``accepted`` when the run accepts it)."""
    if bug_id is None:
        return None
    bug = known_bug(bug_id)
    out: dict[str, Any] = bug.tag() if bug else {"id": bug_id, "link": "", "status": "unknown"}
    out["accepted"] = bug_id in accepted
    return out


def entries(ids: set[str]) -> dict[str, dict[str, Any]]:
    """results.json's top-level ``known_bugs``: the registry entries named in this run."""
    out: dict[str, dict[str, Any]] = {}
    for bug_id in sorted(ids):
        bug = known_bug(bug_id)
        if bug is not None:
            out[bug_id] = {"title": bug.title, "link": bug.link, "status": bug.status,
                           "component": bug.component, "affected_from": bug.affected_from,
                           "fixed_in": bug.fixed_in, "kinds": list(bug.kinds)}
    return out


def describe(bug_id: str) -> str:
    """``librdkafka#4953 (open)``."""
    bug = known_bug(bug_id)
    return f"{bug_id} ({bug.status})" if bug else bug_id


def tag_known(examples: list[dict[str, Any]], kind: str, facts: dict[str, bool],
              known: Sequence[KnownBug]) -> None:
    """Names on each example the first of the run's applicable registry entries
    (:func:`applicable`) that explains it: the kind and every fact."""
    for bug in known:
        if bug.explains(kind, facts):
            for ex in examples:
                ex["known_bug"] = bug.tag()
            return
