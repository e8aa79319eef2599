"""A workload process ends with the process that started it.

If the orchestrator is SIGKILLed (a crash, the OOM killer, a chaos test), its spawned
producers and consumers would otherwise run on against a cluster that the next start sweeps
away. Linux delivers SIGTERM to them when their parent dies (PR_SET_PDEATHSIG); their
SIGTERM handlers stop the loop and still write the history.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def exit_with_parent() -> None:
    """Ask the kernel for SIGTERM when the parent dies (Linux only; elsewhere a no-op).

    Call it after the SIGTERM handler is installed. A parent that died before the call
    (the child was re-parented) gets the SIGTERM sent at once."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except OSError:
        return
    if parent == 1 or os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
