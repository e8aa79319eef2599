"""checkers/together.py: independent calls run at once; results in order; an error is raised
only after every call has ended."""

from __future__ import annotations

import threading

import pytest

from checkers.together import together


def test_calls_run_at_once_and_results_keep_their_order():
    # Both calls must be inside wait() together: run one after the other, the barrier breaks.
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
