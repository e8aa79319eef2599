"""checkers/together.py: independent calls run at once; results in order; an error is raised
only after every call has ended."""

from __future__ import annotations

import threading
import time

import pytest

from checkers.together import together


def test_calls_run_at_once_and_results_keep_their_order():
    # Both calls must be running at once: run one after the other, the barrier breaks.
    barrier = threading.Barrier(2, timeout=10)

    def meet(value: str) -> str:
        barrier.wait()
        return value

    assert together(lambda: meet("a"), lambda: meet("b")) == ["a", "b"]


def test_the_first_error_comes_after_every_call_ended():
    ended = threading.Event()
    started = threading.Barrier(2, timeout=10)

    def fail() -> None:
        started.wait()
        raise ValueError("first")

    def slow() -> str:
        started.wait()
        ended.wait(0.5)  # still running when the other call has failed
        ended.set()
        return "done"

    with pytest.raises(ValueError, match="first"):
        together(fail, slow)
    assert ended.is_set()


def test_one_call_runs_in_the_callers_thread():
    assert together(threading.current_thread) == [threading.current_thread()]


class _Interrupted(Exception):
    pass


def test_an_interrupt_while_waiting_returns_at_once_and_leaves_daemon_threads():
    # What Ctrl-C (or the CLI's SIGTERM handler) does to the waiting thread: an exception
    # raised by a signal handler. The calls are still blocked, so together must not wait.
    import signal

    release = threading.Event()
    seen: list[bool] = []
    lock = threading.Lock()

    def blocked() -> None:
        with lock:
            seen.append(threading.current_thread().daemon)
            if len(seen) == 2:  # both calls run: interrupt the waiting main thread now
                signal.setitimer(signal.ITIMER_REAL, 0.05)
        release.wait(30)

    def interrupt(_sig: int, _frame: object) -> None:
        raise _Interrupted

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        began = time.monotonic()
        with pytest.raises(_Interrupted):
            together(blocked, blocked)
        # returned while both calls were still blocked (they wait up to 30 s)
        assert time.monotonic() - began < 15 and not release.is_set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        release.set()
    assert seen == [True, True]
