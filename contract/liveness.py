"""Liveness after the final heal (DESIGN.md §3, §4): the phase, the hung-call event, the
client calls that are watched and the shared slot a client process reports them through.

After the nemesis is done the run heals every fault and opens the ``liveness`` phase: the
producers go on writing and the consumers go on reading, and every one of them must make
progress (an acknowledgement, a record read) within the bound. Separately, every watched
client call that stays blocked past its own timeout plus :data:`SLACK_S` (a call without a
timeout of its own: past the bound) is a ``hung-call`` event, written by the run while the
call still blocks, so a hung call is recorded even when the client never returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The run phase (``kind: "phase"``, ``detail.name``) between the final heal and the end of
#: the workload: ``detail = {"bound_s", "slack_s"}`` at its start; at its end
#: ``detail.progressed = {client: first progress ts_ns after the start, or null}``.
LIVENESS_PHASE = "liveness"

#: A watched client call blocked past its timeout plus the slack. ``targets = []``;
#: ``detail = {"client", "call", "timeout_s", "since_ns"}`` at ``start`` (written when the
#: run sees it, while the call still blocks); at ``end`` the same plus ``blocked_s`` and
#: ``returned`` (false: the run stopped the client while the call still blocked).
HUNG_CALL = "hung-call"

#: Default bound (seconds) within which every client must make progress after the heal.
DEFAULT_BOUND_S = 30.0
#: How far past its own timeout a call may block before it counts as hung, and how recent
#: an acknowledgement may be for a consumer not to be expected to have read it yet.
SLACK_S = 5.0

#: The client calls that are watched, by code (the slot holds the code). Each wraps one
#: confluent-kafka call; ``purge`` and ``close`` have no timeout of their own.
WATCHED_CALLS: tuple[str, ...] = (
    "poll", "flush", "purge", "init_transactions", "begin_transaction",
    "send_offsets_to_transaction", "commit_transaction", "abort_transaction", "consume",
    "commit", "close",
)
CALL_CODES: dict[str, int] = {name: i + 1 for i, name in enumerate(WATCHED_CALLS)}

#: The slot's fields, one signed 64-bit integer each (a shared array per client process).
#: ``gen`` is odd while a call is in progress (written last when a call starts, first
#: when it ends), so a reader that sees the same odd ``gen`` before and after reading the
#: call fields saw one call; ``progress_ns`` is the wall-clock time of the client's latest
#: progress (an acknowledgement, a record read), 0 before any. ``stall`` is the run's
#: request that a consumer's poll loop stop (1) or go on (0) (a ``poll-stall`` fault,
#: contract.faults); ``stalled_ns`` is the consumer's answer: when its last consume()
#: returned before it stopped, 0 while it polls. ``stall`` :data:`DOWN` asks a consumer to
#: close instead (committing its offsets) and stay closed until the request ends (a
#: ``consumer-down`` fault); ``stalled_ns`` is then when its close returned. Shared memory
#: rather than a signal: a signal that reached a process before it set its handler would
#: end it. ``rows_written`` (1) says the producer had written every row it could before the
#: call began: only its open transaction's attempts were left unwritten (run option
#: ``send_offsets``; checkers/proof.py judges a process killed in such a call).
SLOT_FIELDS: tuple[str, ...] = ("gen", "call", "start_ns", "timeout_ms", "progress_ns",
                                "stall", "stalled_ns", "rows_written")
(GEN, CALL, START_NS, TIMEOUT_MS, PROGRESS_NS, STALL, STALLED_NS,
 ROWS_WRITTEN) = range(len(SLOT_FIELDS))
#: The values of ``stall``: poll on, stop polling (poll-stall), closed (consumer-down).
POLLING, STALLED, DOWN = 0, 1, 2


@dataclass(frozen=True)
class CallInProgress:
    """A call a slot shows in progress: which, since when, and its own timeout (None:
    it has none)."""

    gen: int
    call: str
    start_ns: int
    timeout_s: float | None
    rows_written: bool = False

    def limit_s(self, bound_s: float) -> float:
        """How long it may block before it is hung: its timeout plus the slack, or the
        bound for a call without a timeout."""
        return bound_s if self.timeout_s is None else self.timeout_s + SLACK_S


def read_slot(arr: Any) -> tuple[CallInProgress | None, int]:
    """The call in progress (None: none, or a call that started or ended while reading)
    and the latest progress time of a slot array written by :class:`workloads.call_watch`."""
    gen = int(arr[GEN])
    progress = int(arr[PROGRESS_NS])
    if gen % 2 == 0:
        return None, progress
    code, start, timeout_ms = int(arr[CALL]), int(arr[START_NS]), int(arr[TIMEOUT_MS])
    written = int(arr[ROWS_WRITTEN]) == 1
    if int(arr[GEN]) != gen or not 1 <= code <= len(WATCHED_CALLS):
        return None, progress
    return (CallInProgress(gen, WATCHED_CALLS[code - 1], start,
                           None if timeout_ms < 0 else timeout_ms / 1000, written), progress)


def request_stall(arr: Any, on: bool, what: int = STALLED) -> None:
    """The run asks the slot's consumer to stop polling (``on``; ``what`` DOWN: to close
    and stay closed) or to go on."""
    arr[STALL] = what if on else POLLING


def stalled_since(arr: Any) -> int:
    """When the slot's consumer stopped polling for a stall (its last consume() returned);
    0 while it polls."""
    return int(arr[STALLED_NS])
