"""The columnar recorder of non-transactional producers writes exactly the rows the row
recorder writes, for any order of attempts, refusals, reports, late reports and flushes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import KafkaError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workloads.helpers import WRITES_CONTRACT
from workloads.write_columns import ColumnRecorder
from workloads.write_recorder import WriteRecorder, make_recorder

ERRORS = [KafkaError._MSG_TIMED_OUT, KafkaError.NOT_ENOUGH_REPLICAS,
          KafkaError.REQUEST_TIMED_OUT, KafkaError._PURGE_QUEUE]


class Msg:
    """The one thing a delivery report's message is asked for: its offset."""

    def __init__(self, offset: int | None) -> None:
        self._offset = offset

    def offset(self) -> int | None:
        return self._offset


# One step of a producer's life. ("send", partition, refused-error-or-None),
# ("report", index into the pending attempts, error-or-None, offset-or-None), ("flush",),
# ("resolve",) (a purge: the rest becomes info; later reports are late).
STEP = st.one_of(
    st.tuples(st.just("send"), st.integers(0, 2), st.sampled_from([None, None, None, 0])),
    st.tuples(st.just("report"), st.integers(0, 50), st.sampled_from([None, None, 1, 2, 3]),
              st.one_of(st.none(), st.integers(0, 10_000))),
    st.tuples(st.just("flush")),
    st.tuples(st.just("resolve")),
)


def drive(rec: Any, steps: list[tuple[Any, ...]], round_robin: bool) -> None:
    pending: list[int] = []
    purged: list[int] = []  # resolved as info by a purge: their reports may still come
    seq = 0
    for step in steps:
        if step[0] == "send":
            invoke = 1_000 + seq
            part = seq % 3 if round_robin else step[1]
            if step[2] is not None:
                rec.refused(seq, part, invoke, KafkaError(ERRORS[step[2]]))
            else:
                rec.invoked(seq, part, invoke)
                pending.append(seq)
            seq += 1
        elif step[0] == "report":
            # librdkafka reports each message once; only after a purge may a report come for
            # an attempt already resolved (as info).
            pool = pending or purged
            if not pool:
                continue
            s = pool[step[1] % len(pool)]
            if s in pending:
                pending.remove(s)
            else:
                purged.remove(s)
            err = KafkaError(ERRORS[step[2]]) if step[2] is not None else None
            rec.on_delivery(s, err, Msg(step[3]))
        elif step[0] == "flush":
            rec.maybe_flush() if isinstance(rec, WriteRecorder) else rec.flush()
        else:
            rec.resolve_remaining()
            purged += pending
            pending = []
    rec.resolve_remaining()
    rec.close()


def written(path: Path) -> list[dict[str, Any]]:
    dataset = path / "history" / "writes.parquet"
    if not any(dataset.glob("part-*.parquet")):
        return []
    table = ds.dataset(dataset, format="parquet").to_table()
    assert [(f.name, f.type) for f in table.schema] == WRITES_CONTRACT
    rows = table.to_pylist()
    for r in rows:  # completion times are the recorders' own clock: compare presence only
        r["complete_ns"] = r["complete_ns"] is not None
    return sorted(rows, key=lambda r: r["op_id"])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, max_size=60), chunk=st.integers(1, 8), round_robin=st.booleans())
def test_same_rows_and_stats_as_the_row_recorder(tmp_path_factory: pytest.TempPathFactory,
                                                 steps: list[tuple[Any, ...]], chunk: int,
                                                 round_robin: bool) -> None:
    a, b = tmp_path_factory.mktemp("rows"), tmp_path_factory.mktemp("cols")
    rows = WriteRecorder(a, 3, "t", chunk_rows=chunk)
    cols = make_recorder(b, 3, "t", chunk_rows=chunk,
                         round_robin=[0, 1, 2] if round_robin else None)
    assert isinstance(cols, ColumnRecorder)
    drive(rows, steps, round_robin)
    drive(cols, steps, round_robin)
    assert written(b) == written(a)
    assert len(written(b)) == sum(s[0] == "send" for s in steps)
    sa, sb = rows.stats(), cols.stats()
    # The latest acknowledgement is each recorder's own clock: compare presence only.
    assert bool(sb.pop("last_ack_ns")) == bool(sa.pop("last_ack_ns"))
    assert sb == sa


def test_memory_is_trimmed_to_what_is_in_flight(tmp_path: Path) -> None:
    rec = ColumnRecorder(tmp_path, 0, "t")
    for seq in range(10_000):
        rec.invoked(seq, seq % 3, seq)
    for seq in range(10_000):
        if seq != 5_000:  # one attempt stays unanswered
            rec.on_delivery(seq, None, Msg(seq))
    rec.flush()
    assert rec.base == 5_000 and len(rec.inv_ns) == 5_000
    rec.on_delivery(5_000, None, Msg(5_000))
    rec.flush()
    assert rec.base == 10_000 and len(rec.inv_ns) == 0
    assert rec.stats()["ok"] == 10_000 and rec.stats()["attempts"] == 10_000


def test_transactional_and_unrecorded_producers_keep_rows(tmp_path: Path) -> None:
    assert isinstance(make_recorder(tmp_path, 0, "t", transactional=True), WriteRecorder)
    assert isinstance(make_recorder(tmp_path, 0, "t", record=False), WriteRecorder)
    with pytest.raises(TypeError):
        ColumnRecorder(tmp_path, 0, "t").begin_txn("x")
