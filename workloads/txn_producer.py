"""The transactional produce loop: N records per transaction, a share of them aborted.

librdkafka's rules (KAFKA-FACTS §4.3) decide what happens on errors:

- an error that says ``txn_requires_abort()`` → abort the transaction; its rows are
  ``aborted`` when the abort succeeds;
- ``retriable()`` on commit (a commit timeout) → call commit again; **never abort after a
  commit timed out** (KAFKA-17754): if retrying does not settle it, the outcome is ``unknown``
  and the client is recreated (init_transactions fences the old epoch);
- ``fatal()`` → the outcome is ``unknown`` and the client is recreated.

Rows are written only once the transaction's outcome is known (WriteRecorder buffers them).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException

from workloads.producer import client_error
from workloads.txn_offsets import send_offsets

if TYPE_CHECKING:
    from workloads.producer import ProducerProcess

log = logging.getLogger("kafka_chaos.workloads.txn")

COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"
_CALL_TIMEOUT_S = 10.0


def init_client(proc: ProducerProcess) -> bool:
    """init_transactions, retried until it works or the producer should stop (False)."""
    while True:
        try:
            with proc.calls.call("init_transactions", _CALL_TIMEOUT_S):
                proc.client.init_transactions(_CALL_TIMEOUT_S)
            return True
        except KafkaException as e:
            err = client_error(e)
            log.warning("producer %d: init_transactions: %s", proc.id, err)
            if proc.should_stop():
                return False
            if err is not None and err.fatal():
                proc.client = proc.new_client()
            proc.poll(0.5)


def commit(proc: ProducerProcess) -> tuple[str, bool]:
    """Commits the open transaction. Returns (txn outcome, whether to recreate the client)."""
    bound = time.monotonic() + proc.cfg.transaction_timeout_ms / 1000.0
    timed_out = False
    while True:
        try:
            with proc.calls.call("commit_transaction", _CALL_TIMEOUT_S):
                proc.client.commit_transaction(_CALL_TIMEOUT_S)
            return COMMITTED, False
        except KafkaException as e:
            err = client_error(e)
            log.warning("producer %d: commit: %s", proc.id, err)
            if err is None or err.fatal():
                return UNKNOWN, True
            if err.retriable() and time.monotonic() < bound and not proc.terminating:
                timed_out = True
                continue
            if err.txn_requires_abort() and not timed_out:
                return abort(proc)
            return UNKNOWN, True


def abort(proc: ProducerProcess) -> tuple[str, bool]:
    """Aborts the open transaction. Returns (txn outcome, whether to recreate the client)."""
    bound = time.monotonic() + proc.cfg.transaction_timeout_ms / 1000.0
    while True:
        try:
            with proc.calls.call("abort_transaction", _CALL_TIMEOUT_S):
                proc.client.abort_transaction(_CALL_TIMEOUT_S)
            return ABORTED, False
        except KafkaException as e:
            err = client_error(e)
            log.warning("producer %d: abort: %s", proc.id, err)
            if err is not None and err.retriable() and not err.fatal() \
                    and time.monotonic() < bound and not proc.terminating:
                continue
            return UNKNOWN, True


def run_one_txn(proc: ProducerProcess, txn_no: int) -> bool:
    """One transaction from begin to outcome. False when the client must be recreated."""
    rec = proc.recorder
    txn = f"{proc.cfg.transactional_id(proc.id)}:{txn_no}"
    try:
        with proc.calls.call("begin_transaction", None):
            proc.client.begin_transaction()
    except KafkaException as e:
        log.warning("producer %d: begin_transaction: %s", proc.id, client_error(e))
        return False
    rec.begin_txn(txn)
    want_abort = proc.rng.random() < proc.cfg.abort_share
    interval = 1.0 / proc.cfg.rate if proc.cfg.rate > 0 else 0.0
    for _ in range(proc.cfg.records_per_txn):
        if proc.should_stop() or proc.fatal is not None:
            break
        t0 = time.monotonic()
        try:
            proc.send_one()
        except KafkaException as e:
            # The transaction is in an error state (abortable or fatal): finish it now.
            log.warning("producer %d: produce in %s refused: %s", proc.id, txn, client_error(e))
            break
        proc.poll(0)
        proc.housekeeping()
        if interval:
            wait = interval - (time.monotonic() - t0)
            if wait > 0:
                proc.poll(wait)
    if proc.offsets is not None and proc.fatal is None and not proc.terminating \
            and not want_abort:
        # a consume-transform-produce application's offsets (workloads/txn_offsets.py)
        send_offsets(proc, proc.offsets)
    if proc.fatal is not None:
        outcome, recreate = UNKNOWN, True
    elif proc.terminating:
        # SIGTERM: no time to settle it; the coordinator will abort it on timeout or fencing.
        outcome, recreate = UNKNOWN, False
    elif want_abort:
        # Deliver first: aborting records still queued (their partitions not yet added to the
        # transaction) makes the broker answer EndTxn with a fatal INVALID_TXN_STATE
        # (confluentinc/librdkafka#4849). Delivered, the aborted records are in the log too,
        # which is what a read_committed reader must then not see.
        _flush(proc)
        outcome, recreate = abort(proc)
    else:
        # A broken transaction is committed anyway: commit then says txn_requires_abort and
        # the abort follows the documented path.
        outcome, recreate = commit(proc)
    proc.poll(0)
    rec.end_txn(outcome)
    return not recreate


def _flush(proc: ProducerProcess) -> None:
    proc.deliver(_CALL_TIMEOUT_S)
    if proc.fatal is not None:
        log.warning("producer %d: delivering before abort: %s", proc.id, proc.fatal)


def run_transactional(proc: ProducerProcess) -> None:
    """Transactions until the producer should stop."""
    txn_no = 0
    if not init_client(proc):
        return
    while not proc.should_stop():
        ok = run_one_txn(proc, txn_no)
        txn_no += 1
        if not ok and not proc.terminating:
            log.warning("producer %d: recreating the transactional client", proc.id)
            proc.abandon_client()
            proc.client = proc.new_client()
            if not init_client(proc):
                return
