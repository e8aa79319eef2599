"""The Python recorder of a client driver in another language (contract/driver_protocol.py).

One recorder process per producer or consumer, started like the librdkafka workload's
(workloads/processes.py: spawned, a stop flag, stats on a queue, a call-watch slot). It
writes the driver's spec, starts the driver with stdin and stdout piped and stderr in the
run's logs (``logs/workload-<name>.log``), and turns every line the driver writes into the
history: writes.parquet rows through the librdkafka producer's recorders (columns outside
transactions, rows waiting for their outcome inside; the hot lines are parsed a chunk at a
time, workloads/driver_lines.py), reads.parquet rows through the same ReadRecorder,
rebalance events, and the call-watch slot (calls and progress). It stops the driver by
closing its stdin (when the run's stop flag is set or SIGTERM arrives), waits for it, kills
it past a deadline, and resolves every attempt left without an outcome as ``info``: a
killed driver, or a killed recorder (the driver sees its stdin end and stops), leaves a
checkable partial history.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.clients import classify_error
from contract.driver_protocol import render_spec, split_line
from contract.events import EventLog
from workloads.call_watch import CallSlot
from workloads.child_logging import configure_logging
from workloads.consumer import ReadRecorder, rebalance_event
from workloads.driver_lines import HotRun, split_events
from workloads.history import history_dir
from workloads.outcomes import OK
from workloads.write_columns import ColumnRecorder, warm_up
from workloads.write_recorder import WriteRecorder, make_recorder

log = logging.getLogger("kafka_chaos.workloads.foreign")

TXN_OUTCOMES = ("committed", "aborted", "unknown")
#: How long a stopped driver gets past its own close timeout before it is killed.
EXIT_GRACE_S = 15.0
#: The driver's stdout pipe's capacity: ~80,000 records' frames. With Linux's default
#: (64 KiB, ~1,300 records) a driver blocked in its write whenever the recorder was off the
#: CPU or writing a Parquet part (10-30 ms on a loaded 2-core machine), and the client's
#: I/O thread, writing ``ack`` frames, stalled with it.
PIPE_BYTES = 4 << 20


@dataclass
class DriverSpec:
    """What one driver process is told (contract.driver_protocol.SPEC_KEYS) and run with."""

    command: list[str]
    client: str  # contract.clients kind
    values: dict[str, Any]
    config: dict[str, str]
    close_timeout_s: float = 10.0
    history_chunk_rows: int = 50_000
    history_flush_interval_s: float = 2.0

    @property
    def name(self) -> str:
        return str(self.values["name"])


@dataclass
class _Recorder:
    """Turns one driver's lines into history rows and slot marks."""

    spec: DriverSpec
    calls: CallSlot
    version: str | None = None
    writes: WriteRecorder | ColumnRecorder | None = None
    reads: ReadRecorder | None = None
    events: EventLog | None = None
    ended: bool = False
    bad_lines: int = 0
    topic: str = ""

    def chunk(self, events: list[HotRun | bytes]) -> None:
        """Whole events of the driver's stdout, in its order (driver_lines.split_events):
        runs of ``sent``/``ack`` frames or lines as columns, every other line on its own."""
        for piece in events:
            if isinstance(piece, HotRun):
                self.hot(piece)
            else:
                self.line(piece.decode("utf-8", "replace"))

    def hot(self, run: HotRun) -> None:
        """A run of ``sent`` and ``ack`` lines: every record of it is sent before any of
        its acknowledgements is taken (an ack never precedes its own record's line)."""
        w = self.writes
        n = len(run.sent) + len(run.acks)
        if w is None:  # a consumer does not send
            self.bad_lines += n
            log.warning("%s: %d producer lines from a consumer", self.spec.name, n)
            return
        if isinstance(w, ColumnRecorder):
            try:
                w.invoked_many(run.sent[:, 0], run.sent[:, 1], run.sent[:, 2])
            except ValueError as e:  # a driver that skipped or repeated a seq
                self.bad_lines += len(run.sent)
                log.warning("%s: %d sent lines lost: %s", self.spec.name, len(run.sent), e)
            w.acked_many(run.acks[:, 0], run.acks[:, 1], run.acks[:, 2])
        else:
            for seq, part, invoke_ns in run.sent.tolist():
                w.invoked(seq, part, invoke_ns)
            for seq, offset, complete_ns in run.acks.tolist():
                w.resolved(seq, complete_ns, OK, None, offset if offset >= 0 else None)
        if len(run.acks):
            self.calls.progress(int(run.acks[:, 2].max()))
        w.maybe_flush()

    def line(self, raw: str) -> None:
        parsed = split_line(raw)
        if parsed is None:
            self.bad_lines += 1
            if self.bad_lines <= 5:
                log.warning("%s: not a driver line: %r", self.spec.name, raw[:200])
            return
        kind, f = parsed
        try:
            self._line(kind, f)
        except (ValueError, binascii.Error) as e:  # a malformed field: one line lost
            self.bad_lines += 1
            log.warning("%s: bad %s line %r: %s", self.spec.name, kind, raw[:200], e)

    def _line(self, kind: str, f: list[str]) -> None:
        w, r = self.writes, self.reads
        if kind == "sent" and w is not None:
            w.invoked(int(f[0]), int(f[1]), int(f[2]))
        elif kind == "ack" and w is not None:
            offset = int(f[1])
            w.resolved(int(f[0]), int(f[2]), OK, None, offset if offset >= 0 else None)
            self.calls.progress(int(f[2]))
        elif kind == "error" and w is not None:
            w.resolved(int(f[0]), int(f[1]), classify_error(self.spec.client, f[2]), f[2], None)
        elif kind == "refused" and w is not None:
            w.refused_at(int(f[0]), int(f[1]), f[2])
        elif kind == "txn" and isinstance(w, WriteRecorder):  # rows: a transactional spec
            w.begin_txn(f[0])
        elif kind == "txn-outcome" and isinstance(w, WriteRecorder) and w.txn is not None:
            w.end_txn(f[0] if f[0] in TXN_OUTCOMES else "unknown")
        elif kind == "read" and r is not None:
            r.polls = max(r.polls, int(f[0]))
            r.add(int(f[0]), int(f[1]), self.topic, int(f[2]), int(f[3]),
                  base64.b64decode(f[4], validate=True) if f[4] else None)
            self.calls.progress(int(f[1]))
        elif kind == "rebalance" and self.events is not None:
            parts = [p for p in f[2].split(",") if p]
            rebalance_event(self.events, self.spec.name, f[0], int(f[1]), parts)
        elif kind == "call":
            timeout_ms = int(f[1])
            self.calls.begin(f[0], None if timeout_ms < 0 else timeout_ms / 1000)
        elif kind == "done":
            self.calls.end()
        elif kind == "down":  # closed for a consumer-down: the fault's answer
            self.calls.stalled(int(f[0]))
        elif kind == "hello":
            self.version = f[1]
        elif kind == "end":
            self.ended = True
        # Also on lines that give no row: a consumer's idle polls (call/done) are what
        # flush its last reads once the producers are done.
        if w is not None:
            w.maybe_flush()
        elif r is not None:
            r.writer.maybe_flush()


def _feed(fd: int, rec: _Recorder, lock: threading.Lock) -> None:
    """Reads the driver's stdout as it comes (whatever a read returns, up to 1 MiB) and
    hands its whole events on; a last frame or line cut short is torn (a driver that died
    while writing it)."""
    rest = b""
    while chunk := os.read(fd, 1 << 20):
        events, rest = split_events(rest + chunk if rest else chunk)
        if events:
            with lock:
                rec.chunk(events)
    if rest:
        with lock:
            rec.bad_lines += 1


def driver_main(run_dir: Path, spec: DriverSpec, stop_event: Any, stats_queue: Any,
                slot: Any = None) -> None:
    """Entry point of a recorder process (spawned by workloads.drivers)."""
    name = spec.name
    configure_logging(run_dir, f"{name}-recorder")
    role = spec.values["role"]
    rec = _Recorder(spec, CallSlot(slot), topic=str(spec.values["topic"]))
    if role == "producer":
        # columns outside transactions (the recorder's cost at flat-out rates), rows
        # waiting for their transaction's outcome inside them
        rec.writes = make_recorder(run_dir, int(spec.values["producer"]), rec.topic,
                                   transactional="transactional.id" in spec.config,
                                   chunk_rows=spec.history_chunk_rows,
                                   flush_interval_s=spec.history_flush_interval_s)
        warm_up()  # pyarrow's first-use costs before the driver's first record, not after
    else:
        rec.reads = ReadRecorder(run_dir, name, str(spec.values["mode"]),
                                 spec.history_chunk_rows, spec.history_flush_interval_s)
        rec.events = EventLog(history_dir(run_dir) / "events.jsonl")
    terminating = threading.Event()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the orchestrator owns Ctrl-C
    signal.signal(signal.SIGTERM, lambda *_: terminating.set())
    # Not in the run directory: the client's properties may hold secrets (run.json's are
    # redacted), and the run directory is an artifact others read.
    fd, raw_path = tempfile.mkstemp(prefix=f"kc-driver-{name}-", suffix=".spec")
    spec_path = Path(raw_path)
    with os.fdopen(fd, "w") as fh:  # mkstemp: 0600, ours alone
        fh.write(render_spec(spec.values, spec.config))
    stderr = open(Path(run_dir) / "logs" / f"workload-{name}.log", "ab")  # noqa: SIM115
    exitcode: int | None = None
    try:
        proc = subprocess.Popen([*spec.command, str(spec_path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr, bufsize=0,
                                start_new_session=True)  # no terminal signals: we stop it
        lock = threading.Lock()
        assert proc.stdout is not None
        _widen_pipe(proc.stdout.fileno())
        reader = threading.Thread(target=_feed, args=(proc.stdout.fileno(), rec, lock),
                                  daemon=True, name="kc-driver-lines")
        reader.start()
        assert proc.stdin is not None
        down = False
        while reader.is_alive() and not stop_event.is_set() and not terminating.is_set():
            reader.join(0.1)
            if rec.calls.down_requested() != down:  # a consumer-down began or ended
                down = not down
                _tell(proc, "down" if down else "up")
                if not down:
                    rec.calls.stalled(0)
        proc.stdin.close()  # the driver's stop signal
        deadline = time.monotonic() + spec.close_timeout_s + EXIT_GRACE_S
        while reader.is_alive() and time.monotonic() < deadline:
            reader.join(0.1)
        if proc.poll() is None:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s: the driver did not stop in time: killed", name)
                proc.kill()
                proc.wait(10)
        exitcode = proc.returncode
        reader.join(5)
        with lock:
            if rec.writes is not None:
                left = rec.writes.resolve_remaining()
                if left:
                    log.info("%s: %d attempts without an outcome: info", name, left)
    finally:
        stderr.close()
        spec_path.unlink(missing_ok=True)
        rec.calls.end()
        for closer in (rec.writes, rec.reads, rec.events):
            if closer is not None:
                closer.close()
        if stats_queue is not None:
            stats_queue.put(_stats(rec, role, exitcode))


def _widen_pipe(fd: int) -> None:
    """Gives the pipe :data:`PIPE_BYTES` (or the most an unprivileged process may, the
    system's ``fs.pipe-max-size``); a system without F_SETPIPE_SZ keeps its default."""
    setsz = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsz is None:
        return
    for size in (PIPE_BYTES, _pipe_max()):
        try:
            fcntl.fcntl(fd, setsz, size)
            return
        except OSError:  # EPERM past pipe-max-size without CAP_SYS_RESOURCE; try less
            continue


def _pipe_max() -> int:
    try:
        return int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except (OSError, ValueError):
        return 1 << 20


def _tell(proc: subprocess.Popen[bytes], command: str) -> None:
    """One command line on the driver's stdin (contract.driver_protocol.COMMANDS)."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(f"{command}\n".encode())
    except OSError as e:  # the driver is gone: its end is recorded elsewhere
        log.info("driver: %s not delivered: %s", command, e)


def _stats(rec: _Recorder, role: str, exitcode: int | None) -> dict[str, Any]:
    client = {"client": rec.spec.client, "client_version": rec.version}
    base: dict[str, Any] = {"client": client, "driver_exitcode": exitcode,
                            "driver_ended": rec.ended, "bad_lines": rec.bad_lines}
    if role == "producer" and rec.writes is not None:
        return {**rec.writes.stats(), **base}
    reads = rec.reads
    return {"reader": rec.spec.name, "mode": rec.spec.values.get("mode"),
            "polls": reads.polls if reads else 0,
            "records": reads.records if reads else 0, "invalid": reads.invalid if reads else 0,
            "restarts": 0, **base}
