"""The known-bug catalogue: each entry pins a scenario to a version that has a registered bug
(contract/known_bugs.py: id, link, status, affected/fixed versions) and to one that fixed it,
says what the checker must show on each, and how often it reproduced here.

``kafka-chaos bugs`` lists it; ``kafka-chaos run --bug ID [--on affected|fixed]`` runs one
side; the nightly matrix runs both sides of every runnable entry (chaos/nightly.py).

On the affected side the bug's anomaly kind must be counted and at least one of its records
must be tagged with the entry's registry id (so the checker explains it by the bug's facts,
not by accident), with the verdict the entry states. On the fixed side that kind must be 0
(and the verdict valid). A bug that did not reproduce keeps its entry with the evidence in
``status``: never an entry that "passes" by expecting nothing.
"""

from __future__ import annotations

from scenarios.bug_entry import (
    NOT_ATTEMPTED,
    SIDES,
    BugEntry,
    Pick,
    Side,
    as_side,
    judge,
    rate,
    run_misses,
    summary,
    tally,
)
from scenarios.close_skip import CLOSE_PAST_MARKER
from scenarios.coordinator_move import COORDINATOR_MOVED_ON_ASSIGN
from scenarios.eof_restart import EOF_CONSUMER_RESTART
from scenarios.epoch_reread import STALLED_READER_LEADER_MOVE
from scenarios.idle_client import IDLE_PRODUCER_ALL_BROKERS_DOWN
from scenarios.liveness import BROKERS_FENCED
from scenarios.lost_marker import LOST_TXN_MARKER, LOST_TXN_MARKER_CONTINUED
from scenarios.offsets_coordinator import (
    OFFSETS_COORDINATOR_FENCED_SCENARIO,
    OFFSETS_COORDINATOR_KILLED,
)
from scenarios.operations import STALE_TXN_REQUESTS
from scenarios.poll_stall import MAX_POLL_STALL
from scenarios.power_loss import ALL_REPLICAS_POWER_LOSS
from scenarios.replication import LAST_REPLICA_STANDING
from scenarios.stale_commit import STALE_COMMITTED_OFFSET

#: What lost-txn-marker-continued showed (docs/findings/lost-txn-marker-continued.md).
STATUS_NEXT_TXN = ("seen (timing): 1 of 10 lost-txn-marker-continued runs on Kafka 4.3.1 (an "
                   "aborted transaction's 8 held records made visible by the producer's next "
                   "commit; torn-transaction, tagged); in 5 others the elected follower held a "
                   "transaction without its marker and the coordinator resent that marker")

BUGS: tuple[BugEntry, ...] = (
    BugEntry(
        id="librdkafka#4844", axis="client_version", affected="2.13.0", fixed="2.13.2",
        kind="poll-skip", scenario=EOF_CONSUMER_RESTART,
        status="reproduces: 6/6 runs (each restart skipped one record); fixed 5/5 clean",
    ),
    BugEntry(
        id="KIP-966", axis="kafka_version", affected="3.9.1", fixed="4.3.1",
        kind="lost", scenario=LAST_REPLICA_STANDING, affected_valid=True,
        # drain only: with a live consumer the vanished records were read first and count
        # as reused-offset, not lost (the scenario's default has one)
        overrides={"consumers": 0},
        # 4.0 has ELR but leaves it off (feature eligible.leader.replicas.version 0);
        # clusters created on 4.1+ turn it on
        also=(("affected", "4.0.2"), ("fixed", "4.1.2"), ("fixed", "4.2.2")),
        status="reproduces: 6/6 runs (1935-2235 lost, all tagged); fixed 5/5 clean. "
               "Kafka 4.0.2 defaults (ELR feature level 0): 10/10 runs (1809-2491 lost, all "
               "tagged); a fresh 4.1.2 cluster (level 1): 10/10 clean; a fresh 4.2.2 cluster: "
               "5/5 clean",
    ),
    # all-replicas-power-loss (which accepts the bug) times out in-flight batches; in some
    # runs the producer then bumps its epoch and resends batches the log already holds.
    BugEntry(id="librdkafka#4953", axis="client_version", affected="2.16.1", fixed="none",
             kind="duplicate", scenario=ALL_REPLICAS_POWER_LOSS, affected_valid=True,
             timing=True,
             status="reproduces sometimes (timing): 3/7 all-replicas-power-loss runs "
                    "(librdkafka 2.16.0) had duplicates (1447; 4130; 4411), all after an "
                    "epoch bump, all tagged"),
    # Seen in a suite run of all-replicas-power-loss (which accepts it); too rare there to
    # measure a rate with, and no scenario forces the race yet.
    BugEntry(id="confluent-kafka-go#921", axis="client_version", affected="2.16.1",
             fixed="none", kind="lost", affected_valid=True, timing=True,
             status="seen twice (timing): 1 suite run of all-replicas-power-loss (librdkafka "
                    "2.16.0) lost 51 records acknowledged without offsets, right after the "
                    "producer was recreated and their partition's leader moved (0 of 22 "
                    "reruns); 1 KIP-966 run on Kafka 3.9.1 lost 3, acknowledged without "
                    "offsets after the power loss cut their partition's log"),
    # Seen in all-replicas-power-loss (which accepts it) while its power loss still cut one
    # broker after another; no scenario forces the race yet.
    BugEntry(id="KAFKA-15580", axis="kafka_version", affected="4.3.1", fixed="none",
             kind="vanished", affected_valid=True, timing=True,
             status="seen (timing): 1 of 6 all-replicas-power-loss runs on Kafka 4.3.1, two "
                    "at once on a loaded machine, while the power loss cut one broker after "
                    "another: the broker cut first was a segment behind the others and was "
                    "elected; 505 records vanished, all tagged (0 of 6 once every broker "
                    "dies before any log is cut)"),
    # stale-txn-requests (which accepts the bug) holds requests in flight until after their
    # retries; a stale EndTxn then commits the producer's next transaction in part. The
    # Java client speaks transaction version 2 with a 4.x broker (a new epoch per
    # transaction), which is the fix; librdkafka does not.
    BugEntry(id="KAFKA-17754", axis="client", affected="confluent-kafka", fixed="java:4.1.1",
             kind="torn-transaction", scenario=STALE_TXN_REQUESTS, affected_valid=True,
             timing=True, overrides={"kafka_version": "4.3.1"},
             status="reproduces (timing) with librdkafka: 11/12 stale-txn-requests runs "
                    "had torn transactions, all tagged: 4/5 on Kafka 3.9.1 (9, 20, 18, 15, 0 "
                    "records visible), 7/7 on 4.3.1 (17, 29; 41, 21, 13, 28, 36); fixed "
                    "with the Java client 4.1.1 (transaction version 2) on 4.3.1: 5/5 runs "
                    "clean though 3-6 of its EndTxn requests were held in each"),
    # lost-txn-marker (which accepts the bug): a follower with a transaction's first records
    # but not its marker is elected uncleanly after the producer stopped for good.
    BugEntry(id="KAFKA-20716", axis="kafka_version", affected="4.3.1", fixed="none",
             kind="stalled-lso", scenario=LOST_TXN_MARKER, affected_valid=True, timing=True,
             status="reproduces (timing): 3/5 lost-txn-marker runs on Kafka 4.3.1 held the "
                    "last stable offset (10, 10, 9 records stalled-lso, all tagged); in one "
                    "the followers fetched the marker before the pause took hold, in one the "
                    "producer outlasted the script's 60 s wait (120 s now)"),
    # lost-txn-marker-continued: the same lost marker while the producer goes on; its next
    # marker closes the unmarked transaction too. Not filed upstream (a draft in
    # docs/findings/lost-txn-marker-continued.md).
    BugEntry(id="lost-marker-next-txn", axis="kafka_version", affected="4.3.1", fixed="none",
             kind="torn-transaction", scenario=LOST_TXN_MARKER_CONTINUED, timing=True,
             status=STATUS_NEXT_TXN),
    # Described as a TV2 hang of Kafka 4.0/4.1; the git history says otherwise: the strict
    # marker-epoch check that rejects a retried marker (KAFKA-19446, 2025-11-20) and its fix
    # (apache/kafka#21176, 2025-12-28) both landed on the 4.2 branch before 4.2.0 was cut.
    BugEntry(id="KAFKA-19999", axis="kafka_version", affected="4.2 development builds",
             fixed="4.2.0", kind="stuck-producer",
             title="Transaction coordinator livelock caused by invalid producer epoch",
             status="not reproduced: affects no release. 4.0.x and 4.1.x keep the old "
                    "marker-epoch check (a retried transaction version 2 marker is "
                    "accepted); the stricter check that rejected it and the fix both came "
                    "in between two 4.2 development commits, before 4.2.0"),
    # The Java consumer's position is not rewound by the producer's abortTransaction (by
    # design: the application must seek back): input of an aborted transaction is skipped
    # by the next committed one. Its script (docs/findings/java_abort_no_rewind.py) runs the
    # Java driver's consume-transform-produce mode on a cluster of its own, with a seek back
    # to the committed offsets as the control; no built-in scenario has such a workload.
    BugEntry(id="KAFKA-17582", axis="client", affected="java:4.1.1", fixed="none",
             kind="poll-skip",
             title="Unpredictable consumer position after transaction abort",
             status="seen (its script, not runnable as a scenario: docs/findings/"
                    "java_abort_no_rewind.py): 5 of 5 runs on Kafka 4.3.1 (kafka-clients "
                    "4.1.1, every 4th of ~20 transactions aborted, no rebalance) left "
                    "exactly the aborted batches' inputs without an output (50 of 200 "
                    "missing each); the control, seeking back to the committed offsets "
                    "after each abort, was exactly-once and valid in 5 of 5"),
    # A librdkafka TxnOffsetCommit held past its request timeout, its transaction aborted,
    # committed by the producer's next transaction (one producer epoch for all transactions:
    # no transaction version 2). Not filed upstream (a draft in docs/findings/delayed-txn-
    # offset-commit.md); its script starts a cluster of its own and reads the group's
    # committed offsets: no built-in scenario has a consume-transform-produce workload.
    BugEntry(id="txn-offsets-after-abort", axis="client_version", affected="2.16.2",
             fixed="none", kind="poll-skip",
             title="An aborted transaction's TxnOffsetCommit, delayed, committed by the "
                   "producer's next transaction",
             status="seen (its script, not runnable as a scenario: docs/findings/"
                    "delayed_txn_offset_commit.py): 25 of 25 runs where the held request "
                    "reached the group coordinator while the next transaction was open "
                    "committed the aborted offsets (Kafka 4.3.1 with transaction "
                    "verification on, and 3.9.1); between transactions verification "
                    "refused it (0 of 5), without verification 5 of 5"),
    # all-brokers-down (a 30 s cut, clients busy) never reproduced it: only an idle client
    # loops. idle-producer-all-brokers-down cuts an idle producer's host from every broker
    # with resets and heals just after it saw them all down.
    BugEntry(id="librdkafka#5088", axis="client_version", affected="2.10.0", fixed="2.10.1",
             kind="down-after-heal", scenario=IDLE_PRODUCER_ALL_BROKERS_DOWN,
             status="reproduces (5/5 runs): the idle producer of 2.10.0 reported every "
                    "broker down 31 times from the bound after the heal on, 2.10.1 once, in "
                    "the cut (5/5 valid); producers that had sent records, and the busy "
                    "clients of all-brokers-down (0/4 runs), reconnected"),
    # brokers-fenced fences every broker and heals them while the quorum elects, so the
    # brokers serve metadata with no broker for seconds.
    # 2.11.1, before the first affected release (the reporter did not see it there), is its
    # control: no client may be left stuck.
    BugEntry(id="librdkafka#5301", axis="client_version", affected="2.16.2", fixed="none",
             kind="stuck-producer", scenario=BROKERS_FENCED, affected_valid=True,
             timing=True, also=(("unaffected", "2.11.1"),),
             status="reproduces sometimes (timing): 1 of 10 brokers-fenced runs (two "
                    "tallies of 5, the last in the figures: 0/5) left a producer without a "
                    "broker for good (2342 records timed out; tagged); in 9 of the 10 every "
                    "client logged a metadata response with no broker, and the others were "
                    "live again within the bound. The unaffected control, 2.11.1: 5/5 runs "
                    "valid, no client stuck (in 3 of them every client logged a metadata "
                    "response with no broker; each made progress 3-9 s into the liveness phase)"),
    # Seen in controller-partition (which accepts it): the fenced leader's partitions got
    # leader -1 in one metadata update; no scenario forces that update yet.
    BugEntry(id="librdkafka#5430", axis="client_version", affected="2.16.1", fixed="none",
             kind="stuck-producer", affected_valid=True, timing=True,
             status="seen (timing): 1 suite run of controller-partition (librdkafka 2.16.0): "
                    "p0 logged 'new leader-1 not found in cache' for all 3 partitions 0.2 s "
                    "after its last acknowledgement and got none in the 54 s left, 30 s of "
                    "them after the heal (2406 records timed out); p1 stayed live"),
    # offsets-coordinator-killed / -fenced: a transactional producer sends its own group
    # consumer's positions in every transaction (run option send_offsets) while the group's
    # coordinator, not the transaction's, is killed: briefly (#5456) or past the session
    # timeout (fenced, #5511). Both open: affected sides only.
    # offsets-coordinator-fenced: the call never returns, the producer process is killed
    # in it; its history proves that harmless (checkers/killed_in_call.py), so the run is
    # judged, the producer held through the liveness phase named stuck with the call.
    BugEntry(id="librdkafka#5511", axis="client_version", affected="2.16.2", fixed="none",
             kind="hung-call", scenario=OFFSETS_COORDINATOR_FENCED_SCENARIO,
             affected_valid=True, timing=True,
             status="reproduces (timing): 3/5 offsets-coordinator-fenced runs had a call "
                    "that blocked from within the 40 s kill and never returned (the producer "
                    "killed in it after 153-157 s, proved harmless; the hung call and the "
                    "stuck producer tagged), valid; the other 2 had none, valid. With the "
                    "recorded clients a 5 s call blocked 35 s in 2 of 5 runs (then _FENCED "
                    "from the new coordinator)"),
    BugEntry(id="librdkafka#5456", axis="client_version", affected="2.16.2", fixed="none",
             kind="hung-call", scenario=OFFSETS_COORDINATOR_KILLED, affected_valid=True,
             timing=True,
             status="reproduces (timing): 5/5 offsets-coordinator-killed runs had hung "
                    "calls (1, 1, 2, 3, 2 of the 3 kills of each), each 5 s call blocked "
                    "36-42 s and returned, all tagged, valid. With the recorded clients: a "
                    "1.5 s kill, 1 of 6 runs (12 s)"),
    # max-poll-stall stops a KIP-848 consumer's poll loop past max.poll.interval.ms once,
    # the topic growing meanwhile, and asks it to read again after the heal. By hand a stall
    # alone did not reproduce it (2.14.2 rejoined 2/2); with an assignment change pending
    # in the stalled member it did, 4/4.
    BugEntry(id="librdkafka#5541", axis="client_version", affected="2.14.2", fixed="2.15.0",
             kind="stuck-consumer", scenario=MAX_POLL_STALL,
             status="reproduces: 7/7 max-poll-stall runs (a 10 s stall past the 6 s "
                    "interval; on the next poll _FATAL, cause INVALID_REQUEST, and no read "
                    "after; stuck, tagged); fixed 6/6 clean (read again 2.2 s after the "
                    "stall)"),
)

# stale-committed-offset holds its consumer down across a KIP-966 truncation below the
# offset it committed, until the log is written past it again; the Java client validates
# the committed offset against its leader epoch (KIP-320), which is the fix.
BUGS += (BugEntry(id="librdkafka#5158", axis="client", affected="confluent-kafka",
                  fixed="java:4.1.1", kind="poll-skip", scenario=STALE_COMMITTED_OFFSET,
                  status="reproduces: 5/5 stale-committed-offset runs on Kafka 3.9.1 (the "
                         "restarted consumer resumed at its committed offset, 109-682 records "
                         "past the truncation point, the skip tagged); the Java client 4.1.1 "
                         "resumed at the truncation point, valid, in each of the 5 runs "
                         "that reached the situation (4 ended unknown in its setup, fixed "
                         "since: 2/2 valid)"),)

# close-past-marker restarts its consumer a second after it caught up, a transactional
# producer writing on; the Java client's close commits the position the application reached.
BUGS += (BugEntry(id="librdkafka#3400", axis="client", affected="confluent-kafka",
                  fixed="java:4.1.1", kind="poll-skip", scenario=CLOSE_PAST_MARKER,
                  status="reproduces: 5/5 close-past-marker runs (15 of 26 restarts resumed "
                         "after a marker, 34-155 offsets past the last record returned, "
                         "every skip tagged); the Java client 4.1.1 5/5 valid (27 "
                         "restarts, none skipped or re-read)"),)

# coordinator-moved-on-assign lets a restarted consumer's first poll (its assignment's
# OffsetFetch) go to the group's old coordinator right after its controlled shutdown handed
# the group on, cycling until it did; open upstream, so only the affected side runs.
BUGS += (BugEntry(id="librdkafka#5586", axis="client_version", affected="2.16.2",
                  fixed="none", kind="stuck-consumer", scenario=COORDINATOR_MOVED_ON_ASSIGN,
                  affected_valid=True,
                  status="reproduces: 5/5 coordinator-moved-on-assign runs (the consumer's "
                         "OffsetFetch for its 3 partitions answered NOT_COORDINATOR by the "
                         "stopping coordinator in the first cycle in 4 runs, the second in 1: "
                         "6 of 7 cycles; the client found the new coordinator and never "
                         "fetched; stuck 30 s after the heal, tagged, accepted: valid). "
                         "With KIP-848 groups (--group-protocol consumer, Kafka 4.3.1): 5/5 "
                         "runs the same (OffsetFetch v9; hit in the first cycle in 2, the "
                         "second in 3)"),)

# stalled-reader-leader-move moves the partition's leader twice while its consumer's loop is
# stopped (the client holds fetched, unread records); 2.1.0 fetches them again.
BUGS += (BugEntry(id="librdkafka#4261", axis="client_version", affected="2.1.0",
                  fixed="2.1.1", kind="nonmonotonic-poll", scenario=STALLED_READER_LEADER_MOVE,
                  status="reproduces: 5/5 stalled-reader-leader-move runs on Kafka 3.9.1 "
                         "(4, 49, 66, 2, 34 reads went back, steps of up to 499 offsets, each "
                         "within one session after a leader move; all tagged); fixed 5/5 "
                         "clean. 4 runs before the tally went back too (88, 161, 4, 176)"),)

BUG_BY_ID: dict[str, BugEntry] = {b.id: b for b in BUGS}


def find(bug_id: str) -> BugEntry:
    """The entry; ValueError with a one-line reason when there is none or it cannot run."""
    entry = BUG_BY_ID.get(bug_id)
    if entry is None:
        raise ValueError(f"unknown bug {bug_id!r} (see: kafka-chaos bugs)")
    if not entry.runnable:
        raise ValueError(f"bug {bug_id!r} has no scenario yet ({entry.status})")
    return entry


def table() -> list[tuple[str, str, str, str, str]]:
    """The rows of ``kafka-chaos bugs``: id, title, affected, fixed, status."""
    rows = []
    for b in BUGS:
        title = b.bug.title if b.bug else b.title
        fixed = b.labels("fixed") if b.fixed != "none" else "not fixed"
        control = [b.label("unaffected", v) for v in b.versions("unaffected")]
        if control:  # a release before the first affected one, run as a control
            fixed += f" (unaffected: {', '.join(control)})"
        rows.append((b.id, title, b.labels("affected"), fixed, b.status))
    return rows


__all__ = ["BUGS", "BUG_BY_ID", "NOT_ATTEMPTED", "SIDES", "BugEntry", "Pick", "Side",
           "as_side", "find", "judge", "rate", "run_misses", "summary", "table", "tally"]
