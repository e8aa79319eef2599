"""The runnable known-bug catalogue entries on real clusters: on the affected version the
bug's anomaly is counted, tagged with its registry entry, and the verdict is what the entry
states; on the fixed version the kind is 0 and the verdict valid.

Each run is ~1.5-2.5 minutes (cluster, 20-35 s workload, drain, Spark check). KIP-966's fixed
side (Kafka 4.3.1, ELR) is nightly only: tests/scenarios/test_replication_scenarios.py runs
the same scenario on 4.3.1 in the suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.events import Event
from contract.known_bugs import FRESH_ID_IMPLICIT_ACK, LEADER_MOVE_CLIENT_BUGS
from runner.orchestrator import run
from scenarios.bugs import BUG_BY_ID, BugEntry, Side, judge, run_misses, summary
from scenarios.eof_restart import eof_restarts_done

pytestmark = pytest.mark.cluster


def run_bug(entry: BugEntry, side: Side, tmp_path: Path) -> dict[str, Any]:
    assert entry.scenario is not None
    cfg = entry.scenario.run_config(out=str(tmp_path), report=False, **entry.pin(side))
    outcome = run(cfg, entry.scenario, progress=print)
    assert outcome.completed, outcome.error
    res = outcome.results
    assert res is not None, "no results"
    print(outcome.run_dir, summary(entry, side, res))
    events = (Path(outcome.run_dir) / "history" / "events.jsonl").read_text()
    res = {**res, "_events": [json.loads(line) for line in events.splitlines() if line]}
    return res


def unexplained(res: dict[str, Any], kind: str = "lost") -> list[str]:
    """The examples of ``kind`` no known bug explains (the checker lists them first), with
    their acknowledgement's time relative to each fault start: what a failure must show."""
    starts = [(e["kind"], e["ts_ns"]) for e in res["_events"] if e["phase"] == "start"]
    out = []
    for ex in res["anomalies"][kind]["examples"]:
        if ex.get("known_bug") is None:
            rel = ", ".join(f"{(ex['complete_ns'] - ts) / 1e6:+.0f} ms from {k} start"
                            for k, ts in starts if ex.get("complete_ns") is not None)
            out.append(f"({ex['producer']}, {ex['seq']}) {ex.get('outcome')} at "
                       f"{ex.get('acked_offset')}, excused {ex.get('excused')}: {rel}")
    return out


@pytest.mark.parametrize("side", ["affected", "fixed"])
def test_librdkafka_4844_skips_a_record_after_a_restart(tmp_path, side) -> None:  # type: ignore[no-untyped-def]
    entry = BUG_BY_ID["librdkafka#4844"]
    res = run_bug(entry, side, tmp_path)
    assert judge(entry, side, res) == [], summary(entry, side, res)
    skips = res["anomalies"]["poll-skip"]
    if side == "affected":
        # each example is one skipped offset after the EOF (position + 2), named by the bug
        for ex in skips["examples"]:
            assert ex["offset"] - ex["prev_offset"] == 2, ex
            assert ex["known_bug"]["id"] == "librdkafka#4844", ex
    else:  # the restarts happened and resumed exactly where the reader stopped
        assert res["anomalies"]["nonmonotonic-poll"]["count"] == 0
    # The workload ended early only because its end condition held at some moment before
    # the end (a restart during the settle time may make it false again by the end).
    start, end = (next(e["ts_ns"] for e in res["_events"] if e["kind"] == "phase"
                       and e["detail"].get("name") == "workload" and e["phase"] == phase)
                  for phase in ("start", "end"))
    before = sorted((Event.from_json(e) for e in res["_events"] if e["ts_ns"] <= end),
                    key=lambda e: e.ts_ns)
    ran_s = (end - start) / 1e9
    print(f"workload {ran_s:.1f} s")
    assert entry.scenario is not None
    held = any(eof_restarts_done(before[:i + 1]) for i in range(len(before)))
    assert held or ran_s >= entry.scenario.run_config().duration - 1, ran_s


@pytest.mark.parametrize("side", [pytest.param("affected", id="kafka-3.9.1"),
                                  pytest.param("fixed", id="kafka-4.3.1",
                                               marks=pytest.mark.nightly)])
def test_kip_966_last_replica_standing(tmp_path, side) -> None:  # type: ignore[no-untyped-def]
    entry = BUG_BY_ID["KIP-966"]
    res = run_bug(entry, side, tmp_path)
    assert res["mechanism"]["observed"], res["mechanism"]
    assert judge(entry, side, res) == [], (summary(entry, side, res), unexplained(res))
    if side == "affected":
        lost = res["anomalies"]["lost"]
        tagged = [e for e in lost["examples"] if e.get("known_bug")]
        ids = {e["known_bug"]["id"] for e in tagged}
        assert "KIP-966" in ids, lost
        # besides: the scenario's accepted client bugs, e.g. confluent-kafka-go#921's records
        # acknowledged without an offset after the power loss cut the log (seen in a suite)
        assert ids <= {"KIP-966", *LEADER_MOVE_CLIENT_BUGS}, ids
        assert all(e["acked_offset"] is None for e in tagged
                   if e["known_bug"]["id"] == FRESH_ID_IMPLICIT_ACK), tagged


@pytest.mark.parametrize("side", [pytest.param("affected", id="confluent-kafka"),
                                  pytest.param("fixed", id="java-4.1.1",
                                               marks=pytest.mark.nightly)])
def test_librdkafka_5158_resumes_past_a_truncation(tmp_path, side) -> None:  # type: ignore[no-untyped-def]
    entry = BUG_BY_ID["librdkafka#5158"]
    res = run_bug(entry, side, tmp_path)
    assert res["mechanism"]["observed"], res["mechanism"]
    assert judge(entry, side, res) == [], summary(entry, side, res)
    came_back = next(e for e in res["_events"] if e["kind"] == "situation"
                     and "committed" in e["detail"] and "high_watermark_after" in e["detail"])
    committed = came_back["detail"]["committed"]
    skips = res["anomalies"]["poll-skip"]["examples"]
    if side == "affected":
        # the restarted consumer's first read is at its committed offset, above the
        # truncation point: the step from the record the truncation replaced, named
        assert skips and all(ex["known_bug"]["id"] == "librdkafka#5158" for ex in skips)
        assert any(ex["reader"] == "c0" and ex["offset"] == committed
                   and ex["prev_offset"] == committed - 1 and ex.get("replaced")
                   for ex in skips), skips
    else:  # the Java client went back to the truncation point: a step back, excused
        back = res["anomalies"]["nonmonotonic-poll"]
        assert back["count"] >= 1 and back["excused"] == back["count"], back


@pytest.mark.nightly
@pytest.mark.parametrize("side", [pytest.param("affected", id="confluent-kafka"),
                                  pytest.param("fixed", id="java-4.1.1")])
def test_librdkafka_3400_close_commits_past_a_marker(tmp_path, side) -> None:  # type: ignore[no-untyped-def]
    entry = BUG_BY_ID["librdkafka#3400"]
    res = run_bug(entry, side, tmp_path)
    assert res["mechanism"]["observed"], res["mechanism"]
    assert judge(entry, side, res) == [], summary(entry, side, res)
    skips = res["anomalies"]["poll-skip"]
    if side == "affected":
        # each skip is the restarted consumer's first read, right after a marker, named
        assert skips["examples"] and all(ex["known_bug"]["id"] == "librdkafka#3400"
                                         for ex in skips["examples"]), skips
        assert skips["known_bugs"] == {"librdkafka#3400": skips["count"]}, skips
    else:  # the Java client's close committed what its application was given
        assert skips["count"] == 0 and res["anomalies"]["nonmonotonic-poll"]["count"] == 0


@pytest.mark.nightly
def test_librdkafka_5586_offset_fetch_answered_not_coordinator(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """coordinator-moved-on-assign: a stuck consumer may only be #5586's (its reader logged
    the request-level NOT_COORDINATOR answer to its assignment's OffsetFetch), and when the
    script saw that line the consumer must be stuck and named. Nightly: ~4 minutes."""
    entry = BUG_BY_ID["librdkafka#5586"]
    res = run_bug(entry, "affected", tmp_path)
    assert run_misses(entry, "affected", res) == [], summary(entry, "affected", res)
    hit = [e for e in res["_events"] if e["kind"] == "situation"]
    stuck = res["anomalies"]["stuck-consumer"]
    if hit:
        assert stuck["known_bugs"] == {"librdkafka#5586": 1}, summary(entry, "affected", res)


@pytest.mark.nightly
@pytest.mark.parametrize("side", ["affected", "fixed"])
def test_librdkafka_4261_rereads_after_an_epoch_change(tmp_path, side) -> None:  # type: ignore[no-untyped-def]
    entry = BUG_BY_ID["librdkafka#4261"]
    res = run_bug(entry, side, tmp_path)
    assert res["mechanism"]["observed"], res["mechanism"]
    assert judge(entry, side, res) == [], summary(entry, side, res)
    if side == "affected":
        # each step back came within one session (no rebalance between), after the leader
        # moved during a poll stall, and is named by the bug
        backs = res["anomalies"]["nonmonotonic-poll"]["examples"]
        assert backs and all(ex["known_bug"]["id"] == "librdkafka#4261"
                             and not ex["excused"] for ex in backs), backs
        moved = min(e["ts_ns"] for e in res["_events"] if e["kind"] == "situation")
        assert all(ex["event_ns"] > moved for ex in backs), backs


@pytest.mark.parametrize("side", ["affected", pytest.param("fixed", marks=pytest.mark.nightly)])
def test_librdkafka_5088_an_idle_producer_loops_after_the_heal(tmp_path, side) -> None:  # type: ignore[no-untyped-def]
    entry = BUG_BY_ID["librdkafka#5088"]
    res = run_bug(entry, side, tmp_path)
    assert judge(entry, side, res) == [], summary(entry, side, res)
    heal = max(e["ts_ns"] for e in res["_events"]
               if e["kind"] == "partition" and e["phase"] == "end")
    late = [e for e in res["_events"] if e["kind"] == "client-error"
            and e["detail"]["client"] == "p1" and e["ts_ns"] > heal + 15 * 10**9]
    down = res["anomalies"]["down-after-heal"]
    if side == "affected":
        # the idle producer went on reporting every broker down, about once a second, from
        # the bound after the heal until it had records to send; named by the bug
        assert down["count"] == 1 and down["known_bugs"] == {"librdkafka#5088": 1}, down
        assert down["examples"][0]["client"] == "p1" and len(late) >= 10, down
    else:
        assert down["count"] == 0 and not late, down

