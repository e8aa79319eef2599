"""Known bugs are data: the registry of client and broker bugs a chaos run can reproduce.

The checker tags every anomaly record an entry explains (results.json
``anomalies.<kind>.known_bugs`` counts them, examples carry ``known_bug``), and a run may
*accept* entries by id (run.json ``accept_known``): a forbidden kind then leaves the verdict
valid only when every one of its records matches an accepted entry (checkers/README.md).

An entry explains a record when the record's kind is one of ``kinds``, every fact of
``facts`` holds for it, and the run's version of ``component`` is affected (an unknown
version cannot be ruled out, so it counts as affected). Facts are the names in
:data:`FACTS`; the checker computes each one per record, so a condition is data, not code.

Dependency-free on purpose: every stage (chaos's CLI refusing unknown ids, the checker,
the report) reads it. Sources are in ../shared/KAFKA-FACTS.md ("Known bugs a chaos run can
reproduce", checked 2026-11-23) and librdkafka's CHANGELOG.md.
"""

from __future__ import annotations

from contract.bug_facts import FACTS
from contract.bug_model import FIXED, OPEN, KnownBug, version_tuple

#: The open client bug any run that moves leaders under an idempotent, non-transactional
#: librdkafka producer can hit: after a timeout or an out-of-order sequence the producer bumps
#: its epoch and may resend a batch the log holds. Scenarios about Kafka accept it (each such
#: record stays counted and named; any other duplicate still fails the run).
EPOCH_BUMP_RESEND = "librdkafka#4953"

#: The open client bug behind a fresh producer id's first records in a partition lost while
#: reported delivered: the leader accepts a producer id it has no state for from any
#: sequence, so when the first batch fails (a leader move) and a later one succeeds, the
#: broker holds the later one only and librdkafka acks the first implicitly, without offsets.
FRESH_ID_IMPLICIT_ACK = "confluent-kafka-go#921"

#: Kafka's design limitation before Eligible Leader Replicas: the last replica standing.
KIP_966 = "KIP-966"

#: Kafka's missing unclean recovery: after every in-sync replica restarted uncleanly the
#: controller elects the last known leader, not the replica with the longest log.
UNCLEAN_RECOVERY = "KAFKA-15580"
#: A transaction marker missing on a replica elected uncleanly: the last stable offset stays
#: at that transaction's first offset (open, documented upstream instead of fixed).
KAFKA_20716 = "KAFKA-20716"
#: The same lost marker while its producer goes on: the producer's next marker closes the
#: unmarked transaction too (not filed upstream yet: docs/findings/lost-txn-marker-continued.md).
LOST_MARKER_NEXT_TXN = "lost-marker-next-txn"
#: librdkafka's partition left on no broker by a metadata update with leader -1 (open).
LEADER_UNKNOWN = "librdkafka#5430"
#: librdkafka dropping every broker on a metadata response that lists none (open).
NO_BROKERS_METADATA = "librdkafka#5301"

#: librdkafka's send_offsets_to_transaction blocking past its timeout once the group's
#: coordinator went down (open), and its variant once the coordinator was fenced (open).
OFFSETS_COORDINATOR_DOWN = "librdkafka#5456"
OFFSETS_COORDINATOR_FENCED = "librdkafka#5511"

#: librdkafka's KIP-848 member that exceeded max.poll.interval.ms rejoining at epoch 0
#: without a full request, answered INVALID_REQUEST and dead of it (fixed in 2.15.0).
MAX_POLL_REJOIN_FATAL = "librdkafka#5541"

#: librdkafka's close committing a control record's offset + 1 past fetched records it never
#: returned: the group's next consumer resumes after them (closed upstream unfixed; open).
CLOSE_PAST_MARKER = "librdkafka#3400"

#: librdkafka's committed offset used without validating it against its leader epoch: a
#: consumer that starts after a truncation below it resumes past the truncation point.
STALE_COMMITTED_OFFSET = "librdkafka#5158"

#: librdkafka's assigned partitions left waiting for their committed offsets for good once
#: the OffsetFetch asking for them was answered NOT_COORDINATOR as a whole (open).
OFFSET_FETCH_NOT_COORDINATOR = "librdkafka#5586"

#: librdkafka 2.1.0's KIP-320 validation after a leader epoch change: it fetches again from
#: the application's position while the records it had fetched past it stay queued.
EPOCH_VALIDATION_REREAD = "librdkafka#4261"

#: The client bugs a scenario that moves leaders under an idempotent, non-transactional
#: librdkafka producer accepts (records they explain stay counted and named).
LEADER_MOVE_CLIENT_BUGS: tuple[str, ...] = (EPOCH_BUMP_RESEND, FRESH_ID_IMPLICIT_ACK)


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        id=EPOCH_BUMP_RESEND,
        title="Sporadic message duplication during leader transition with idempotent producer",
        link="https://github.com/confluentinc/librdkafka/issues/4953",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("duplicate", "reorder"),
        facts=frozenset({"idempotent_producer", "non_transactional_producer",
                         "epoch_bump_before", "copies_in_new_epoch"}),
        note="after a message timeout or an out-of-order sequence the producer bumps its "
        "epoch and resends in-flight batches under the new epoch, which the broker cannot "
        "deduplicate; only transactions avoid it (maintainer, 2025-05-16)",
    ),
    KnownBug(
        id=FRESH_ID_IMPLICIT_ACK,
        title="Data loss when a new producer produces while the partition's leader is being "
        "re-elected",
        link="https://github.com/confluentinc/confluent-kafka-go/issues/921",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("lost",),
        facts=frozenset({"idempotent_producer", "non_transactional_producer",
                         "fresh_producer_id_head", "leader_moved_in_flight"}),
        note="a partition leader that has no state for a producer id accepts its first batch "
        "at any sequence; when a new producer's first batch in a partition fails across a "
        "leader move and a later batch reaches the new leader first, the log holds the later "
        "batch only, and librdkafka reports the first one delivered (implicitly acked by the "
        "later success, so without an offset); seen here after the workload recreated a "
        "producer whose idempotence state had become fatal",
    ),
    KnownBug(
        id="librdkafka#4844",
        title="Offset increased for eof pseudo messages",
        link="https://github.com/confluentinc/librdkafka/issues/4844",
        status=FIXED,
        component="librdkafka",
        affected_from="2.2.0",
        fixed_in="2.13.2",
        kinds=("poll-skip",),
        facts=frozenset({"partition_eof", "skipped_one_offset"}),
        note="with enable.partition.eof=true the batch consume path (confluent-kafka's "
        "Consumer.consume) moved the position to last offset + 2 after the EOF event "
        "(fixed by PR #5213)",
    ),
    KnownBug(
        id=KIP_966,
        title="Last replica standing: committed data lost when the only in-sync replica "
        "loses its page cache",
        link="https://cwiki.apache.org/confluence/display/KAFKA/KIP-966%3A+Eligible+Leader+Replicas",
        status=FIXED,
        component="kafka",
        affected_from=None,
        fixed_in="4.1.0",
        kinds=("lost", "vanished", "reused-offset"),
        facts=frozenset({"crash_isr_power_loss"}),
        note="without Eligible Leader Replicas the last ISR member is re-elected after an "
        "unclean restart and the others truncate to it; ELR is opt-in in 4.0 and on by default "
        "only for clusters created on 4.1 or later",
    ),
    KnownBug(
        id=UNCLEAN_RECOVERY,
        title="Unclean recovery (KIP-966 part 2): elect the replica with the longest log when "
        "no in-sync replica is clean",
        link="https://issues.apache.org/jira/browse/KAFKA-15580",
        status=OPEN,
        component="kafka",
        affected_from=None,
        fixed_in=None,
        kinds=("lost", "vanished", "reused-offset"),
        facts=frozenset({"elected_lost_power_loss"}),
        note="when every replica of a partition's ISR restarts after a power loss, none is "
        "eligible and the controller elects the last known leader (KIP-966's election order), "
        "whatever its log holds; records another replica kept on disk past that leader's "
        "recovery point are truncated from it. The KIP's unclean recovery, which asks every "
        "replica for its log end and elects the longest, is not in any release",
    ),
    KnownBug(
        id="KAFKA-17754",
        title="A delayed EndTxn decides a later transaction of the same producer epoch",
        link="https://issues.apache.org/jira/browse/KAFKA-17754",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("torn-transaction",),
        facts=frozenset({"transactional_producer", "end_txn_held"}),
        note="an EndTxn that timed out and was retried on a new connection reaches the "
        "coordinator after the producer began its next transaction, which still has the same "
        "epoch, and commits or aborts it early. The entry explains only a torn transaction "
        "that its producer's held EndTxn was released into, never an aborted read (a record "
        "its producer was told was aborted, read by a read_committed reader, stays a "
        "violation). Fixed for clients of transaction version 2 (KIP-890 part 2: a new "
        "epoch per transaction, 4.0 brokers and Java clients), which librdkafka does not "
        "implement (its issue #5423 is open)",
    ),
    KnownBug(
        id=KAFKA_20716,
        title="Transaction marker lost by an unclean election: the last stable offset stays "
        "at the transaction's first offset",
        link="https://issues.apache.org/jira/browse/KAFKA-20716",
        status=OPEN,
        component="kafka",
        affected_from=None,
        fixed_in=None,
        kinds=("stalled-lso",),
        facts=frozenset({"transactional_producer", "unclean_election_after_stalled_txn"}),
        note="a replica that holds a transaction's records but not its COMMIT/ABORT marker, "
        "elected uncleanly (or, without ELR, re-elected after a power loss whose recovery "
        "point lies between the records and the marker), rebuilds the producer as having a "
        "transaction open; the coordinator counts it complete, so no marker comes unless the "
        "same producer writes to the partition again, and read_committed readers stall at "
        "its first offset. Upstream documents it (PR #22937) rather than fixing it. The "
        "entry names only writes held behind a stable offset an unclean election of their "
        "partition may have stripped of its marker; the power-loss variant is not tagged",
    ),
    KnownBug(
        id=LOST_MARKER_NEXT_TXN,
        title="Transaction marker lost by an unclean election: the producer's next marker "
        "decides the unmarked transaction too",
        link="https://issues.apache.org/jira/browse/KAFKA-20716",
        status=OPEN,
        component="kafka",
        affected_from=None,
        fixed_in=None,
        kinds=("torn-transaction",),
        facts=frozenset({"transactional_producer", "unclean_election_in_txn"}),
        note="not filed upstream yet (a draft report: docs/findings/lost-txn-marker-continued.md; "
        "KAFKA-20716 is the same lost marker with a producer that stops). A replica elected "
        "uncleanly that holds a transaction's records without its marker keeps the "
        "transaction open; when the same producer writes its next transaction there, that "
        "transaction's marker closes both: a transaction the coordinator aborted becomes "
        "visible (in part, where the election truncated the rest) with the next one's "
        "commit. The entry names only torn transactions with an unclean election of their "
        "partition between their first attempt and their read",
    ),
    KnownBug(
        id="librdkafka#5088",
        title="Re-bootstrap loop in case of ALL_BROKERS_DOWN",
        link="https://github.com/confluentinc/librdkafka/issues/5088",
        status=FIXED,
        component="librdkafka",
        affected_from="2.10.0",
        fixed_in="2.10.1",
        kinds=("down-after-heal",),
        facts=frozenset({"client_cut_from_every_broker"}),
        note="2.10.0 removes the brokers a metadata response leaves out and re-bootstraps "
        "once all are down; it then keeps selecting the bootstrap brokers (no connection "
        "attempt yet) over the learned ones, and the first metadata response decommissions "
        "the bootstrap brokers again, which counts as every broker down: it loops, "
        "re-bootstrapping about once a second, instead of reconnecting. Only a client with "
        "no work for a learned broker loops (an idle producer that knows no topic yet): "
        "anything to send or fetch reconnects a learned broker on its own, so the bug leaves "
        "no producer or consumer stuck. 2.10.1 gives the learned brokers a higher chance "
        "(librdkafka CHANGELOG 2.10.1)",
    ),
    KnownBug(
        id=NO_BROKERS_METADATA,
        title="A metadata response listing no broker makes the client drop every broker "
        "and stop re-bootstrapping",
        link="https://github.com/confluentinc/librdkafka/issues/5301",
        status=OPEN,
        component="librdkafka",
        # reported on 2.13.0 and "not in 2.11.1"; 2.12.x is untested upstream and here
        affected_from="2.12.0",
        fixed_in=None,
        kinds=("stuck-producer", "stuck-consumer"),
        facts=frozenset({"logged_no_brokers"}),
        note="a metadata response with no broker and some topics (every broker fenced: "
        "brokers that learn it serve such metadata until one is unfenced) is taken as valid: "
        "the client decommissions every broker it knows and starts a re-bootstrap; a second "
        "such response, from a bootstrap broker, decommissions those too and the client is "
        "left with no broker for good (\"no usable brokers\"). Fix proposed (PR #5303), "
        "unmerged. Listed before librdkafka#5430, whose leader -1 lines the same metadata "
        "brings: with no broker left the client cannot deliver whatever its partitions' "
        "leaders",
    ),
    KnownBug(
        id=LEADER_UNKNOWN,
        title="leader=-1 in a metadata update leaves the partition without a broker for good",
        link="https://github.com/confluentinc/librdkafka/issues/5430",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("stuck-producer",),
        facts=frozenset({"logged_leader_unknown"}),
        note="a metadata update that names leader -1 for a partition (its leader fenced: a "
        "broker cut from the controller) skips the partition's update and leaves it on no "
        "broker; later metadata with a live leader does not move it back, so the producer "
        "queues its records until they time out and never delivers to it again (issue: "
        "confirmed on 2.12.1 and 2.14.1, open). Seen here on 2.16.0 after a controller "
        "partition",
    ),
    KnownBug(
        id=OFFSETS_COORDINATOR_FENCED,
        title="send_offsets_to_transaction never returns once the group coordinator broker "
        "was fenced and dropped from metadata",
        link="https://github.com/confluentinc/librdkafka/issues/5511",
        status=OPEN,
        component="librdkafka",
        affected_from="2.10.0",
        fixed_in=None,
        # the producer blocked in the call through the liveness phase is stuck, with the
        # call's facts (checkers/killed_in_call.py)
        kinds=("hung-call", "stuck-producer"),
        facts=frozenset({"coordinator_down_in_call", "coordinator_fenced_in_call"}),
        note="the transactional producer keeps the group coordinator's broker handle of the "
        "offsets commit; once that broker is fenced (down longer than the broker session "
        "timeout) metadata drops it and the handle is decommissioned, and the call waits on it "
        "past its timeout (reported \"happening since v2.9.0\"; fix #5512 not merged). The "
        "entry names only a send_offsets_to_transaction of a group whose own coordinator was "
        "taken down by the run for longer than the session timeout",
    ),
    KnownBug(
        id=OFFSETS_COORDINATOR_DOWN,
        title="send_offsets_to_transaction ignores its timeout when the group coordinator is "
        "down",
        link="https://github.com/confluentinc/librdkafka/issues/5456",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("hung-call",),
        facts=frozenset({"coordinator_down_in_call"}),
        note="with the broker that coordinates the consumer group (the leader of the group's "
        "__consumer_offsets partition) killed or paused, the TxnOffsetCommit waits for the "
        "coordinator beyond the call's timeout; the call returns once a coordinator answers, "
        "or never. The entry names only a send_offsets_to_transaction of a group whose own "
        "coordinator the run took down while the call waited",
    ),
    KnownBug(
        id=MAX_POLL_REJOIN_FATAL,
        title="KIP-848 consumer that exceeded max.poll.interval.ms fails with a fatal "
        "INVALID_REQUEST instead of rejoining",
        link="https://github.com/confluentinc/librdkafka/issues/5541",
        status=FIXED,
        component="librdkafka",
        affected_from="2.12.0",
        fixed_in="2.15.0",
        kinds=("stuck-consumer",),
        facts=frozenset({"kip848_consumer", "poll_stalled_past_interval",
                         "fatal_after_stall"}),
        note="with group.protocol=consumer, when max.poll.interval.ms expires the member "
        "sends its leave heartbeat at once and marks itself to rejoin; a leave reply "
        "handled before the rejoin resets the member and clears that mark, so on its next "
        "poll it heartbeats at epoch 0 without the full join request, the broker answers "
        "INVALID_REQUEST and librdkafka raises it as fatal: the consumer never reads again. "
        "2.15.0 defers the leave until the assignment is revoked (librdkafka PR #5488; "
        "CHANGELOG 2.15.0: \"Happening since 2.12.0\")",
    ),
)

KNOWN_BUGS += (
    KnownBug(
        id=STALE_COMMITTED_OFFSET,
        title="Assigned offsets are not validated and can cause an offset reset in case of "
        "partition truncation",
        link="https://github.com/confluentinc/librdkafka/issues/5158",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("poll-skip",),
        facts=frozenset({"restart_past_truncation"}),
        note="a consumer that starts from a committed offset fetches at it without "
        "validating it against the leader epoch it was committed in (OffsetForLeaderEpoch, "
        "KIP-320), as it does after a leader change. When the partition was truncated "
        "below the committed offset and written past it again, the consumer resumes there "
        "and skips the records written at the offsets the truncation reused; while the log "
        "ends below it, the fetch is out of range and auto.offset.reset decides. Since 1.x; "
        "the fix (PR #4931) was reverted (PR #5207), its second version (PR #5209) is open. "
        "The Java client validates the committed offset and resumes at the truncation point",
    ),
    KnownBug(
        id=CLOSE_PAST_MARKER,
        title="Consumer advances consumer group offset too far if topic contains transactions",
        link="https://github.com/confluentinc/librdkafka/issues/3400",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("poll-skip",),
        facts=frozenset({"resumed_after_marker"}),
        note="a control record's offset + 1 is stored when the record is handled; during "
        "close() the consumer handles the control records already in its fetch queue while "
        "it drops the data records queued before them, and the final commit stores the "
        "marker's offset + 1: the group's next consumer skips records nobody returned. "
        "Closed upstream in 2021 without a fix; reproduced here on 2.12.0-2.16.2 (control "
        "records have been stored since 1.4.0)",
    ),
)

# librdkafka#5586: its own block (the liveness kinds' open client bugs above are others').
KNOWN_BUGS += (
    KnownBug(
        id=OFFSET_FETCH_NOT_COORDINATOR,
        title="OffsetFetch request-level NOT_COORDINATOR leaves partition in .queried; "
        "fetcher never starts and never retries",
        link="https://github.com/confluentinc/librdkafka/issues/5586",
        status=OPEN,
        component="librdkafka",
        affected_from=None,
        fixed_in=None,
        kinds=("stuck-consumer",),
        facts=frozenset({"offset_fetch_not_coordinator"}),
        note="a group consumer asks the group's coordinator for its new assignment's "
        "committed offsets (OffsetFetch) before it fetches; when a broker that no longer "
        "coordinates the group (the coordinator moved, the client has not noticed yet) "
        "answers NOT_COORDINATOR for the request as a whole, librdkafka re-queries the "
        "coordinator but neither retries the request nor asks again: the partitions stay "
        "queried, never fetched, until the next assignment or a restart (issue reported "
        "2026-09, open). The entry names only a consumer that logged that answer "
        "(debug=cgrp) after the assignment of every partition it waits on",
    ),
)

KNOWN_BUGS += (
    KnownBug(
        id=EPOCH_VALIDATION_REREAD,
        title="Duplicate messages when a fetch response is received during offset validation",
        link="https://github.com/confluentinc/librdkafka/pull/4261",
        status=FIXED,
        component="librdkafka",
        affected_from="2.1.0",
        fixed_in="2.1.1",
        kinds=("nonmonotonic-poll",),
        facts=frozenset({"epoch_rise_before_reread"}),
        note="2.1.0 (KIP-320) validates the position when metadata shows a new leader epoch, "
        "setting the next fetch start to the application's position; once validated it "
        "fetches from there again while the records fetched past it stay queued (and a "
        "fetch answered during the validation is kept): the application reads those "
        "offsets twice. 2.1.1 validates the fetch position and drops such a response "
        "(PR #4261, fixing #4249; CHANGELOG 2.1.1)",
    ),
)

BY_ID: dict[str, KnownBug] = {b.id: b for b in KNOWN_BUGS}

#: Lines a client logs that are a known bug's evidence: bug id -> the text the line holds. A
#: workload client that logs one writes a ``client-log`` event (contract.events.CLIENT_LOG).
LOG_SIGNATURES: dict[str, str] = {
    # rd_kafka_toppar_leader_update on a metadata update naming leader -1: the partition is
    # left without a broker and later metadata does not bring it back
    LEADER_UNKNOWN: "new leader-1 not found in cache",
    # rd_kafka_parse_Metadata's summary line (debug=metadata): "<broker>: 0 brokers, 1 topics"
    NO_BROKERS_METADATA: ": 0 brokers, ",
    # rd_kafka_assignment_handle_OffsetFetch (debug=cgrp) on an error of the whole request
    # (no partition in the answer): the assignment's partitions are never asked for again
    OFFSET_FETCH_NOT_COORDINATOR: "Offset fetch error for 0 partition(s): Broker: Not "
                                  "coordinator",
}


def known_bug(bug_id: str) -> KnownBug | None:
    """The entry with this id, or None."""
    return BY_ID.get(bug_id)


def unknown_ids(ids: list[str] | tuple[str, ...]) -> list[str]:
    """The ids of ``ids`` the registry does not hold (for refusing bad ``accept_known``)."""
    return [i for i in ids if i not in BY_ID]


__all__ = ["BY_ID", "CLOSE_PAST_MARKER", "EPOCH_BUMP_RESEND", "EPOCH_VALIDATION_REREAD",
           "FACTS", "FIXED",
           "FRESH_ID_IMPLICIT_ACK",
           "KAFKA_20716", "KIP_966", "LOST_MARKER_NEXT_TXN",
           "KNOWN_BUGS", "LEADER_MOVE_CLIENT_BUGS", "LEADER_UNKNOWN", "LOG_SIGNATURES",
           "MAX_POLL_REJOIN_FATAL", "NO_BROKERS_METADATA", "OFFSET_FETCH_NOT_COORDINATOR",
           "OFFSETS_COORDINATOR_DOWN", "OFFSETS_COORDINATOR_FENCED", "OPEN",
           "STALE_COMMITTED_OFFSET",
           "UNCLEAN_RECOVERY", "KnownBug",
           "known_bug", "unknown_ids", "version_tuple"]
