"""The orchestrator records the consumers' exit codes as it records the producers' (issue 44,
point 8): stopping them in the teardown writes a ``consumers-stopped`` event whose
``detail.consumers`` holds each one's stats and ``exitcode``, which the checker reads.

No cluster: two real consumer processes against a bootstrap nobody listens on (they poll
nothing until stopped); one is SIGKILLed before the teardown."""

from __future__ import annotations

import json
import os
import signal
import time

from contract.events import CONSUMERS_STOPPED
from runner.config import RunConfig
from runner.orchestrator import Run
from workloads import ConsumerConfig, ConsumerSpec, start_consumers


def test_teardown_records_each_consumers_exit_code(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = Run(RunConfig(scenario="consumer-exits", out=str(tmp_path)), None, progress=print)
    run.consumers = start_consumers(run.run_dir, "127.0.0.1:1", "t", 1, ConsumerConfig(),
                                    [ConsumerSpec("c0"), ConsumerSpec("c1")])
    killed = run.consumers.procs["c1"]
    end = time.monotonic() + 60
    while not all(p.is_alive() for p in run.consumers.procs.values()):
        assert time.monotonic() < end, "the consumer processes did not start"
        time.sleep(0.1)
    time.sleep(1.0)  # past their imports: a consumer in its read loop
    os.kill(killed.pid, signal.SIGKILL)  # type: ignore[arg-type]
    killed.join(10)
    run.teardown()
    events = [json.loads(line) for line in
              (run.run_dir / "history" / "events.jsonl").read_text().splitlines()]
    stopped = [e for e in events if e["kind"] == CONSUMERS_STOPPED]
    assert len(stopped) == 1 and stopped[0]["phase"] == "instant"
    consumers = stopped[0]["detail"]["consumers"]
    assert {name: st["exitcode"] for name, st in consumers.items()} == {
        "c0": 0, "c1": -signal.SIGKILL}
    assert consumers["c0"]["reader"] == "c0" and consumers["c0"]["records"] == 0
