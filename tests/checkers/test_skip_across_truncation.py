"""A poll-skip is counted only from records of the log the step was read in.

The shape of `lost-txn-marker-continued` with the Java client (docs/clients.md): a
read_committed consumer read producer 0's records at offsets 10 and 12 of the old leader's
log; offset 11 held its transaction's marker, a control record no client returns. An
unclean election truncated that log at 11, and producer 1's records, written after it, took
offsets 11 and 12; the drain read them. Until this test the checker counted 11 as skipped
because some reader (the drain) read a record there, though that record belongs to the log
that replaced the one the step was read in.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History


def _truncated(old_11: bool = False) -> History:
    """p0/0 at 10 (kept), p0's record at 12 (gone: p1's at 11 and 12 took its place). With
    ``old_11`` the old log held p0's record at 11 too (not a marker), and c1 read the old
    log's 10, 11 and 12 in order."""
    h = History().config("topic_config", unclean_leader_election_enable="true")
    h.write(0, 0, offset=10)
    if old_11:
        h.write(0, 1, offset=11)
    h.write(0, 2, offset=12)
    h.write(1, 0, offset=11).write(1, 1, offset=12)
    h.read("c0", 0, 10, 0, 0).read("c0", 0, 12, 0, 2)
    if old_11:
        h.read("c1", 0, 10, 0, 0).read("c1", 0, 11, 0, 1).read("c1", 0, 12, 0, 2)
    h.drain(0, 10, 0, 0).drain(0, 11, 1, 0).drain(0, 12, 1, 1)
    h.drain_end()
    return h


def _skips(r: dict[str, Any]) -> list[tuple[str, int, int]]:
    a = r["anomalies"]["poll-skip"]
    got = [(e["reader"], e["prev_offset"], e["offset"]) for e in a["examples"]]
    assert a["count"] == len(got)
    return got


@pytest.mark.spark
def test_a_step_over_a_marker_of_a_truncated_log_is_no_skip(check) -> None:  # type: ignore[no-untyped-def]
    # 11 was read only in the log that replaced the one c0 read 10 and 12 in: no reader read
    # a record at 11 before reading p0's record at 12, so nothing shows one lay there
    assert _skips(check(_truncated())) == []


@pytest.mark.spark
def test_a_reader_that_read_11_only_after_the_truncation_is_no_witness(check) -> None:  # type: ignore[no-untyped-def]
    # the Java client's own shape: KIP-320 reset c0 to the truncation point, where it read
    # the new log's 11 and 12. It read 10, 12 and 11, but 11 after p0's record at 12: the
    # record it read at 11 is the new log's, so c0's step 10 -> 12 still skipped nothing shown
    h = _truncated()
    h.read("c0", 0, 11, 1, 0).read("c0", 0, 12, 1, 1)
    assert _skips(check(h)) == []


@pytest.mark.spark
def test_a_record_read_in_the_same_log_is_still_skipped(check) -> None:  # type: ignore[no-untyped-def]
    # c1 read the old log's 10, 11 and 12 in that order: 11 held p0's record in the log c0
    # read 10 and 12 in, and c0 did not return it
    assert _skips(check(_truncated(old_11=True))) == [("c0", 10, 12)]


@pytest.mark.spark
def test_the_final_log_shows_a_skip_of_a_step_it_holds(check) -> None:  # type: ignore[no-untyped-def]
    # no truncation: the drain read both ends' records and the one at 11 between them
    h = History()
    for seq in range(3):
        h.write(0, seq, offset=10 + seq).drain(0, 10 + seq, 0, seq)
    h.read("c0", 0, 10, 0, 0).read("c0", 0, 12, 0, 2)
    h.drain_end()
    assert _skips(check(h)) == [("c0", 10, 12)]


@pytest.mark.spark
def test_what_a_reader_read_before_its_reset_is_no_witness_after_it(check) -> None:  # type: ignore[no-untyped-def]
    # the run's other shape: c0 read the old log's 10, 11 and 12 (p0's), was reset to the
    # truncation point 10 and read the new log's 10 and 12 (p1's; 11 holds a record no
    # read_committed reader returns). It read a record at 11, but in the log before its
    # reset: the step back separates that read from the new log's record at 12
    h = History().config("topic_config", unclean_leader_election_enable="true")
    for seq in range(3):
        h.write(0, seq, offset=10 + seq).read("c0", 0, 10 + seq, 0, seq)
    h.write(1, 0, offset=10).write(1, 1, offset=12)
    h.read("c0", 0, 10, 1, 0).read("c0", 0, 12, 1, 1)
    h.drain(0, 10, 1, 0).drain(0, 12, 1, 1)
    h.drain_end()
    assert _skips(check(h)) == []
