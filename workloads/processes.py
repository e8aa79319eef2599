"""Starting the workload's processes and stopping them: producers and consumers.

Each producer and each consumer is an OS process of its own (spawn context: no forked
librdkafka state, no GIL shared with the orchestrator). They stop when the shared stop event
is set; ``ProcessGroup.stop`` sets it, waits, and only then terminates (SIGTERM, which still
writes the history) and finally kills stragglers. They also stop when the process that
started them is gone (a SIGKILLed orchestrator), instead of running out their duration.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import multiprocessing.spawn as mp_spawn
import os
import queue
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from workloads.call_watch import new_slot
from workloads.config import ConsumerConfig, ConsumerSpec, ProducerConfig
from workloads.consumer import consumer_main
from workloads.producer import producer_main

log = logging.getLogger("kafka_chaos.workloads.processes")

_CTX = mp.get_context("spawn")
PARENT_CHECK_S = 0.5


def _watch_parent(parent: int, stop_event: Any) -> None:
    while not stop_event.is_set():
        if os.getppid() != parent:  # reparented: the orchestrator died without stopping us
            stop_event.set()
            return
        time.sleep(PARENT_CHECK_S)  # no handle on the parent's exit here: poll


def _orphan_safe(parent: int, target: Callable[..., Any], stop_event: Any,
                 *args: Any) -> None:
    """Runs ``target(*args)``; sets ``stop_event`` (a normal stop: the history is written)
    when the parent process ``parent`` is gone."""
    threading.Thread(target=_watch_parent, args=(parent, stop_event), daemon=True,
                     name="kc-parent-watch").start()
    target(*args)


class StopFlag:
    """A stop signal the workload's processes share, without a lock.

    multiprocessing.Event takes a lock shared by every process on each ``is_set()``; a
    process SIGKILLed while holding it (a chaos test, the OOM killer) left every other
    process, the orchestrator included, blocked forever on the next ``set()`` or
    ``is_set()``. One shared byte needs no lock: it goes from 0 to 1 once.
    """

    def __init__(self) -> None:
        self._flag = _CTX.RawValue("b", 0)

    def set(self) -> None:
        self._flag.value = 1

    def is_set(self) -> bool:
        return bool(self._flag.value)

    def __repr__(self) -> str:
        return f"StopFlag(set={self.is_set()})"


def new_stop_event() -> StopFlag:
    """A stop flag the workload's processes can share (create it before starting them)."""
    return StopFlag()


@dataclass(frozen=True)
class ChildInterpreter:
    """Another Python to run the workload processes with (runner/clients.py makes one per
    confluent-kafka release): its executable and its own ``sys.path`` (stdlib and
    site-packages; the project's packages are added at the end)."""

    python: Path
    sys_path: list[str]
    confluent_kafka: str  # what the venv imports (the children report it again)
    librdkafka: str
    venv: Path | None = None


_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)  # holds workloads/ and contract/


@contextmanager
def _spawning_with(interp: ChildInterpreter | None) -> Iterator[None]:
    """While processes start: spawn ``interp``'s executable, with its own ``sys.path``.

    A spawned child takes the parent's ``sys.path`` and re-imports the parent's ``__main__``
    (the preparation data is read in ``Process.start``). Both are swapped for the duration of
    the starts: the child's path is the venv's first (its confluent_kafka wins), then the
    project root (our workloads/contract); no ``__main__`` (the CLI's would import the
    orchestrator's dependencies, which the venv does not have). Starts run on one thread.
    """
    if interp is None:
        yield
        return
    saved_path, saved_main = list(sys.path), sys.modules["__main__"]
    saved_exe = mp_spawn.get_executable()
    mp_spawn.set_executable(str(interp.python))
    sys.path[:] = [*interp.sys_path, _PROJECT_ROOT]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved_main
        sys.path[:] = saved_path
        mp_spawn.set_executable(saved_exe)


@dataclass
class ProcessGroup:
    """Processes that share one stop event; ``stop`` returns their stats by name."""

    stop_event: Any
    procs: dict[str, BaseProcess] = field(default_factory=dict)
    stats_queue: Any = None
    #: name -> the process's call-watch slot (workloads.call_watch)
    slots: dict[str, Any] = field(default_factory=dict)
    _stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    _key: Callable[[dict[str, Any]], str] = lambda s: str(s.get("name"))

    def alive(self) -> bool:
        """True while any process of the group still runs."""
        return any(p.is_alive() for p in self.procs.values())

    def alive_names(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.is_alive()]

    def stop(self, timeout_s: float = 30.0) -> dict[str, dict[str, Any]]:
        """Sets the stop event, waits up to ``timeout_s`` for the processes, then terminates
        (SIGTERM: they still write their history) and kills what is left.

        Returns stats by process name (``p0`` → attempts/ok/fail/info/errors, ``c0`` →
        polls/records); a process that left no stats gets ``{"exitcode": ...}`` only.
        """
        self.stop_event.set()
        end = time.monotonic() + timeout_s
        while self.alive() and time.monotonic() < end:
            self._collect(0.1)
        for name, p in self.procs.items():
            if p.is_alive():
                log.warning("workload process %s did not stop in %.0fs: SIGTERM", name, timeout_s)
                p.terminate()
        end = time.monotonic() + 5.0
        while self.alive() and time.monotonic() < end:
            self._collect(0.1)
        for name, p in self.procs.items():
            if p.is_alive():
                log.warning("workload process %s ignored SIGTERM: SIGKILL", name)
                p.kill()
            p.join(5)
        self._collect(0)
        out: dict[str, dict[str, Any]] = {}
        for name, p in self.procs.items():
            st = dict(self._stats.get(name, {}))
            st["exitcode"] = p.exitcode
            out[name] = st
        return out

    def _collect(self, wait_s: float) -> None:
        # Read stats while children exit: a child blocked on a full pipe would never exit.
        deadline = time.monotonic() + wait_s
        while True:
            try:
                st = self.stats_queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return
            self._stats[self._key(st)] = st


def start_producers(run_dir: Path, bootstrap: str, topic: str, partitions: int,
                    cfg: ProducerConfig, count: int, stop_event: Any = None,
                    first_id: int = 0,
                    interpreter: ChildInterpreter | None = None) -> ProcessGroup:
    """Starts ``count`` producer processes (ids ``first_id``…), each writing its own part files
    of writes.parquet. ``stop_event`` should come from :func:`new_stop_event` (None: a new one).
    ``interpreter``: run them with that Python (another confluent-kafka); None: this one.
    """
    cfg.validate()
    group = new_group(lambda s: f"p{s['producer']}", stop_event)
    with _spawning_with(interpreter):
        for i in range(first_id, first_id + count):
            spawn(group, f"p{i}", f"kc-producer-{i}", producer_main, Path(run_dir), bootstrap,
                  topic, partitions, cfg, i)
    return group


def new_group(key: Callable[[dict[str, Any]], str], stop_event: Any = None) -> ProcessGroup:
    """An empty group whose processes' stats are named by ``key`` (None: a new stop flag)."""
    return ProcessGroup(stop_event if stop_event is not None else new_stop_event(),
                        stats_queue=_CTX.Queue(), _key=key)


def spawn(group: ProcessGroup, name: str, proc_name: str, target: Callable[..., Any],
          *args: Any) -> None:
    """Starts ``target(*args, stop_event, stats_queue, slot)`` as process ``name`` of
    ``group``, with a call-watch slot of its own; it stops when this process is gone."""
    slot = group.slots[name] = new_slot()
    p = _CTX.Process(target=_orphan_safe, name=proc_name, daemon=True,
                     args=(os.getpid(), target, group.stop_event, *args, group.stop_event,
                           group.stats_queue, slot))
    p.start()
    group.procs[name] = p


def start_consumers(run_dir: Path, bootstrap: str, topic: str, partitions: int,
                    cfg: ConsumerConfig, specs: list[ConsumerSpec],
                    stop_event: Any = None,
                    interpreter: ChildInterpreter | None = None) -> ProcessGroup:
    """Starts one consumer process per spec; each writes its own part files of reads.parquet.
    ``interpreter`` as for :func:`start_producers`.
    """
    if len({s.id for s in specs}) != len(specs):
        raise ValueError("consumer ids must be unique")
    group = new_group(lambda s: str(s["reader"]), stop_event)
    with _spawning_with(interpreter):
        for spec in specs:
            spawn(group, spec.id, f"kc-consumer-{spec.id}", consumer_main, Path(run_dir),
                  bootstrap, topic, partitions, cfg, spec)
    return group
