"""The signal guard around whatever starts clusters and must clean them up: the first
SIGINT, SIGTERM or SIGHUP raises, every later one is counted, so an impatient second Ctrl-C
cannot cut a cleanup short between two of its steps.

Standard library only: the pytest plugin installs it for a whole session without importing
Docker (``chaos.pytest_plugin``)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from types import FrameType

#: The signals a guard handles: Ctrl-C, a CI runner's cancel or ``docker stop``, a closed
#: terminal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: Guarded blocks (``signals_raise``) of this process a signal reached so far. The block's
#: owner may turn the signal into a result (a run returns as interrupted) rather than let
#: it propagate; whoever is further out (the pytest plugin's session) still learns that the
#: user asked to stop.
_STOPPED_BLOCKS = [0]


def stopped_blocks() -> int:
    """How many guarded blocks (``signals_raise``) of this process a signal reached."""
    return _STOPPED_BLOCKS[0]


#: Every exception a guard raised in this process, oldest first (see ``lost_stop``).
_RAISED: list[BaseException] = []


def stops_raised() -> int:
    """How many stop exceptions guards of this process raised so far."""
    return len(_RAISED)


def stop_request(exc: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or SystemExit behind ``exc``: itself, or one in its cause or
    context chain. A handler's exception raised while C code runs can come out of that call
    as a SystemError ("<class 'list'> returned a result with an exception set", seen in a
    suite: the run took it for a fault that failed to start and went on), with the signal's
    exception as its cause; an ``except Exception`` must not swallow it. (confluent-kafka's
    log callback calls Python's logging without checking for a pending error,
    confluent-kafka-python#1708: a signal while an admin client logs comes out so.)"""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt | SystemExit):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def lost_stop(since: int) -> BaseException | None:
    """A stop exception a guard raised after ``since`` (a ``stops_raised()`` value) that
    did not end the code still running: the newest, to raise again. C code may clear a
    handler's exception altogether; a loop that outlives the signal asks here."""
    return _RAISED[-1] if len(_RAISED) > since else None


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP while something must be cleaned up (``signals_raise``).

    Only the first signal raises (KeyboardInterrupt for SIGINT, SystemExit(128 + n) for the
    others, so ``finally`` blocks and context managers run; KeyboardInterrupt for every
    signal with ``interrupt=True``, as pytest needs to end a session); it disarms the guard
    as it raises. Once disarmed — by that first signal or by ``disarm()`` before the cleanup
    starts — a signal is only counted and acknowledged on stderr: an impatient second Ctrl-C
    must not cut the cleanup short at whatever line it lands on (seen in a suite: one raised
    from a log call between two teardown steps and the cluster was left behind). The cleanup
    is bounded by its own timeouts; SIGKILL stays for a user who cannot wait, and the next
    start sweeps what that leaves (``compose.cleanup.sweep_orphans``)."""

    def __init__(self, interrupt: bool = False, repeat: bool = False) -> None:
        self.armed = True
        self.interrupt = interrupt
        # repeat: every signal raises until disarm(), as Python's own SIGINT handler does
        # (a script's body may catch one KeyboardInterrupt and go on)
        self.repeat = repeat
        self.caught = 0  # signals that arrived while disarmed
        self.received = 0  # every signal that arrived
        self._deferring = 0  # depth of deferred() blocks
        self._pending: int | None = None  # the signal a deferred() block raises at its end
        self._step = ""  # what the outermost deferred() block waits for

    def disarm(self) -> None:
        """From now on signals are counted, not raised (call it before the cleanup)."""
        self.armed = False

    def rearm(self) -> None:
        """The next signal raises again (its raise was handled and the work goes on)."""
        self.armed = True

    @contextmanager
    def deferred(self, step: str) -> Iterator[None]:
        """A step that must not be cut while the guard is still armed (a cluster removed
        between two tests): the first signal inside it raises at its end instead, later
        ones are counted. ``step`` completes "stopping once …" on stderr. Nested blocks
        raise at the outermost one's end."""
        if not self._deferring:
            self._step = step
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if not self._deferring and self._pending is not None:
                signum, self._pending = self._pending, None
                self._raise(signum)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.armed and not self._deferring:
            self.armed = self.repeat
            self._raise(signum)
        name = signal.Signals(signum).name
        if self.armed and self._pending is None:
            self.armed = self.repeat
            self._pending = signum
            message = f"kafka-chaos: stopping ({name}) once {self._step}\n"
        else:
            self.caught += 1
            message = f"kafka-chaos: stopping already ({name}), cleaning up first\n"
        # os.write: print() here could re-enter a buffered write the main thread is in
        with suppress(OSError):
            os.write(2, message.encode())

    def _raise(self, signum: int) -> None:
        exc: BaseException
        if self.interrupt:
            exc = KeyboardInterrupt(f"signal {signal.Signals(signum).name}")
        elif signum == signal.SIGINT:
            exc = KeyboardInterrupt()
        else:
            exc = SystemExit(128 + signum)
        _RAISED.append(exc)
        raise exc


def install(stop: StopSignals,
            replaceable: Callable[[signal.Signals, object], bool]) -> Callable[[], None]:
    """``stop.handle`` for each of STOP_SIGNALS whose handler ``replaceable`` accepts (in the
    main thread only: Python delivers signals there); returns what puts the old ones back."""
    old: dict[signal.Signals, Callable | int | None] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            if replaceable(sig, signal.getsignal(sig)):
                old[sig] = signal.signal(sig, stop.handle)

    def restore() -> None:
        for sig, handler in old.items():
            signal.signal(sig, handler)

    return restore


@contextmanager
def deferred_signals(step: str) -> Iterator[None]:
    """``StopSignals.deferred`` for each of our guards whose handler is in place (whoever
    installed it: the pytest plugin, a run), so a step that must finish — removing a
    cluster — is not cut by a signal that would raise. Only in the main thread: there the
    handlers run; a step in another thread is not interrupted by them anyway."""
    with ExitStack() as stack:
        if threading.current_thread() is threading.main_thread():
            guards = {id(g): g for sig in STOP_SIGNALS
                      if isinstance(g := getattr(signal.getsignal(sig), "__self__", None),
                                    StopSignals)}
            for guard in guards.values():
                stack.enter_context(guard.deferred(step))
        yield


def unguarded_default(sig: signal.Signals, handler: object) -> bool:
    """Whether ``handler`` is the default for ``sig`` (``None``: none was set from Python):
    not ignored, not a program's own handler, not a guard already installed — what a
    library may replace unasked."""
    default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
    return handler in (default, None)


@contextmanager
def signals_raise() -> Iterator[StopSignals]:
    """Guards a block that starts things and the cleanup that must follow (``StopSignals``);
    the previous handlers come back at its end. A signal the process ignores (SIGINT in a
    background job, SIGHUP under nohup) stays ignored. Only in the main thread; elsewhere
    the guard does nothing (Python delivers signals to the main thread only)."""
    stop = StopSignals()
    restore = install(stop, lambda sig, handler: handler is not signal.SIG_IGN)
    try:
        yield stop
    finally:
        restore()
        if stop.received:
            _STOPPED_BLOCKS[0] += 1
