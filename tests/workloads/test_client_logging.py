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


def test_a_known_bugs_line_becomes_one_client_log_event_a_second(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """librdkafka#5430's line, as librdkafka logs it for each partition: one event (the
    checker's evidence), the repeats within a second dropped, other lines ignored."""
    import json

    from contract.events import CLIENT_LOG, EventLog
    from workloads.child_logging import SignatureWatch

    events = EventLog(tmp_path / "events.jsonl")
    lg = logging.getLogger("kc-test-signatures")
    lg.propagate = False
    lg.addHandler(SignatureWatch(events, "p0"))
    for p in (0, 2, 1):
        lg.warning("METADATAUPDATE [kc-producer-0#producer-1] [thrd:main]: Partition "
                   "chaos(MEim6AywRbqgGn1Yfwyejg)[%d]: new leader-1 not found in cache", p)
    lg.warning("GETPID [kc-producer-0#producer-1]: Failed to acquire idempotence PID")
    events.close()
    got = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["detail"]["client"], e["detail"]["bug"]) for e in got] == [
        (CLIENT_LOG, "p0", "librdkafka#5430")]
    assert "chaos(MEim6AywRbqgGn1Yfwyejg)[0]" in got[0]["detail"]["line"]


def test_a_debug_signature_becomes_an_event(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """librdkafka#5301's line is metadata debug output (DEBUG here): it is evidence too."""
    import json

    from contract.events import CLIENT_LOG, EventLog
    from workloads.child_logging import SignatureWatch

    events = EventLog(tmp_path / "events.jsonl")
    lg = logging.getLogger("kc-test-debug-signatures")
    lg.propagate = False
    lg.setLevel(logging.DEBUG)
    lg.addHandler(SignatureWatch(events, "c0"))
    lg.debug("METADATA [kc-consumer-c0#consumer-1] [thrd:main]: 172.24.50.13:9092/3: "
             "3 brokers, 1 topics")
    lg.debug("METADATA [kc-consumer-c0#consumer-1] [thrd:main]: 172.24.50.13:9092/3: "
             "0 brokers, 1 topics")
    events.close()
    got = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["detail"]["client"], e["detail"]["bug"]) for e in got if e["kind"] == CLIENT_LOG
            ] == [("c0", "librdkafka#5301")]


def test_a_consumer_that_cannot_start_says_why_in_its_log(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # librdkafka refuses a KIP-848 consumer with a classic-only property at creation; the
    # consumer process died with its traceback on stderr only and an empty log
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path\n"
        "from workloads.config import ConsumerConfig, ConsumerSpec\n"
        "from workloads.consumer import consumer_main\n"
        "cfg = ConsumerConfig(group_protocol='consumer',"
        " extra={'session.timeout.ms': '30000'})\n"
        "consumer_main(Path(sys.argv[1]), '127.0.0.1:1', 't', 1, cfg,"
        " ConsumerSpec('c0', 'subscribe'), None, None)\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    log = (tmp_path / "logs" / "workload-c0.log").read_text()
    assert "consumer c0 could not start" in log and "session.timeout.ms" in log, log
