"""The facts a known bug's condition may name (contract/known_bugs.py), each with what it
means for one anomaly record; the checker computes each one per record (checkers/known.py,
checkers/liveness.py). Kept apart from the registry so each stays one screen to read.
"""

from __future__ import annotations

#: The facts a condition may name, and what each means for one anomaly record.
FACTS: dict[str, str] = {
    "idempotent_producer": "the run's producers have enable.idempotence=true",
    "non_transactional_producer": "the run's producers have no transactional.id",
    "epoch_bump_before": "a write of the record's producer ended with an epoch-bump error "
    "(_MSG_TIMED_OUT, OUT_OF_ORDER_SEQUENCE_NUMBER, ...) after the record's first attempt and "
    "before its later copy (duplicate) or its out-of-order copy (reorder) was first read",
    "copies_in_new_epoch": "where the replicas' segments were collected, the batches holding "
    "the duplicate's two copies (the reorder's two records) differ in producer id or epoch "
    "(a resend under a bumped epoch); without segments, no evidence against",
    "partition_eof": "the reader ran with enable.partition.eof=true",
    "skipped_one_offset": "the reader's jump went from offset o to o + 2 (one offset skipped)",
    "crash_isr_power_loss": "every replica in the record's partition's ISR at a power loss "
    "lost power in it, the record lay at or above each one's recovery point (the power-loss "
    "event's ``lost``), and the record was acknowledged or read before it",
    "elected_lost_power_loss": "every replica in the record's partition's ISR from the "
    "record's acknowledgement (or first read) until a power loss lost power in it, and the "
    "replica the observer first saw lead the partition after it, one of them, lost the "
    "record (it lay at or above that replica's recovery point in the power-loss event's "
    "``lost``)",
    "transactional_producer": "the run's producers have a transactional.id",
    "fresh_producer_id_head": "the record was acknowledged without an offset, and the "
    "client that sent it (a new producer id: its first ``producer-epoch`` event names its "
    "first seq) had acknowledged nothing in the record's partition with an offset at a lower "
    "seq, and acknowledged a record there with an offset at a higher seq; or, counted from "
    "the latest power loss that cut the log of the partition's leader at recovery before the "
    "record's acknowledgement "
    "(the leader then has no state for any producer id either), the client acknowledged "
    "nothing there with an offset at a lower seq since that cut, and a record at a higher "
    "seq",
    "leader_moved_in_flight": "the partition's leader (or leader epoch) changed after the "
    "record's first attempt and before its acknowledgement (observed up to 2 s later: the "
    "observer's sampling); with ``fresh_producer_id_head``'s cut, that cut was of the node "
    "that led the partition at recovery",
    "logged_leader_unknown": "(a stuck producer) after its last acknowledgement before the "
    "liveness window and before the window's end, the client logged librdkafka's \"new "
    "leader-1 not found in cache\" (a ``client-log`` event): a metadata update gave one of its "
    "partitions leader -1",
    "logged_no_brokers": "(a stuck producer or consumer) after its last progress before the "
    "liveness window (an acknowledgement; a record read by one of its readers) and by the "
    "window's end, the client logged librdkafka's metadata line \"0 brokers, N topics\" (a "
    "``client-log`` event; librdkafka writes it with ``debug=metadata`` only): a metadata "
    "response listed no broker",
    "client_cut_from_every_broker": "(a down-after-heal producer) the last fault before its "
    "counted reports was a partition that cut the client host from every broker of the "
    "cluster (shape ``client``, every broker a target), and the client reported every broker "
    "down while that cut was in force: its re-bootstraps began with the cut, and the brokers "
    "themselves stayed up",
    "coordinator_down_in_call": "(a hung call) the call is send_offsets_to_transaction for "
    "consumer group G of transactional id T (the hung-call event's ``group`` and "
    "``transactional_id``); a kill, stop or pause fault was in force at some moment between "
    "the call's start and the end of its own timeout on the broker that coordinated G when "
    "the fault began (the fault's start event ``coordinators``); and every such fault in "
    "force then recorded T's transaction coordinator (``txn_coordinators``), and no fault of "
    "any kind in force then targeted it: the call waited for the group's coordinator, not "
    "for the transaction's",
    "coordinator_fenced_in_call": "(a hung call) ``coordinator_down_in_call``, and that fault "
    "held the coordinator longer than ``broker.session.timeout.ms`` (run.json broker_config; "
    "Kafka's default 9 s): the controller fenced it and metadata stopped listing it",
    "kip848_consumer": "(a stuck consumer) each of its readers ran with "
    "group.protocol=consumer (KIP-848; run.json workload.consumers or consumer_config)",
    "poll_stalled_past_interval": "(a stuck consumer) a poll-stall fault on each of its "
    "readers kept that reader's loop from calling consume() for longer than the reader's "
    "max.poll.interval.ms: from its last consume() before the stall (the start event's "
    "``stalled_since_ns``) to the stall's end event, which is written before the loop is "
    "let go",
    "fatal_after_stall": "(a stuck consumer) each of its readers, after such a stall "
    "ended and by the end of the liveness window, recorded a fatal error caused by "
    "INVALID_REQUEST (a ``consumer-error`` event whose ``cause`` is INVALID_REQUEST: "
    "librdkafka's text \"Fatal error: Broker: Invalid request: ...\"; the librdkafka "
    "version the event names, where it names one, must be affected as the run's must), "
    "and read nothing "
    "after it",
    "unclean_election_after_stalled_txn": "(a stalled-lso write) the observer saw a replica "
    "outside the partition's last ISR become its leader (an unclean election) after the "
    "first attempt of the decided transaction whose record lies at the stalled last stable "
    "offset, and before the drain: the elected replica may hold that transaction's records "
    "without its marker",
    "unclean_election_in_txn": "(a torn transaction) the observer saw a replica outside the "
    "partition's last ISR become its leader (an unclean election) after the transaction's "
    "first attempt and before a read_committed reader read the record: the elected replica "
    "may hold the transaction's records without its marker, and a later marker of the same "
    "producer then closes them with its own outcome",
    "end_txn_held": "the record is a torn transaction's, and a hold fault held an EndTxn "
    "request of the record's producer (its transactional id, named in the hold's end event "
    "``held_end_txn``, contract/held_requests.py) on a connection opened before the hold, "
    "and the transaction's first attempt lies inside that hold: the stale EndTxn of the "
    "producer's previous transaction reached the coordinator once this one had begun",
    "epoch_rise_before_reread": "(a nonmonotonic-poll) the step back is within one session "
    "of its reader (it is not excused: it crossed no rebalance or restart of the reader and "
    "did not land on an offset a truncation reused), and the observer showed a new leader "
    "epoch of the step's partition (a new leader, or an epoch above the last it knew) while "
    "the reader's position was the offset r its re-read began at (the lowest offset of the "
    "poll that went back): the span between the sample that showed the rise and the sample "
    "before it (for an epoch: the last one carrying an epoch) meets the span from the "
    "reader's last read of r - 1 before that poll (its recorded assignment, if it read "
    "nothing of the partition before r) to its next read of r; no other poll of the reader "
    "went back in between. A poll that goes on with the re-read of the poll before it (it "
    "starts one past where that poll's re-fetch ended: its last offset read twice, or, when "
    "the re-fetch lay below the queued records, the offset before its gap) is named with "
    "it. What the bug leaves: the client validated the new epoch while the application's "
    "position was r, and fetched from there again behind the records it still held",
    "restart_past_truncation": "(a poll-skip) the reader ran in restart mode (alone in its "
    "group: it resumes at the offset it committed), its step crossed one of its recorded "
    "restarts (a ``restart`` rebalance between the two reads' polls), and it went from a "
    "record the log no longer holds at its offset (the drain read another one there: a "
    "truncation reused the offset after the reader read it) onto the record the log holds "
    "at a higher offset: its first position after the restart lay above the partition's "
    "truncation point, past the records written since at the reused offsets",
    "resumed_after_marker": "(a poll-skip) the reader ran in restart mode (alone in its "
    "group: it resumes at the offset it committed) in a run with transactional producers, "
    "the record is its first read of the partition after one of its recorded restarts, and "
    "the offset just below it holds no record (no reader, the drain included, read one "
    "there and no write was acknowledged there: a transaction marker): the close committed "
    "the marker's offset + 1, past the records before the marker it never returned",
    "offset_fetch_not_coordinator": "(a stuck consumer) every partition it is behind on "
    "was given to one of its readers by that reader's last rebalance event naming it (an "
    "``assigned`` event, by the window's end); after that assignment and by the window's "
    "end the reader logged librdkafka's \"Offset fetch error for 0 partition(s): Broker: "
    "Not coordinator\" (a ``client-log`` event; librdkafka writes it with ``debug=cgrp``): "
    "the OffsetFetch of the assignment's committed offsets was answered NOT_COORDINATOR as a "
    "whole; and the reader read nothing of the partition after that line",
}
