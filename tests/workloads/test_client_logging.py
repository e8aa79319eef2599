"""A client configured with librdkafka's ``debug`` gets its debug lines in the child's log
(workloads/child_logging.librdkafka_logger), although the children log at INFO."""

from __future__ import annotations

import logging

from confluent_kafka import Producer
from tenacity import Retrying, stop_after_delay, wait_fixed

from workloads.child_logging import librdkafka_logger


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_debug_lines_reach_the_log_at_info_level() -> None:
    root, before = logging.getLogger(), logging.getLogger().level
    keep = _Keep()
    conf = {"bootstrap.servers": "127.0.0.1:1", "debug": "generic"}
    lg = librdkafka_logger(conf)
    saved = lg.level
    lg.addHandler(keep)
    root.setLevel(logging.INFO)  # what configure_logging gives every child
    try:
        p = Producer({**conf, "logger": lg})
        # librdkafka hands its log lines over in poll(): poll, bounded, until the init line
        for attempt in Retrying(stop=stop_after_delay(10), wait=wait_fixed(0.1), reraise=True):
            with attempt:
                p.poll(0.1)
                debug = [r.getMessage() for r in keep.records if r.levelno == logging.DEBUG]
                assert any("INIT" in m for m in debug), [r.getMessage() for r in keep.records]
    finally:
        lg.removeHandler(keep)
        lg.setLevel(saved)
        root.setLevel(before)
