"""The nemesis: when faults start and stop. Random schedules from ``--faults`` and scripted
sequences for scenarios, both over one :class:`FaultContext`, both healing on every exit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from compose.admin import ClusterError
from compose.ssh import SSH_CONNECTION_FAILED, SshUnreachable
from compose.stop_signals import lost_stop, stop_request, stops_raised
from contract.events import FAULT_ERROR, INSTANT, NEMESIS_ERROR
from contract.faults import EXISTING_CLUSTER_FAULTS
from nemesis.faults.base import Fault, FaultContext, FaultError
from nemesis.faults.factory import draw_params, make_fault
from nemesis.net.netns import CommandFailed

log = logging.getLogger("kafka_chaos.nemesis")

def unreachable(e: BaseException) -> bool:
    """Whether ``e`` says a node could not be reached over SSH (not that a command failed)."""
    if isinstance(e, SshUnreachable):
        return True
    return isinstance(e, CommandFailed) and e.returncode == SSH_CONNECTION_FAILED


def random_fault(kind: str, target: str, ctx: FaultContext) -> Fault:
    """A fault of ``kind`` aimed at ``target``, its shape/parameters drawn from ctx.rng."""
    return make_fault(kind, target, draw_params(kind, ctx))


class Nemesis:
    """Runs faults against a cluster and guarantees they are healed.

    ``run_random`` alternates fault windows and fault-free gaps until ``stop`` is set;
    ``run_script`` runs a scenario's script. ``heal_all`` undoes whatever is active.
    """

    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx
        self.active: list[Fault] = []
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.deadline = float("inf")  # monotonic time the workload phase ends
        self._lock = threading.Lock()
        self._stops = stops_raised()  # a stop raised later must end the schedules
        # how long a heal that cannot reach a node over SSH is retried (0: not retried); past
        # it the node's dead-man switch undoes the fault (nemesis.dead_man)
        self.heal_retry_s = 0.0
        # monotonic time the workload began: a script's `at` steps count from it
        self.began = time.monotonic()

    # ------------------------------------------------------------------ primitives
    def start_fault(self, fault: Fault) -> Fault:
        """Starts ``fault``. A start that fails for any reason is a ``fault-error`` event
        (the checker counts them: a schedule none of whose faults took effect proves
        nothing) and raises :class:`FaultError` (or the ClusterError) for the schedule to
        go on; whatever the failed start did is undone."""
        if self.ctx.not_ours and fault.kind not in EXISTING_CLUSTER_FAULTS:
            # A script's kinds are checked before the run (Scenario.refusal); this holds
            # whatever a script does: nothing outside the list touches someone else's nodes.
            error = f"{fault.kind} needs a cluster kafka-chaos starts: not started on this one"
            self.errors.append(f"{fault.kind}: could not start: {error}")
            self.ctx.events.emit(FAULT_ERROR, INSTANT, [], {"fault": fault.kind, "error": error,
                                                             "fault_detail": fault.describe()})
            raise FaultError(error)
        with self._lock:
            self.active.append(fault)
        # when applying began: its start event, written once it took effect, says so (a
        # power loss's cut or a target's lookup can take seconds on a loaded host)
        fault.began_ns = time.time_ns()  # type: ignore[attr-defined]
        try:
            fault.start(self.ctx)
        except Exception as e:  # noqa: BLE001 - any failed start is recorded, never lost
            if (stop := stop_request(e)) is not None:
                # a stop signal, not a failed start: no fault-error; it stays active for
                # heal_all, as after a start the signal interrupts
                raise stop from None
            error = f"{type(e).__name__}: {e}"
            self.errors.append(f"{fault.kind}: could not start: {error}")
            self.ctx.events.emit(FAULT_ERROR, INSTANT, list(getattr(fault, "targets", [])),
                                 {"fault": fault.kind, "error": error,
                                  "fault_detail": fault.describe()})
            try:
                self.end_fault(fault)
            except Exception as undo:  # noqa: BLE001 - the start's error is the news
                self.note(f"undo of the failed {fault.kind} failed: {undo}")
                self._forget(fault)
            if isinstance(e, FaultError | ClusterError):
                raise
            raise FaultError(error) from e
        log.info("fault start %s", fault.describe())
        return fault

    def end_fault(self, fault: Fault) -> None:
        """Stops ``fault``. One whose stop raised (or was interrupted) stays active, so
        ``heal_all`` tries it again."""
        fault.stop(self.ctx)
        self._forget(fault)
        log.info("fault end %s", fault.describe())

    def heal_all(self, settle: bool = True) -> None:
        """Stops every active fault, newest first; errors are recorded, not raised.

        ``settle=False`` when the cluster is removed next: no waiting for restarted
        brokers to serve again."""
        self.ctx.settle = settle
        try:
            while self.active:
                fault = self.active[-1]
                try:
                    self._end_retrying(fault)
                except Exception as e:  # noqa: BLE001 - heal must go on with the others
                    self.note(f"heal of {fault.kind} failed: {e}")
                    self._forget(fault)  # reported; not retried for ever
        finally:
            self.ctx.settle = True

    def _end_retrying(self, fault: Fault) -> None:
        """``end_fault``, retried with backoff while a node cannot be reached over SSH, for
        up to ``heal_retry_s``."""
        for attempt in Retrying(stop=stop_after_delay(self.heal_retry_s),
                                wait=wait_exponential(multiplier=0.5, max=8),
                                retry=retry_if_exception(unreachable), reraise=True):
            with attempt:
                self.end_fault(fault)

    def _forget(self, fault: Fault) -> None:
        with self._lock:
            if fault in self.active:
                self.active.remove(fault)

    def note(self, msg: str) -> None:
        """Records a nemesis error, in the history when it can: with the disk full the
        event write fails too, and that must not end the heal of the other faults."""
        self.errors.append(msg)
        try:
            self.ctx.events.emit(NEMESIS_ERROR, INSTANT, [], {"message": msg})
        except OSError as e:
            self.errors.append(f"the history could not record it: {e}")
            log.error("nemesis error not recorded in the history (%s): %s", e, msg)

    def wait(self, seconds: float) -> bool:
        """Waits up to ``seconds``; True if the run was told to stop meanwhile. A stop
        signal whose exception some call swallowed is raised again here: the schedules
        wait between every two faults, so a run never goes on for its whole duration after
        a SIGTERM (compose.stop_signals.lost_stop)."""
        self._raise_lost_stop()
        stopped = self.stop.wait(max(0.0, seconds))
        self._raise_lost_stop()
        return stopped

    def _raise_lost_stop(self) -> None:
        if (stop := lost_stop(self._stops)) is not None:
            raise stop

    # ------------------------------------------------------------------ schedules
    def run_random(self, kinds: list[str], target_specs: list[str], interval_s: float,
                   deadline: float) -> None:
        """Every ~``interval_s``: a gap of about half of it, then one fault held for the
        other half. Jitter of ±25 % keeps faults from locking to the workload's rhythm."""
        rng = self.ctx.rng
        while not self.stop.is_set() and time.monotonic() < deadline:
            gap = interval_s * rng.uniform(0.375, 0.625)
            if self.wait(min(gap, deadline - time.monotonic())):
                break
            if time.monotonic() >= deadline:
                break
            kind = rng.choice(kinds)
            target = rng.choice(target_specs)
            try:
                fault = self.start_fault(random_fault(kind, target, self.ctx))
            except (FaultError, ClusterError):
                continue
            hold = interval_s * rng.uniform(0.375, 0.625)
            self.wait(min(hold, max(0.0, deadline - time.monotonic())))
            try:
                self.end_fault(fault)
            except Exception as e:  # noqa: BLE001 - keep the schedule going; heal retries
                if (stop := stop_request(e)) is not None:
                    raise stop from None  # the fault stays active: heal_all ends it
                self.note(f"end of {fault.kind} failed: {e}")

    def run_script(self, script: Callable[[Nemesis], Any]) -> None:
        """Runs a scenario's script; whatever it leaves active is healed by the caller.

        A fault the script could not start ends the script (it is already a
        ``fault-error`` event) but not the run: the workload, heal and drain go on, so the
        history stays checkable and the checker says what the run could not show."""
        try:
            script(self)
        except (FaultError, ClusterError) as e:
            self.note(f"scenario script stopped: {type(e).__name__}: {e}")
