"""The protocol between a client driver in another language and its Python recorder.

A driver is one process per producer or consumer (``workloads/java`` is the Java client's).
It is started with one argument, the path of its **spec**: ``key=value`` lines (UTF-8, no
escapes: a value runs to the end of its line), the keys of :data:`SPEC_KEYS` and the client's
properties, with Kafka's names, as ``config.<property>=<value>``.

Record values are the contract's codec (``workloads/record.py``): ``KC1|<producer>|<seq>|
<crc32 of "<producer>|<seq>|<padding>" as 8 lowercase hex digits>|<padding>``, the padding
being ``abcdefghijklmnopqrstuvwxyz0123456789`` repeated and cut so the value has
``record_size`` bytes (longer only when the header alone does not fit). A driver encodes;
the recorder decodes what consumers read (values travel base64-encoded), so decoding is
defined once. ``<driver> --encode P S N`` prints the value of record S of producer P at size
N (the codec's shared test vectors, tests/workloads/test_java_driver.py).

The driver writes one **event** at a time to stdout, times in wall-clock nanoseconds since
the epoch, as they happen (flushed per event or per batch of them, at least every 100 ms).
The two events of every record, ``sent`` and ``ack``, are binary **frames** (:data:`FRAMES`:
:data:`FRAME_SIZE` bytes, a tag byte and three little-endian signed 64-bit integers, the
fields of :data:`LINES` of the same name); every other event is a text **line**, ending in
a newline, fields separated by tabs, whose first field says what it is (:data:`LINES`). A
line never holds a frame's tag byte (control bytes 1 and 2), so the stream is read one
event after another: a tag starts a frame, anything else a line. A driver may also write
``sent`` and ``ack`` as lines. A last frame or line cut short (a killed driver) is torn, and
skipped; the events before it are whole. It
stops when its stdin reaches its end (the recorder closes it to stop it, and so does a
recorder that dies; the lines before it are :data:`COMMANDS`), at its duration or after
``max_records``; a producer then closes its client, waiting up to ``close_timeout_s``
for outstanding acknowledgements, and writes ``end``. Diagnostics go to stderr (the
recorder keeps them in the run's logs).
"""

from __future__ import annotations

#: The spec's keys (besides ``config.*``), by role.
SPEC_KEYS: dict[str, tuple[str, ...]] = {
    # role: producer or consumer; name: p0, c0 (the client.id is kc-<role>-<name>)
    "both": ("role", "name", "bootstrap", "topic",
             # producer: written round-robin by seq (seq i to partitions[i % n]); consumer in
             # assign mode: read from the beginning (subscribe: the group assigns)
             "partitions"),
    "producer": ("producer", "rate", "duration_s", "max_records", "record_size",
                 "close_timeout_s",
                 # a transactional producer (config.transactional.id set): records per
                 # transaction, the share aborted (drawn from a generator seeded by seed)
                 "records_per_txn", "abort_share", "seed",
                 # optional, benchmarks only (the Go drivers): 1 writes no sent/ack lines
                 # but one ``bench`` line before ``end``: the client's own bare loop
                 "bare"),
    # restart mode (a member alone in its group, the spec's group.id): once caught up (a
    # poll returned nothing, or no partition lags) and restart_interval_s has passed,
    # close (committing; a ``rebalance restart`` line first), after restart_pause_s join
    # again; restart_close_delay_s: the time between the caught-up poll and the close (no
    # poll meanwhile)
    "consumer": ("mode", "poll_timeout_ms", "restart_interval_s", "restart_pause_s",
                 "restart_close_delay_s"),
    # a producer given input_topic is a consume-transform-produce loop (the Java driver's
    # only; docs/findings/java_abort_no_rewind.py): its group consumer (group; read_committed,
    # no auto-commit, max_poll_records a poll) reads the input and every poll becomes one
    # transaction of one output a record (kc-id and kc-src headers); every abort_every-th
    # transaction is aborted, and with rewind=1 the consumer then seeks back to the group's
    # committed offsets. It stops at the input's end (a poll returned nothing) or at
    # duration_s. Its stdout lines are a transactional producer's.
    "pipeline": ("input_topic", "group", "max_poll_records", "poll_timeout_ms",
                 "abort_every", "rewind"),
}


def render_spec(values: dict[str, object], config: dict[str, str]) -> str:
    """The spec file's text: ``values`` (lists comma-separated) and ``config.*`` lines."""
    lines = []
    for key, v in [*values.items(), *((f"config.{k}", c) for k, c in config.items())]:
        text = ",".join(str(x) for x in v) if isinstance(v, list | tuple) else str(v)
        if "\n" in text or "\n" in key or "=" in key:
            raise ValueError(f"spec entry {key!r} cannot be written on one line")
        lines.append(f"{key}={text}")
    return "\n".join(lines) + "\n"


#: Line kinds: name -> the fields after it.
LINES: dict[str, tuple[str, ...]] = {
    # the client's own name and version as it reports them (first line)
    "hello": ("client", "version"),
    # producer: record seq for partition goes to the client's send() at invoke_ns (written
    # before the call, so it precedes the record's outcome)
    "sent": ("seq", "partition", "invoke_ns"),
    # producer: the sent record was refused before it was queued (never appended): ``fail``
    # whatever the error's name
    "refused": ("seq", "complete_ns", "error"),
    # producer: acknowledged at offset (-1: the client gave none)
    "ack": ("seq", "offset", "complete_ns"),
    # producer: the client reported an error for record seq (contract.clients classifies it)
    "error": ("seq", "complete_ns", "error"),
    # producer: a transaction begins (its name: <transactional.id>:<number>); the records
    # sent until its outcome belong to it
    "txn": ("txn",),
    # producer: the open transaction's outcome: committed, aborted or unknown
    "txn-outcome": ("outcome",),
    # consumer: one record read by poll number poll; the value base64-encoded
    "read": ("poll", "read_ns", "partition", "offset", "value"),
    # consumer (subscribe): partitions assigned / revoked / lost, comma-separated
    "rebalance": ("what", "poll", "partitions"),
    # consumer: closed at closed_ns (committing) after a ``down`` command (COMMANDS)
    "down": ("closed_ns",),
    # a watched call (contract.liveness.WATCHED_CALLS) begins, with its own timeout in ms
    # (-1: none) / the call in progress ends
    "call": ("call", "timeout_ms"),
    "done": (),
    # a bare producer (spec bare=1): acknowledgements, the first send, the last ack
    "bench": ("acked", "first_ns", "last_ack_ns"),
    # the driver is finished: nothing follows
    "end": (),
}


#: Frame tags: the binary form of the two hot events (fields as in :data:`LINES`, each a
#: little-endian int64 after the tag). Fixed width, so the recorder reads a run of them
#: with ``numpy.frombuffer``: as text they cost the recorder more CPU a record than the
#: client's send (the Java driver reached half of Kafka's own perf tool).
FRAMES: dict[int, str] = {1: "sent", 2: "ack"}
FRAME_SIZE = 25


#: Lines the recorder writes on a driver's stdin (its end means stop): a group consumer
#: told ``down`` closes, committing (a ``rebalance restart`` line first, a ``down`` line
#: once closed), and starts a new consumer in its group when told ``up`` (a consumer-down
#: fault, contract.faults). A driver ignores lines it does not know.
COMMANDS: tuple[str, ...] = ("down", "up")


def split_line(line: str) -> tuple[str, list[str]] | None:
    """``(kind, fields)`` of one driver line; None for a line that is no event (a torn last
    line of a killed driver, a kind or a field count this protocol does not have)."""
    parts = line.rstrip("\n").split("\t")
    fields = LINES.get(parts[0])
    if fields is None or len(parts) - 1 != len(fields):
        return None
    return parts[0], parts[1:]
