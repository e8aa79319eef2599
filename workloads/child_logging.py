"""Logging of the workload's child processes: one file each under ``<run_dir>/logs/``."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path

from contract.events import CLIENT_LOG, INSTANT, EventLog
from contract.known_bugs import LOG_SIGNATURES


def configure_logging(run_dir: Path | None, name: str) -> None:
    """A child process logs into ``<run_dir>/logs/workload-<name>.log`` (librdkafka too,
    through the client's ``logger`` property), so a chaos run does not flood the console."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    if run_dir is None:
        return
    logs = Path(run_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    h = logging.FileHandler(logs / f"workload-{name}.log")
    h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(h)


class SignatureWatch(logging.Handler):
    """Writes a ``client-log`` event when the client logs a known bug's signature
    (contract.known_bugs.LOG_SIGNATURES), at most one a second per bug: the checker's
    evidence that this client went through the bug's first step. Debug lines count too
    (they reach it only from a client configured with ``debug``): some signatures are
    librdkafka debug output."""

    def __init__(self, events: EventLog, client: str) -> None:
        super().__init__(logging.DEBUG)
        self.events = events
        self.client = client
        self._last: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is not evidence
            return
        for bug, text in LOG_SIGNATURES.items():
            if text not in line:
                continue
            now = time.monotonic()
            if now - self._last.get(bug, -2.0) >= 1.0:
                self._last[bug] = now
                self.events.emit(CLIENT_LOG, INSTANT, [], {
                    "client": self.client, "bug": bug, "line": line[:300]})


def librdkafka_logger(conf: Mapping[str, object],
                      watch: SignatureWatch | None = None) -> logging.Logger:
    """The logger a client's ``logger`` property gets. librdkafka hands its ``debug`` output
    to it at DEBUG level, below the children's INFO: a client configured with ``debug`` (a
    user chasing a client behaviour) gets those lines in its log instead of losing them.
    ``watch`` (once per process) turns known bugs' signatures into events."""
    lg = logging.getLogger("kafka_chaos.librdkafka")
    if conf.get("debug"):
        lg.setLevel(logging.DEBUG)
    if watch is not None and not any(isinstance(h, SignatureWatch) for h in lg.handlers):
        lg.addHandler(watch)
    return lg
