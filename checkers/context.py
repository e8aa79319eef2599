"""The one shared context every check reads (checkers/combine.py): the run's files and
tables loaded once, the summaries, the drain, the observations, and the data two checks
share — the identity table (persisted once for the identity and reorder checks) and the
findings (every check's anomaly rows collected in one pass)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from contract.settings import Settings, settings_from_run

from .append_bound import acknowledged
from .batch_ids import batch_table
from .collect import Findings, attach_reads, collect_findings
from .engines import keep, release, release_shared
from .epochs import epoch_bumps
from .fresh_ids import client_starts, first_offset_acks, leader_moves, state_cuts
from .guarantees import producer_allowances
from .history import (
    OBSERVATIONS_SCHEMA,
    READS_SCHEMA,
    WRITES_SCHEMA,
    Event,
    drain_end,
    load_table,
    parse_events,
    phase_window,
)
from .identity import IdentityInputs, identity_table, topic_id
from .known import KnownInputs, held_end_txns, known_bug_column, restart_polls
from .marker_resume import resumed_after_marker
from .observations import PartitionHistory, collect_changes, power_loss_coverage
from .power_proof import (
    Term,
    covered,
    crash_isr_terms,
    crashes,
    elected_lost_terms,
    proof_terms,
)
from .rereads import assignments, epoch_rises, reread_applies, reread_targets
from .runfiles import RunDir
from .stalled import held_writes, stalls, unclean_elections
from .stats import ReadSummary, WriteSummary, read_summary, timeseries, write_summary
from .together import together
from .truncation_reset import proven_resets


@dataclass(frozen=True)
class Drain:
    """How far the final drain got."""

    ended: bool
    flag: bool
    complete: list[str]
    incomplete: list[str]


def drain_state(events: list[Event], partitions: list[str], drained: dict[str, int]) -> Drain:
    """A partition is complete when the drain says so, or when it read up to end_offset-1."""
    end = drain_end(events)
    if end is None:
        return Drain(False, False, [], sorted(partitions))
    flag = bool(end.detail.get("complete"))
    ends = end.detail.get("end_offsets") or {}
    keys = sorted(set(partitions) | set(ends))
    complete: list[str] = []
    incomplete: list[str] = []
    for key in keys:
        ok = flag
        if not ok and key in ends:
            try:
                ok = drained.get(key, -1) >= int(ends[key]) - 1
            except (TypeError, ValueError):
                ok = False
        (complete if ok else incomplete).append(key)
    return Drain(True, flag, complete, incomplete)


@dataclass
class CheckContext:
    """Everything the checks share, computed once (``load_context``)."""

    spark: SparkSession
    run: RunDir
    run_json_found: bool
    run_cfg: dict[str, Any]
    settings: Settings
    events: list[Event]
    bad_lines: int
    writes: DataFrame
    reads: DataFrame
    ws: WriteSummary
    rs: ReadSummary
    drain: Drain
    history: PartitionHistory
    n_changes: int
    power: dict[str, int]
    inputs: IdentityInputs
    known: KnownInputs
    power_proof: list[Term] = field(default_factory=list)
    rows: list[DataFrame] = field(default_factory=list)
    _ident: DataFrame | None = None
    _findings: Findings | None = None
    _series: tuple[dict[str, Any] | None, float, float] | None = None

    def identity_table(self) -> DataFrame:
        """The identity table, persisted on first use: the identity and reorder checks
        both read it, so Spark computes the identity exchange and aggregations once."""
        if self._ident is None:
            self._ident = keep(identity_table(self.writes, self.reads, self.inputs))
        return self._ident

    def findings(self) -> Findings:
        """Counts and examples of every anomaly row the checks so far returned, collected
        once (one aggregation, one example window, one read of the example reads)."""
        if self._findings is None:
            self._findings = collect_findings(self.rows, known_bug_column(self.known),
                                              self.settings.accept_known,
                                              [(covered(self.power_proof), "power-loss"),
                                               (_producer_allowed(self.settings),
                                                "producer-settings")],
                                              batch_table(self.spark, self.run,
                                                          self.inputs.topics)
                                              if self._bumped() else None,
                                              late=lambda rows, kinds: proven_resets(
                                                  rows, self.reads, self.writes, kinds))
            self.release()
            attach_reads(self.spark, self.reads, self._findings)
        return self._findings

    def _bumped(self) -> bool:
        """Whether a duplicate or reorder can carry a client bug's tag (the copies' batch
        ids are read from the segments only then)."""
        return self.settings.idempotence and self.inputs.epoch_bumps is not None

    def acks(self) -> DataFrame:
        """The writes acknowledged with an offset (append_bound.acknowledged)."""
        return acknowledged(self.writes, topic_id(self.inputs.topics, F.col("topic")))

    def workload_window(self) -> tuple[int | None, int | None]:
        """(t0, t1) ns of the workload phase; the first and last write where not recorded."""
        start, end = phase_window(self.events, "workload")
        return (start if start is not None else self.ws.first_ns,
                end if end is not None else self.ws.last_ns)

    def series(self) -> tuple[dict[str, Any] | None, float, float]:
        """The timeseries and the (longest, total) unavailability (stats.timeseries),
        computed once. RowAnomalies runs it beside the findings' collection: its small
        scans fill the moments that collection leaves a core idle (planning, small jobs)."""
        if self._series is None:
            t0, t1 = self.workload_window()
            self._series = ((None, 0.0, 0.0) if t0 is None or t1 is None
                            else timeseries(self.writes, self.reads, t0, max(t1, t0 + 1)))
        return self._series

    def release(self) -> None:
        """Drop the persisted identity table and epoch bumps (idempotent)."""
        release_shared()
        if self._ident is not None:
            release(self._ident)
            self._ident = None
        release(self.inputs.epoch_bumps)


def _producer_allowed(s: Settings) -> Column:
    """True on anomaly rows whose own producer's settings allow their kind
    (guarantees.producer_allowances)."""
    out: Column = F.lit(False)
    for kind, producers in producer_allowances(s).items():
        out = out | ((F.col("kind") == kind) & F.col("producer").isin(producers))
    return out


def load_context(spark: SparkSession, run: RunDir) -> CheckContext:
    """Read run.json, events and the history tables; the summaries the checks share."""
    text = run.read_text("run.json", spark)
    run_cfg: dict[str, Any] = json.loads(text) if text else {}
    settings = settings_from_run(run_cfg)
    events, bad_lines = parse_events(run.read_text("history/events.jsonl", spark))
    # Each table's load infers its schema (a job); the summaries are independent queries.
    writes, reads, obs = together(
        lambda: load_table(spark, run, "writes", WRITES_SCHEMA),
        lambda: load_table(spark, run, "reads", READS_SCHEMA),
        lambda: load_table(spark, run, "observations", OBSERVATIONS_SCHEMA,
                           absent_as_none=True))
    parts_n = int(spark.conf.get("spark.sql.shuffle.partitions") or "8")

    # The epoch bumps are persisted once found: a failure after that (another summary, the
    # drain state) must not leave them cached in a long-lived session (pytest, nightly).
    persisted: list[DataFrame] = []

    def bumps_of() -> DataFrame | None:
        bumps = epoch_bumps(writes, events) if settings.idempotence else None
        if bumps is not None:
            persisted.append(bumps)
        return bumps

    try:
        ws, rs, (history, n_changes), bumps = together(
            lambda: write_summary(writes), lambda: read_summary(reads),
            lambda: collect_changes(obs) if obs is not None else (PartitionHistory([]), 0),
            bumps_of)
        partitions = ws.partitions
        drain = drain_state(events, partitions, rs.drained)
        power = power_loss_coverage(events, history, sorted(set(partitions) | set(drain.complete)),
                                    settings.brokers)

        topics = sorted(set(ws.topics) | set(rs.topics))
        crash_list = crashes(events)
        # only a history with offset-less acknowledgements needs the clients' first acks
        implicit = settings.idempotence and not settings.transactional and ws.ok_without_offset
        starts = client_starts(events) if implicit else {}
        cuts = state_cuts(events, history) if implicit else {}
        firsts = first_offset_acks(writes, starts, cuts)
        found = stalls(writes, events, history) if settings.transactional else []
        inputs = IdentityInputs(settings, drain.complete, parts_n, topics,
                                sorted(rs.per_reader), bumps, held_writes(writes, found))
        return CheckContext(spark, run, bool(text), run_cfg, settings, events, bad_lines, writes,
                            reads, ws, rs, drain, history, n_changes, power, inputs,
                            KnownInputs(settings, crash_isr_terms(crash_list, history),
                                        elected_lost_terms(crash_list, history),
                                        starts, firsts, cuts,
                                        leader_moves(history) if implicit else {},
                                        held_end_txns(events), restart_polls(events),
                                        unclean_stalls=[x.key for x in found
                                                        if x.unclean_ns is not None],
                                        unclean=unclean_elections(history)
                                        if settings.transactional else {},
                                        marker_resumptions=resumed_after_marker(
                                            spark, reads, writes, restart_polls(events),
                                            settings),
                                        reread_targets=reread_targets(
                                            reads, epoch_rises(history),
                                            assignments(events))
                                        if reread_applies(settings) else []),
                            proof_terms(crash_list, history))
    except BaseException:
        for df in persisted:
            release(df)
        raise
