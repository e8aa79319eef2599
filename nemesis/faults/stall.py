"""The poll-stall fault: the run's group consumers stop calling consume() for a while; and
the consumer-down fault: they close and a new consumer joins only when it ends.

Not a SIGSTOP: a stopped process stops librdkafka's threads too, so its heartbeats stop and
the *session* times out. Here only the application's loop stops, as when it spends too long
on a batch; librdkafka goes on heartbeating and its ``max.poll.interval.ms`` timer expires
(KIP-62; a KIP-848 member then leaves the group and must rejoin on its next poll).

The request goes through each consumer's shared slot (contract.liveness ``stall``), which
the consumer's loop reads between two consume() calls; the consumer answers with the time
its last consume() returned (``stalled_ns``), and the start event records it. The end event
is written before the loops are let go, so the window it closes is a lower bound of the time
each loop did not poll. Targets: ``all`` (every group consumer), ``random`` (one), or
reader ids ``c0,c1``. A consumer-down asks the same slot for a close instead
(contract.liveness ``DOWN``); the consumer answers once its close (the commit of its
offsets) returned, and joins again as a new consumer when the request ends.
"""

from __future__ import annotations

from typing import Any

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from contract.faults import CONSUMER_DOWN, POLL_STALL
from contract.liveness import DOWN, STALLED, request_stall, stalled_since
from nemesis.faults.base import BaseFault, FaultContext, FaultError

#: How long a consumer may take to stop: its consume() in progress returns first (the
#: workload's poll timeout is 0.2 s; a busy host's scheduling adds to it).
STOP_WITHIN_S = 10.0


def validate(spec: str) -> None:
    """Raises ValueError for a target that names no consumer (checked before a run)."""
    if spec in ("all", "random"):
        return
    names = [x.strip() for x in spec.split(",")]
    if not names or not all(n[:1] == "c" and n[1:].isdigit() for n in names):
        raise ValueError(f"a poll-stall target is all, random or reader ids such as c0,c1; "
                         f"got {spec!r}")


def resolve(spec: str, ctx: FaultContext) -> tuple[list[str], dict[str, Any]]:
    """The readers ``spec`` names among the run's group consumers, and their slots."""
    slots = ctx.consumers()
    if not slots:
        raise FaultError("poll-stall: the run has no group consumer (subscribe or restart "
                         "mode) to stall")
    if spec == "all":
        names = sorted(slots)
    elif spec == "random":
        names = [ctx.rng.choice(sorted(slots))]
    else:
        names = [x.strip() for x in spec.split(",") if x.strip()]
        unknown = [n for n in names if n not in slots]
        if unknown:
            raise FaultError(f"poll-stall: {', '.join(unknown)} is not a group consumer of "
                             f"the run ({', '.join(sorted(slots))})")
    return names, {n: slots[n] for n in names}


class PollStall(BaseFault):
    """Stops the poll loops of the target consumers; ``stop`` lets them poll again."""

    kind = POLL_STALL
    #: what the slot is asked for (contract.liveness)
    request = STALLED
    #: how long the consumers may take to answer (None: STOP_WITHIN_S)
    answer_within_s: float | None = None

    def __init__(self, target: str = "all") -> None:
        super().__init__()
        self.target = target
        self._slots: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "target": self.target}

    def start(self, ctx: FaultContext) -> None:
        names, slots = resolve(self.target, ctx)
        self._slots = slots
        for arr in slots.values():
            request_stall(arr, True, self.request)
        try:
            since = self._wait_stopped(slots, self.answer_within_s or STOP_WITHIN_S)
        except RetryError:
            late = sorted(n for n, arr in slots.items() if not stalled_since(arr))
            self._release()
            within = self.answer_within_s or STOP_WITHIN_S
            raise FaultError(f"{self.kind}: {', '.join(late)} did not stop polling within "
                             f"{within:g} s (a client that cannot stall, or a consume() that "
                             f"does not return)") from None
        self.targets = names  # type: ignore[assignment]  # reader ids, not node ids
        self._started(ctx, target=self.target, consumers=names, stalled_since_ns=since)

    @staticmethod
    def _wait_stopped(slots: dict[str, Any], within_s: float) -> dict[str, int]:
        """Each consumer's answer (when its last consume() returned), once all answered;
        RetryError when one has not within ``within_s``."""
        retrying = Retrying(stop=stop_after_delay(within_s), wait=wait_fixed(0.05),
                            retry=retry_if_result(lambda got: not all(got.values())))
        answers: dict[str, int] = retrying(
            lambda: {n: stalled_since(arr) for n, arr in slots.items()})
        return answers

    def stop(self, ctx: FaultContext) -> None:
        if not self._active:
            return
        # the end event first: no consumer polls before it is written (the window is then
        # a lower bound of each stall)
        self._ended(ctx, target=self.target, consumers=list(self.targets))
        self._release()

    def _release(self) -> None:
        for arr in self._slots.values():
            request_stall(arr, False)


class ConsumerDown(PollStall):
    """Closes the target consumers (each commits its offsets); ``stop`` lets each start a
    new consumer in its group, which resumes at the committed offsets. The start event's
    ``stalled_since_ns`` is when each close returned."""

    kind = CONSUMER_DOWN
    request = DOWN
    #: a close commits and leaves the group: the Java client's takes up to its 30 s default
    #: close timeout (over 10 s on a loaded host)
    answer_within_s = 45.0
