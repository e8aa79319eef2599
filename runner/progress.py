"""Progress display for the CLI and the orchestrator.

``run()`` takes a ``progress`` callable that receives one line per step. :class:`Progress` is
such a callable, and it also has the optional hooks the orchestrator looks for:

- ``phase(name, total_s=None)`` — a long piece of work begins (cluster start, which builds the
  image on first use; the workload, whose length is known; the drain; the check). The previous
  phase ends, and its elapsed time is shown.
- ``close()`` — the run is over; the last phase ends.

On a terminal, the current phase is a live line redrawn in place (a spinner, the elapsed time
and, when the length is known, a bar), with colours. Anywhere else (CI logs, files, pipes) it
prints plain lines only, without escape codes: a line per step, a line when a phase starts and
ends and, for a phase of known length, one line per quarter done — so CI logs stay short.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

_SPIN = "|/-\\"
_GREEN, _CYAN, _DIM, _RESET = "\033[32m", "\033[36m", "\033[2m", "\033[0m"


def colours_enabled(stream: TextIO) -> bool:
    """Colours only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def bar(done: float, total: float, width: int = 24) -> str:
    """``[#########...............]`` for done/total (clamped to 0..1)."""
    frac = 0.0 if total <= 0 else max(0.0, min(1.0, done / total))
    full = int(round(frac * width))
    return "[" + "#" * full + "." * (width - full) + "]"


def fmt_s(seconds: float) -> str:
    """12.3s, or 1m05s from a minute on."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


class Progress:
    """A ``progress`` callable for :func:`runner.orchestrator.run` with phases and a bar."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None,
                 tick_s: float = 0.25) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.live = colours_enabled(self.stream) if live is None else live
        self.tick_s = tick_s
        self._lock = threading.Lock()
        self._phase: str | None = None
        self._total: float | None = None
        self._started = 0.0
        self._quarters = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._drawn = False
        self.timings: dict[str, float] = {}  # phase -> seconds, for summaries and tests

    # ------------------------------------------------------------------ the callable
    def __call__(self, msg: str) -> None:
        with self._lock:
            self._clear()
            self._write(msg + "\n")
            self._draw()

    # ------------------------------------------------------------------ hooks
    def phase(self, name: str, total_s: float | None = None) -> None:
        """Ends the current phase (if any) and starts ``name``."""
        with self._lock:
            self._end_phase()
            self._phase, self._total = name, total_s
            self._started = time.monotonic()
            self._quarters = 0
            if not self.live:
                length = f" ({fmt_s(total_s)})" if total_s else ""
                self._write(f"== {name}{length}\n")
            self._draw()
        # The ticker redraws the live line, or prints the quarter lines of plain output.
        if self._ticker is None:
            self._stop.clear()
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def close(self) -> None:
        """Ends the last phase and stops redrawing."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
            self._ticker = None
        with self._lock:
            self._end_phase()
            self._phase = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # closed pipe or stream: progress is never fatal
            pass

    def _end_phase(self) -> None:
        if self._phase is None:
            return
        took = time.monotonic() - self._started
        self.timings[self._phase] = took
        self._clear()
        if self.live:
            self._write(f"{_GREEN}✓{_RESET} {self._phase} {_DIM}{fmt_s(took)}{_RESET}\n")
        else:
            self._write(f"== {self._phase} done in {fmt_s(took)}\n")
        self._phase = None

    def _line(self) -> str:
        elapsed = time.monotonic() - self._started
        spin = _SPIN[int(elapsed / max(self.tick_s, 0.05)) % len(_SPIN)]
        text = f"{_CYAN}{spin}{_RESET} {self._phase} {fmt_s(elapsed)}"
        if self._total:
            text += f" {bar(elapsed, self._total)} {min(elapsed, self._total):.0f}/" \
                    f"{self._total:.0f}s"
        return text

    def _draw(self) -> None:
        if self._phase is None:
            return
        if self.live:
            self._write("\r\033[K" + self._line())
            self._drawn = True
        elif self._total:
            # Plain output: a line per quarter of a phase whose length is known.
            elapsed = time.monotonic() - self._started
            quarter = min(4, int(4 * elapsed / self._total))
            if 0 < quarter < 4 and quarter > self._quarters:
                self._quarters = quarter
                self._write(f"   {self._phase} {quarter * 25}% "
                            f"({elapsed:.0f}/{self._total:.0f}s)\n")

    def _clear(self) -> None:
        if self.live and self._drawn:
            self._write("\r\033[K")
            self._drawn = False

    def _tick(self) -> None:
        while not self._stop.wait(self.tick_s):
            with self._lock:
                self._draw()

