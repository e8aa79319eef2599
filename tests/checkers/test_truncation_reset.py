"""A step back onto the point a truncation replaced the log from is the client's reset,
proven by the records (checkers/truncation_reset.py).

The shape of `lost-txn-marker-continued` with the Java client: c0 read p0's records at 8, 9
and 11 of the old leader's log; 10 held a transaction marker, a control record no client
returns. An unclean election truncated that log at 10, and p1's records, written after c0's
read of 11, took offsets 10 to 12. The Java client found the log truncated and went back to
10 (KIP-320). Nobody read two records at 10, so the reused-offset excuse did not apply and
the step back stood as a violation.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History


def _reset(born_ms: int = 2000, read_9: bool = True, new_9: bool = False) -> History:
    """p1's records at 10-12 invoked at ``born_ms`` (c0 read 11 of the old log at ~1000 ms);
    with ``new_9`` the final log holds p1's record at 9 too (replaced below 10 as well)."""
    h = History().config("topic_config", unclean_leader_election_enable="true")
    for seq, off in ((0, 8), (1, 9), (2, 11)):
        h.write(0, seq, offset=off, at_ms=seq)
    for seq, off in enumerate((10, 11, 12)):
        h.write(1, seq, offset=off, at_ms=born_ms + seq)
    if new_9:
        h.write(1, 9, offset=9, at_ms=born_ms - 1)
    h.read("c0", 0, 8, 0, 0, at_ms=1000)
    if read_9:
        h.read("c0", 0, 9, 0, 1, at_ms=1000)
    h.read("c0", 0, 11, 0, 2, at_ms=1001)
    for seq, off in enumerate((10, 11, 12)):  # after the reset, the new log
        h.read("c0", 0, off, 1, seq, at_ms=3000)
    h.drain(0, 8, 0, 0, at_ms=4000)
    h.drain(0, 9, *((1, 9) if new_9 else (0, 1)), at_ms=4000)
    for seq, off in enumerate((10, 11, 12)):
        h.drain(0, off, 1, seq, at_ms=4000)
    h.drain_end()
    return h


def _backs(r: dict[str, Any]) -> tuple[int, int, list[str | None]]:
    a = r["anomalies"]["nonmonotonic-poll"]
    return a["count"], a.get("excused") or 0, [e.get("excuse") for e in a["examples"]]


@pytest.mark.spark
def test_a_step_back_onto_the_truncation_point_is_the_reset(check) -> None:  # type: ignore[no-untyped-def]
    # the old checker: 1 step back, not excused (the run INVALID)
    r = check(_reset())
    assert _backs(r) == (1, 1, ["truncation"])
    assert r["anomalies"]["reused-offset"]["count"] == 1  # 11: the truncation itself
    assert r["valid"] is True


@pytest.mark.spark
def test_a_record_written_before_the_reader_passed_proves_no_truncation(check) -> None:  # type: ignore[no-untyped-def]
    # p1's record at 10 was invoked before c0 read 11: the log may have held it at 10 when
    # c0 passed it (c0 would then have skipped it, and went back for it): no proof
    r = check(_reset(born_ms=500))
    assert _backs(r)[:2] == (1, 0)
    assert r["valid"] is False


@pytest.mark.spark
def test_a_reader_that_never_read_the_offset_below_proves_nothing(check) -> None:  # type: ignore[no-untyped-def]
    # without c0's read of 9 nothing shows the log below 10 was the same in both
    assert _backs(check(_reset(read_9=False)))[:2] == (1, 0)


@pytest.mark.spark
def test_a_log_replaced_below_the_landing_offset_is_no_reset_to_it(check) -> None:  # type: ignore[no-untyped-def]
    # the final log holds another record at 9 than c0 read there: the truncation point lies
    # below 10, and a reset to 10 would skip the new log's 9
    assert _backs(check(_reset(new_9=True)))[:2] == (1, 0)


def _over_a_marker(drain_9: bool = False) -> History:
    """The client matrix's run: 9 holds a transaction's marker in both logs (nobody reads a
    record there), c0 read 8 and then 11 (10 a marker of the old log), and the new log's
    records begin at 10. With ``drain_9`` the final log holds a record at 9 after all, one
    c0 never read."""
    h = History().config("topic_config", unclean_leader_election_enable="true")
    h.write(0, 0, offset=8, at_ms=0).write(0, 1, offset=11, at_ms=1)
    for seq, off in enumerate((10, 11, 12)):
        h.write(1, seq, offset=off, at_ms=2000 + seq)
    if drain_9:
        h.write(2, 0, offset=9, at_ms=1500)
    h.read("c0", 0, 8, 0, 0, at_ms=1000).read("c0", 0, 11, 0, 1, at_ms=1001)
    for seq, off in enumerate((10, 11, 12)):
        h.read("c0", 0, off, 1, seq, at_ms=3000)
    h.drain(0, 8, 0, 0, at_ms=4000)
    if drain_9:
        h.drain(0, 9, 2, 0, at_ms=4000)
    for seq, off in enumerate((10, 11, 12)):
        h.drain(0, off, 1, seq, at_ms=4000)
    h.drain_end()
    return h


@pytest.mark.spark
def test_markers_below_the_landing_offset_hold_nothing_to_miss(check) -> None:  # type: ignore[no-untyped-def]
    # the offset below 10 is a marker in the final log too: the record below is c0's 8
    assert _backs(check(_over_a_marker())) == (1, 1, ["truncation"])


@pytest.mark.spark
def test_a_final_record_below_the_landing_offset_the_reader_never_read(check) -> None:  # type: ignore[no-untyped-def]
    # the final log holds p2's record at 9, which c0 never read: no proof the reset lost
    # nothing
    assert _backs(check(_over_a_marker(drain_9=True)))[:2] == (1, 0)
