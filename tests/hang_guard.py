"""A hang guard for the suite (a pytest plugin, loaded by the root conftest.py).

A test still running ``hang_limit_s`` (ini option, 900 s) after it began — setup, call and
teardown together — is hung, not slow: the slowest real-cluster test takes ~5 minutes on
a 2-core machine. Without a guard one hang (librdkafka#5456: ``send_offsets_to_transaction``
blocked in ``cnd_wait`` for good after a broker restart) runs CI into its 90-minute limit and
says nothing about where. With it:

1. the stacks of every thread are written to stderr (faulthandler; captured with the test's
   output, so they appear in its failure report), and the main thread is
   sent SIGALRM, whose handler raises :class:`HangLimit`: a test stuck in Python code (a
   polling loop) fails with that error, its fixtures tear down, and the session goes on;
2. a test still running ``hang_grace_s`` (60 s) later is stuck in C code that a signal cannot
   interrupt (a condition-variable wait): its stacks are written again, the session's
   containers, networks and volumes and this process's children are removed, and pytest
   exits at once with status 3 — a failed run that says where it hung, nothing left behind.

``pytest-timeout`` does either, never both, and its thread method exits without cleaning up.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from types import FrameType

import pytest

EXIT_HUNG = 3


class HangLimit(BaseException):
    """Raised in the main thread of a test past its limit (a BaseException: a test's own
    ``except Exception`` must not swallow it)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("hang_limit_s", "a test running longer than this (s) is hung", default="900")
    parser.addini("hang_grace_s", "after the limit, seconds before pytest itself exits",
                  default="60")


def _say(text: str) -> None:
    err = sys.__stderr__
    if err is not None:
        err.write(f"\n{'=' * 20} kafka-chaos hang guard: {text}\n")
        err.flush()
        faulthandler.dump_traceback(file=err, all_threads=True)


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc: no process library needed for this)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        todo += kids
    return found


def _abandon(config: pytest.Config, nodeid: str) -> None:
    """The last resort: remove what the session started, then exit the process."""
    # Output captured during the test would die with the process: give it back first.
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with contextlib.suppress(Exception):
            capman.suspend_global_capture(in_=False)
            out, err = capman.read_global_capture()
            sys.stdout.write(out)
            sys.stdout.flush()
            sys.stderr.write(err)
    _say(f"{nodeid} is stuck where a signal cannot reach it; removing the session's "
         f"resources and exiting with status {EXIT_HUNG}")
    from tests import hygiene

    with contextlib.suppress(Exception):
        state = config.stash[hygiene._STATE]
        client = hygiene._docker_or_none()
        if client is not None:
            hygiene.remove(client, {hygiene.LABEL_SESSION: state.session}, set())
    for child in _children(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    os._exit(EXIT_HUNG)


class _Guard:
    def __init__(self, config: pytest.Config, nodeid: str) -> None:
        self.config, self.nodeid = config, nodeid
        self.limit = float(config.getini("hang_limit_s"))
        self.grace = float(config.getini("hang_grace_s"))
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="kafka-chaos-hang-guard",
                                       daemon=True)

    def _watch(self) -> None:
        if self.done.wait(self.limit):
            return
        _say(f"{self.nodeid} still running after {self.limit:.0f} s; interrupting it")
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)
        if not self.done.wait(self.grace):
            _abandon(self.config, self.nodeid)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if not self.done.is_set():
            raise HangLimit(f"{self.nodeid} ran longer than hang_limit_s = {self.limit:.0f} s "
                            "(stacks of all threads on stderr)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    if threading.current_thread() is not threading.main_thread():
        return (yield)  # a session run inside a thread cannot take signals
    guard = _Guard(item.config, item.nodeid)
    before = signal.signal(signal.SIGALRM, guard._on_alarm)
    guard.thread.start()
    try:
        return (yield)
    finally:
        guard.done.set()
        signal.signal(signal.SIGALRM, before)
