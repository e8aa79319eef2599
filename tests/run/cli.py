"""Start ``kafka-chaos`` as a subprocess that Ctrl-C (SIGINT) really interrupts.

A background job of a non-interactive shell (``make test &``) starts with SIGINT ignored,
and Python keeps an ignored SIGINT ignored; the child would never see a Ctrl-C. The wrapper
restores Python's handler before running the CLI in the same process (so the pid is the
run's ``owner-pid``), and the child gets a process group of its own (a signal meant for the
test session does not reach it, and the test can stop the whole group).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

CLI = [sys.executable, "-m", "chaos"]
_WRAPPER = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "sys.argv[0] = 'kafka-chaos'; runpy.run_module('chaos', run_name='__main__')")


def start(args: list[str], **popen: Any) -> subprocess.Popen[str]:
    """``kafka-chaos ARGS`` with SIGINT raising KeyboardInterrupt, in its own process group."""
    return subprocess.Popen([sys.executable, "-c", _WRAPPER, *args], text=True,
                            process_group=0, **popen)
