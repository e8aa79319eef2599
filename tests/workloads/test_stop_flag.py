"""The workload's shared stop signal survives a process SIGKILLed while it looks at it, and
is set when the process that started the workload dies without setting it."""

from __future__ import annotations

import os
import signal
import threading
import time
from multiprocessing.process import BaseProcess
from pathlib import Path

from tenacity import Retrying, stop_after_delay, wait_fixed

from workloads.processes import _CTX, StopFlag, _orphan_safe, new_stop_event


def _spin(flag: object, started: object) -> None:
    started.set()  # type: ignore[attr-defined]
    while not flag.is_set():  # type: ignore[attr-defined]
        pass


def _spinning_child() -> tuple[StopFlag, BaseProcess]:
    """A new flag and a child process that reads it in a tight loop until it is set."""
    flag = new_stop_event()
    started = _CTX.Event()
    child = _CTX.Process(target=_spin, args=(flag, started), daemon=True)
    child.start()
    assert started.wait(60)
    return flag, child


def test_a_killed_reader_does_not_block_the_others() -> None:
    # With a lock-based event (the old multiprocessing.Event) a SIGKILL while the child was
    # inside is_set() left the lock held, and the set() and repr() below blocked forever.
    flag, child = _spinning_child()
    os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    done = threading.Event()

    def use() -> None:
        repr(flag)
        flag.set()
        assert flag.is_set()
        done.set()

    threading.Thread(target=use, daemon=True).start()
    for attempt in Retrying(stop=stop_after_delay(10), wait=wait_fixed(0.05), reraise=True):
        with attempt:
            assert done.is_set(), "the stop flag blocked after a reader was killed"


def test_children_see_the_flag_set() -> None:
    flag, child = _spinning_child()
    assert child.is_alive() and not flag.is_set()
    flag.set()
    child.join(30)
    assert child.exitcode == 0


def _wait_for_stop(flag: StopFlag, mark: str) -> None:
    deadline = time.monotonic() + 60
    while not flag.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    Path(mark).write_text("stopped" if flag.is_set() else "ran out its time")


def _start_and_die(mark: str) -> None:
    """Starts a workload-like process the way ProcessGroup does, then dies at once without
    stopping it (os._exit: like SIGKILL, no cleanup runs)."""
    flag = new_stop_event()
    _CTX.Process(target=_orphan_safe, args=(os.getpid(), _wait_for_stop, flag, flag, mark)
                 ).start()
    os._exit(0)


def test_workload_processes_stop_when_their_parent_dies(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    parent = _CTX.Process(target=_start_and_die, args=(str(mark),))
    parent.start()
    parent.join(60)
    for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.1), reraise=True):
        with attempt:
            assert mark.exists(), "the orphaned process did not stop"
    assert mark.read_text() == "stopped"
