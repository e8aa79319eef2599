"""Logging of the workload's child processes: one file each under ``<run_dir>/logs/``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path


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


def librdkafka_logger(conf: Mapping[str, object]) -> logging.Logger:
    """The logger a client's ``logger`` property gets. librdkafka hands its ``debug`` output
    to it at DEBUG level, below the children's INFO: a client configured with ``debug`` (a
    user chasing a client behaviour) gets those lines in its log instead of losing them."""
    lg = logging.getLogger("kafka_chaos.librdkafka")
    if conf.get("debug"):
        lg.setLevel(logging.DEBUG)
    return lg
