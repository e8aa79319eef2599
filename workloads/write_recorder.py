"""Turns one producer's attempts and delivery reports into writes.parquet rows.

An attempt is registered when ``produce()`` accepted it and resolved by its delivery report.
Outside transactions a row is written as soon as its report arrives; inside a transaction
the rows wait in a buffer until the transaction's outcome is known, so every row is written
once, complete, with its ``txn_outcome``. Non-transactional producers that record use the
cheaper columnar recorder of workloads.write_columns (``make_recorder`` picks).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, Message

from contract.schemas import WRITES_SCHEMA
from workloads.history import ChunkedParquetWriter, history_dir
from workloads.outcomes import FAIL, INFO, OK, classify

if TYPE_CHECKING:
    from workloads.write_columns import ColumnRecorder

log = logging.getLogger("kafka_chaos.workloads.writes")

# Row layout: the writes schema without producer and topic (constant per writer): op_id, seq,
# partition, invoke_ns, complete_ns, outcome, offset, error, txn, txn_outcome. Rows are lists
# so delivery reports can fill them in place.
_SEQ, _PARTITION, _COMPLETE, _OUTCOME, _OFFSET, _ERROR, _TXN, _TXN_OUTCOME = 1, 2, 4, 5, 6, 7, 8, 9


class RecorderCounts:
    """What every recorder counts for the orchestrator's summary."""

    def __init__(self, producer: int, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        # Time of the first accepted attempt and of the latest acknowledgement (throughput).
        self.first_invoke_ns = 0
        self.last_ack_ns = 0
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.attempts = 0

    def _count(self, outcome: str, error: str | None) -> None:
        self.counts[outcome] += 1
        if error:
            self.errors[error] += 1

    def stats(self) -> dict[str, Any]:
        """Counts for the orchestrator: attempts, ok, fail, info, and errors by name."""
        return {"producer": self.producer, "attempts": self.attempts,
                "ok": self.counts[OK], "fail": self.counts[FAIL], "info": self.counts[INFO],
                "txn_committed": self.counts["txn_committed"],
                "txn_aborted": self.counts["txn_aborted"],
                "txn_unknown": self.counts["txn_unknown"],
                "first_invoke_ns": self.first_invoke_ns, "last_ack_ns": self.last_ack_ns,
                "errors": dict(self.errors)}


class WriteRecorder(RecorderCounts):
    """Keeps the attempts of one producer that still wait for an outcome as rows, and writes
    them: the recorder of transactional producers, whose rows wait for the transaction's
    outcome. With ``record=False`` only the counters are kept (benchmark of recording
    overhead). ``writer`` names its part files (default ``p<producer>``; a recorded client
    writing several topics has one recorder per topic). A ``None`` partition is the client
    partitioner's choice, taken from the delivery report.
    """

    def __init__(self, run_dir: Path | None, producer: int, topic: str, *, record: bool = True,
                 chunk_rows: int = 50_000, flush_interval_s: float = 2.0,
                 writer: str | None = None) -> None:
        super().__init__(producer, topic)
        self.writer: ChunkedParquetWriter | None = None
        if record and run_dir is not None:
            self.writer = ChunkedParquetWriter(
                history_dir(run_dir) / "writes.parquet", WRITES_SCHEMA, writer or f"p{producer}",
                chunk_rows=chunk_rows, flush_interval_s=flush_interval_s,
                constants={"producer": producer, "topic": topic})
        self.record = record
        self._base = producer << 40
        self.pending: dict[int, list[Any]] = {}
        self.txn_rows: list[list[Any]] = []  # the open transaction's rows, in seq order
        self.txn: str | None = None

    # ------------------------------------------------------------------ attempts
    def invoked(self, seq: int, partition: int | None, invoke_ns: int) -> None:
        """``produce()`` accepted record ``seq``; its outcome comes with the delivery report."""
        self.attempts += 1
        if not self.first_invoke_ns:
            self.first_invoke_ns = invoke_ns
        if not self.record:
            return
        row = [self._base | seq, seq, partition, invoke_ns, None, None, None, None, self.txn,
               None]
        self.pending[seq] = row
        if self.txn is not None:
            self.txn_rows.append(row)

    def refused(self, seq: int, partition: int | None, invoke_ns: int,
                err: KafkaError | None) -> None:
        """``produce()`` raised: the record never entered the client's queue (``fail``)."""
        name = err.name() if err is not None else "_REFUSED"
        row = [self._base | seq, seq, partition, invoke_ns, time.time_ns(), FAIL, None, name,
               self.txn, None]
        self.attempts += 1
        self._count(FAIL, name)
        if self.txn is not None:
            self.txn_rows.append(row)
        else:
            self._emit(row)

    def on_delivery(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        """Delivery report of record ``seq`` (bind ``seq`` with functools.partial)."""
        if not self.record:
            now = time.time_ns()
            if err is None:
                self.counts[OK] += 1
                self.last_ack_ns = now
            else:
                self._count(classify(err), err.name())
            return
        part = None
        row = self.pending.get(seq)
        if row is not None and row[_PARTITION] is None and msg is not None:
            # the client's partitioner chose it (recorded clients): asked only then
            p = msg.partition()
            part = p if p is not None and p >= 0 else None
        if err is None:
            self.resolved(seq, time.time_ns(), OK, None, msg.offset(), part)
        else:
            self.resolved(seq, time.time_ns(), classify(err), err.name(), None, part)

    def resolved(self, seq: int, complete_ns: int, outcome: str, error: str | None,
                 offset: int | None, partition: int | None = None) -> None:
        """Record ``seq``'s outcome, however the client reported it: ``offset`` None with
        acks=0 or for idempotent duplicates; ``partition`` the one the client's
        partitioner chose (None: as invoked)."""
        row = self.pending.pop(seq, None)
        if row is None:  # already resolved as unknown (e.g. a report after the run ended)
            log.debug("late outcome for p%d seq %d: %s", self.producer, seq, error)
            return
        row[_COMPLETE] = complete_ns
        if row[_PARTITION] is None:  # the client's partitioner chose it (recorded clients)
            row[_PARTITION] = partition
        row[_OUTCOME] = outcome
        if outcome == OK:
            self.last_ack_ns = complete_ns
            row[_OFFSET] = offset
            self.counts[OK] += 1
        else:
            row[_ERROR] = error
            self._count(outcome, error)
        if row[_TXN] is None:  # not in a transaction: the row is final
            self._emit(row)

    def refused_at(self, seq: int, complete_ns: int, error: str) -> None:
        """A driver's attempt ``seq``, invoked, was refused before it was queued (``fail``)."""
        self.resolved(seq, complete_ns, FAIL, error, None)

    # ------------------------------------------------------------------ transactions
    def begin_txn(self, txn: str) -> None:
        self.txn = txn
        self.txn_rows = []

    def end_txn(self, txn_outcome: str) -> None:
        """Writes the transaction's rows with their outcome; unanswered attempts become info."""
        for row in self.txn_rows:
            if row[_OUTCOME] is None:
                self._unresolved(row)
            row[_TXN_OUTCOME] = txn_outcome
            self._emit(row)
        self.counts[f"txn_{txn_outcome}"] += 1
        self.txn = None
        self.txn_rows = []

    # ------------------------------------------------------------------ the end
    def resolve_remaining(self) -> int:
        """Every attempt without a report becomes ``info`` (outcome never known). Returns how
        many there were."""
        n = 0
        for row in list(self.pending.values()):
            if row[_TXN] is None:
                self._unresolved(row)
                self._emit(row)
                n += 1
        if self.txn is not None:
            self.end_txn("unknown")
        return n

    def _unresolved(self, row: list[Any]) -> None:
        self.pending.pop(row[_SEQ], None)
        row[_OUTCOME] = INFO
        self.counts[INFO] += 1

    def _emit(self, row: list[Any]) -> None:
        if self.writer is not None:
            self.writer.append_values(row)

    def maybe_flush(self) -> None:
        if self.writer is not None:
            self.writer.maybe_flush()

    def flush(self) -> None:
        """Writes the rows resolved so far now (before a call that may never return: a
        process killed in it keeps what it had written)."""
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def make_recorder(run_dir: Path | None, producer: int, topic: str, *, record: bool = True,
                  transactional: bool = False, chunk_rows: int = 50_000,
                  flush_interval_s: float = 2.0,
                  round_robin: list[int] | None = None) -> WriteRecorder | ColumnRecorder:
    """The recorder a producer needs: columns when recording outside transactions (the
    cheap path at flat-out rates), rows for transactions, or counters only.
    ``round_robin``: the partitions seq i goes to in turn (i % n), if that is the rule."""
    if record and run_dir is not None and not transactional:
        from workloads.write_columns import ColumnRecorder
        return ColumnRecorder(run_dir, producer, topic, chunk_rows=chunk_rows,
                              flush_interval_s=flush_interval_s, round_robin=round_robin)
    return WriteRecorder(run_dir, producer, topic, record=record, chunk_rows=chunk_rows,
                         flush_interval_s=flush_interval_s)
