"""The recorder of non-transactional producers: attempts kept as columns, not rows.

At flat-out rates a producer process spends most of its Python time per record; building a
10-field row, keeping it in a dict until its delivery report and converting it back to
Arrow cost about as much again as producing the record (issue #3). Outside transactions the
sequence numbers of one producer are dense (every seq is either accepted by ``produce()``
or refused), so an attempt is kept as appends to typed arrays indexed by seq (invoke time,
partition), and its resolution as appends to four more (seq, completion time, offset,
outcome code). At flush time NumPy joins the two by seq and hands whole columns to Arrow.

The rows written are the same as the row recorder's (workloads.write_recorder): one per
attempt, in the order their outcomes became known, with nulls where it has ``None``.
"""

from __future__ import annotations

import io
import time
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import KafkaError, Message

from contract.schemas import WRITES_SCHEMA
from workloads.history import ChunkedParquetWriter, history_dir
from workloads.outcomes import FAIL, INFO, OK, classify
from workloads.write_recorder import RecorderCounts

#: Sentinel for "no value" in the int64 columns (offsets and times are never negative).
NONE = -1


def warm_up() -> None:
    """Pays pyarrow's one-time costs now: its first ``pa.array`` of a NumPy array (~0.25 s
    of CPU), compute's first ``take`` and the Parquet writer's set-up. A recorder that calls
    this before its driver starts does not pay them at its first flush, in the middle of the
    records it measures (a benchmark's window is a few seconds)."""
    n = np.zeros(1, dtype=np.int64)
    codes = pa.array(n.astype(np.int32))
    table = pa.table({"n": pa.array(n, mask=n == NONE), "s": pa.array(["ok"]).take(codes)})
    pq.write_table(table, io.BytesIO(), compression="zstd")


class ColumnRecorder(RecorderCounts):
    """Dense-by-seq invocation columns plus resolution columns of one producer.

    ``base`` is the seq of the first invocation still kept: invocations below the lowest
    unresolved seq are dropped at each flush, so memory stays bounded by what is in flight
    plus one chunk (and one byte per attempt for the resolved marks). The per-record paths
    only append; counts, marks and the latest acknowledgement time are computed a chunk at
    a time. Delivery reports do not check the chunk size: call ``maybe_flush`` regularly
    (the producer loops do).
    """

    def __init__(self, run_dir: Path, producer: int, topic: str, *, chunk_rows: int = 50_000,
                 flush_interval_s: float = 2.0, round_robin: list[int] | None = None) -> None:
        super().__init__(producer, topic)
        self.writer = ChunkedParquetWriter(history_dir(run_dir) / "writes.parquet",
                                           WRITES_SCHEMA, f"p{producer}", chunk_rows=chunk_rows,
                                           flush_interval_s=flush_interval_s)
        self.chunk_rows = chunk_rows
        self.op_base = producer << 40
        self.base = 0  # seq of inv_ns[0]
        self.inv_ns = array("q")
        # Partitions in turn (seq i goes to round_robin[i % n]) need no column of their own.
        self.round_robin = np.array(round_robin, dtype=np.int32) if round_robin else None
        self.inv_part = array("i")
        # One byte per seq invoked, set to 1 (a chunk at a time) once its resolution is
        # taken; every seq below ``sealed`` is resolved, so a later report for it is late.
        self.done = bytearray()
        self.sealed = 0
        # Acknowledgements, the common case, as three columns; every other resolution as a
        # (seq, completion time or NONE, code) tuple.
        self.res_seq = array("q")
        self.res_ns = array("q")
        self.res_off = array("q")
        self.other: list[tuple[int, int, int]] = []
        # (outcome, error name) of each code; code 0 is (ok, None).
        self.codes: list[tuple[str, str | None]] = [(OK, None)]
        # Refused attempts are not accepted ones: first_invoke_ns skips them.
        self.refused_seqs: set[int] = set()
        self._code_of: dict[tuple[str, str | None], int] = {(OK, None): 0}

    # ------------------------------------------------------------------ attempts
    @property
    def next_seq(self) -> int:
        """The seq the next attempt must have."""
        return self.base + len(self.inv_ns)

    def invoked(self, seq: int, partition: int, invoke_ns: int) -> None:
        """``produce()`` accepted record ``seq``; its outcome comes with the delivery report.

        Sequence numbers must be dense (``seq == next_seq``): not checked here, since this
        runs once per record at flat-out rates; the producer loop guarantees it."""
        self.inv_ns.append(invoke_ns)
        if self.round_robin is None:
            self.inv_part.append(partition)

    def refused(self, seq: int, partition: int, invoke_ns: int, err: KafkaError | None) -> None:
        """``produce()`` raised: the record never entered the client's queue (``fail``)."""
        if not self.first_invoke_ns:  # only needed until the first accepted one is known
            self.refused_seqs.add(seq)
        self.invoked(seq, partition, invoke_ns)
        self._resolve(seq, time.time_ns(), FAIL, err.name() if err is not None else "_REFUSED")

    def on_delivery(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        """Delivery report of record ``seq`` (bind ``seq`` with functools.partial)."""
        if err is not None:
            self._resolve(seq, time.time_ns(), classify(err), err.name())
            return
        if seq < self.sealed:  # already resolved as unknown (a report after the purge)
            return
        self.res_seq.append(seq)
        self.res_ns.append(time.time_ns())
        offset = msg.offset()  # None with acks=0 or for idempotent duplicates
        self.res_off.append(NONE if offset is None else offset)

    def invoked_many(self, seq: np.ndarray, partition: np.ndarray,
                     invoke_ns: np.ndarray) -> None:
        """:meth:`invoked` of a run of attempts (a driver's ``sent`` lines), checked dense:
        ``seq`` must go on from ``next_seq`` one by one (ValueError, nothing kept)."""
        if seq.size == 0:
            return
        if seq[0] != self.next_seq or (seq.size > 1 and not (np.diff(seq) == 1).all()):
            raise ValueError(f"attempts not dense: seq {int(seq[0])} where {self.next_seq} "
                             "was next")
        self.inv_ns.frombytes(invoke_ns.astype(np.int64).tobytes())
        if self.round_robin is None:
            self.inv_part.frombytes(partition.astype(np.int32).tobytes())

    def acked_many(self, seq: np.ndarray, offset: np.ndarray, complete_ns: np.ndarray) -> None:
        """The acknowledgements of a run of attempts at their offsets (-1: none given), as a
        driver reported them; those already resolved as unknown are late and dropped."""
        keep = seq >= self.sealed
        if not keep.all():
            seq, offset, complete_ns = seq[keep], offset[keep], complete_ns[keep]
        self.res_seq.frombytes(seq.astype(np.int64).tobytes())
        self.res_ns.frombytes(complete_ns.astype(np.int64).tobytes())
        self.res_off.frombytes(np.where(offset < 0, NONE, offset).astype(np.int64).tobytes())

    def resolved(self, seq: int, complete_ns: int, outcome: str, error: str | None,
                 offset: int | None, partition: int | None = None) -> None:
        """Record ``seq``'s outcome as a driver reported it (the row recorder's call):
        ``partition`` is always the one invoked here, so it is ignored."""
        if outcome == OK:
            if seq >= self.sealed:  # else already resolved as unknown: late
                self.res_seq.append(seq)
                self.res_ns.append(complete_ns)
                self.res_off.append(NONE if offset is None else offset)
        else:
            self._resolve(seq, complete_ns, outcome, error)

    def refused_at(self, seq: int, complete_ns: int, error: str) -> None:
        """A driver's attempt ``seq``, invoked, was refused before it was queued (``fail``;
        not an accepted attempt for ``first_invoke_ns``)."""
        if not self.first_invoke_ns:
            self.refused_seqs.add(seq)
        self._resolve(seq, complete_ns, FAIL, error)

    def _resolve(self, seq: int, complete_ns: int | None, outcome: str,
                 error: str | None) -> None:
        if seq < self.sealed:
            return
        key = (outcome, error)
        code = self._code_of.get(key)
        if code is None:
            code = self._code_of[key] = len(self.codes)
            self.codes.append(key)
        self.other.append((seq, NONE if complete_ns is None else complete_ns, code))

    # ------------------------------------------------------------------ the end
    def resolve_remaining(self) -> int:
        """Every attempt without a report becomes ``info`` (outcome never known). Returns how
        many there were."""
        self._mark(np.frombuffer(self.res_seq, dtype=np.int64))
        self._mark(np.array([o[0] for o in self.other], dtype=np.int64))
        n = 0
        i = self.done.find(0, self.base)
        while i >= 0:
            self._resolve(i, None, INFO, None)
            n += 1
            i = self.done.find(0, i + 1)
        self.sealed = self.next_seq
        return n

    def _mark(self, seqs: np.ndarray) -> None:
        """Marks ``seqs`` resolved (grows the marks to every seq invoked so far)."""
        self.done.extend(bytes(self.next_seq - len(self.done)))
        np.frombuffer(self.done, dtype=np.uint8)[seqs] = 1

    def stats(self) -> dict[str, Any]:
        self.flush()  # counts and the latest acknowledgement are kept per taken chunk
        self.attempts = self.next_seq
        return super().stats()

    def begin_txn(self, txn: str) -> None:
        raise TypeError("a transactional producer records with WriteRecorder")

    def end_txn(self, txn_outcome: str) -> None:
        raise TypeError("a transactional producer records with WriteRecorder")

    # ------------------------------------------------------------------ to Parquet
    @property
    def buffered(self) -> int:
        """Resolutions not yet written."""
        return len(self.res_seq) + len(self.other)

    def maybe_flush(self) -> None:
        """Writes a part file when a chunk is full or the flush interval has passed (and a
        part kept from a write the full disk refused, once the interval has passed)."""
        n = self.buffered
        if (n and n >= self.chunk_rows) or ((n or self.writer.buffered)
                                            and self.writer.flush_due()):
            self.flush()

    def flush(self) -> None:
        table = self.take()
        if table is not None or self.writer.buffered:
            self.writer.write_table(table)

    def close(self) -> None:
        self.flush()
        self.writer.close()  # raises HistoryNotWritten if the disk stayed full

    def take(self) -> pa.Table | None:
        """The resolutions so far as a writes table (None if there are none); forgets them
        and the invocations no longer needed."""
        acked, other = len(self.res_seq), self.other
        n = acked + len(other)
        if n == 0:
            return None
        o = np.array(other, dtype=np.int64).reshape(-1, 3)
        seq = np.concatenate([np.frombuffer(self.res_seq, dtype=np.int64), o[:, 0]])
        complete = np.concatenate([np.frombuffer(self.res_ns, dtype=np.int64), o[:, 1]])
        offset = np.concatenate([np.frombuffer(self.res_off, dtype=np.int64),
                                 np.full(len(other), NONE, dtype=np.int64)])
        code = np.concatenate([np.zeros(acked, dtype=np.int32), o[:, 2].astype(np.int32)])
        idx = seq - self.base
        invoke = np.frombuffer(self.inv_ns, dtype=np.int64)[idx]  # fancy index: copies
        if self.round_robin is None:
            part = np.frombuffer(self.inv_part, dtype=np.int32)[idx]
        else:
            part = self.round_robin[seq % len(self.round_robin)]
        # New buffers (the old ones may still be exported to numpy views until return).
        self.res_seq, self.res_ns, self.res_off = array("q"), array("q"), array("q")
        self.other = []
        if not self.first_invoke_ns:
            self._first_accepted()
        self._mark(seq)
        self._tally(code, complete)
        codes = pa.array(code)
        cols = {
            "op_id": pa.array(seq | self.op_base),
            "producer": pa.repeat(pa.scalar(self.producer, pa.int32()), n),
            "seq": pa.array(seq),
            "topic": pa.repeat(pa.scalar(self.topic, pa.string()), n),
            "partition": pa.array(part),
            "invoke_ns": pa.array(invoke),
            "complete_ns": pa.array(complete, mask=complete == NONE),
            "outcome": pa.array([c[0] for c in self.codes], pa.string()).take(codes),
            "offset": pa.array(offset, mask=offset == NONE),
            "error": pa.array([c[1] for c in self.codes], pa.string()).take(codes),
            "txn": pa.nulls(n, pa.string()),
            "txn_outcome": pa.nulls(n, pa.string()),
        }
        self._trim()
        return pa.Table.from_arrays([cols[f.name] for f in WRITES_SCHEMA],
                                    schema=WRITES_SCHEMA)

    def _first_accepted(self) -> None:
        # Every attempt from ``base`` on is still kept, and none before it was accepted
        # (else an earlier take would have found it).
        for seq in range(self.base, self.next_seq):
            if seq not in self.refused_seqs:
                self.first_invoke_ns = self.inv_ns[seq - self.base]
                self.refused_seqs.clear()
                return

    def _tally(self, code: np.ndarray, complete: np.ndarray) -> None:
        """Counts a chunk's outcomes and errors, and its latest acknowledgement."""
        for c, n in zip(*np.unique(code, return_counts=True), strict=True):
            outcome, error = self.codes[int(c)]
            self.counts[outcome] += int(n)
            if error:
                self.errors[error] += int(n)
        acked = complete[code == 0]
        if acked.size:
            self.last_ack_ns = max(self.last_ack_ns, int(acked.max()))

    def _trim(self) -> None:
        low = self.done.find(0, self.base)
        low = self.next_seq if low < 0 else low
        drop = low - self.base
        if drop > 0:
            del self.inv_ns[:drop]
            if self.round_robin is None:
                del self.inv_part[:drop]
            self.base = low
