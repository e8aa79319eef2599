"""The anomaly kinds of DESIGN.md §4 (names are contract): definitions, units, and the
short meanings and order the report shows them in."""

from __future__ import annotations

from dataclasses import dataclass

#: What one instance of a kind is about, which decides how its examples are built and whose
#: reads they list: one write identity (producer, seq); one offset of a partition's log; one
#: step of a reader between two reads; one record read (by identity when it decodes, else by
#: its offset).
WRITE, OFFSET, STEP, RECORD = "write", "offset", "step", "record"
#: The liveness kinds' subjects: one client (a producer, a consumer or a consumer group) in
#: the liveness phase; one watched client call (contract.liveness).
CLIENT, CALL = "client", "call"

#: How much earlier than its write's first attempt a read must be to count as
#: read-before-write. Every workload process (producers, consumers, the drain) stamps
#: invoke_ns and read_ns with the same host's wall clock (time.time_ns()) — invoke before
#: produce(), read after consume() returns — so a read can only follow the attempt; the
#: slack absorbs a step of that clock (NTP) during a run.
READ_BEFORE_WRITE_SLACK_NS = 1_000_000_000


@dataclass(frozen=True)
class AnomalyKind:
    """One anomaly kind: what it is (``definition``, in results.json), what one unit of its
    count is (``unit``), a short meaning for tables (``meaning``), and what one instance is
    about (``subject``: WRITE, OFFSET, STEP, RECORD, CLIENT or CALL)."""

    kind: str
    definition: str
    unit: str
    meaning: str
    subject: str = WRITE


#: Every anomaly kind, in the order results.json lists them.
ANOMALIES: dict[str, AnomalyKind] = {a.kind: a for a in (
    AnomalyKind(
        "lost",
        "an acknowledged write never read by any reader, in a partition the final drain "
        "read completely",
        "acknowledged writes",
        "acknowledged write never read, in a partition the drain read completely"),
    AnomalyKind(
        "vanished",
        "a record a reader returned that is gone from a partition the final drain read "
        "completely: a reader is served only records below the high watermark, which every "
        "in-sync replica holds, so only an unclean election or a power loss of every replica "
        "that held it can remove it (a reused offset's old record is one)",
        "records (identities) read, then gone from the completely drained log",
        "a record a reader returned is gone from the completely drained log"),
    AnomalyKind(
        "unseen",
        "an acknowledged write never read, in a partition the drain could not read "
        "completely",
        "acknowledged writes",
        "acknowledged write never read, in a partition the drain could not finish"),
    AnomalyKind(
        "duplicate",
        "one write (producer, seq) read at two or more distinct offsets",
        "writes (identities) read at 2+ distinct offsets",
        "one record read at two or more distinct offsets"),
    AnomalyKind(
        "inconsistent-offset",
        "one offset read with two different records (readers disagree about the log)",
        "offsets (topic, partition, offset)",
        "one offset read with two different records",
        OFFSET),
    AnomalyKind(
        "offset-mismatch",
        "an acknowledged write with a reported offset was read, but never at that offset",
        "acknowledged writes",
        "acknowledged offset differs from where the record was read"),
    AnomalyKind(
        "reorder",
        "two acknowledged writes of one producer to one partition stored in the opposite "
        "order of their seq",
        "acknowledged writes stored after a higher seq of the same producer",
        "two writes of one producer stored against their sequence order"),
    AnomalyKind(
        "failed-visible",
        "a write reported as definitely failed was read",
        "failed writes",
        "a write reported as failed was read"),
    AnomalyKind(
        "unexpected",
        "a record read that no attempt produced, or whose value does not decode",
        "distinct records read (offset, value) that no attempt produced",
        "a record no attempt produced, or one that does not decode",
        RECORD),
    AnomalyKind(
        "poll-skip",
        "a consumer's consecutive reads of a partition jumped over offsets that exist",
        "consumer reads that followed a jump",
        "consecutive polls jumped over offsets that exist",
        STEP),
    AnomalyKind(
        "nonmonotonic-poll",
        "a consumer's consecutive reads of a partition went backwards",
        "consumer reads that went backwards",
        "consecutive polls went backwards",
        STEP),
    AnomalyKind(
        "aborted-read",
        "a read_committed reader saw a record of an aborted transaction",
        "reads",
        "a read_committed reader saw an aborted transaction's record"),
    AnomalyKind(
        "torn-transaction",
        "a read_committed reader saw some records of a transaction whose outcome its "
        "producer does not know (its commit or abort failed) while another record the producer "
        "sent in it was read by no read_committed reader, in a partition the drain read "
        "completely: Kafka "
        "decides a transaction as a whole, so only a transaction its producer's own requests "
        "did not decide (a stale EndTxn, KAFKA-17754) is visible in part",
        "writes of partly visible transactions that readers saw",
        "part of a transaction is visible, part is not (decided without its producer)"),
    AnomalyKind(
        "stalled-lso",
        "an acknowledged write of a committed transaction at or above its partition's last "
        "stable offset, which the read_committed final drain found below the partition's "
        "high watermark while a record of a transaction its producer saw decided (committed "
        "or aborted) lies at that offset: no transaction the run's producers have open holds "
        "the offset there, so read_committed readers can never read the write (the replica "
        "that leads lacks that transaction's marker)",
        "acknowledged writes held behind a stuck last stable offset",
        "a committed write read_committed readers can never reach: the last stable offset "
        "is stuck at a decided transaction"),
    AnomalyKind(
        "reused-offset",
        "a live reader saw a record at an offset that, after a truncation of that partition, "
        "now holds another record (the vanished tail's offsets were reused)",
        "offsets (topic, partition, offset) read with a record that later vanished",
        "an offset read live now holds another record (truncated tail reused)",
        OFFSET),
    AnomalyKind(
        "read-before-write",
        f"a record read (by any reader) more than {READ_BEFORE_WRITE_SLACK_NS / 1e9:g} s "
        "before the first produce attempt of its write (producer, seq): causally impossible "
        "on one host's clock, so the history attributes the record to the wrong write (e.g. "
        "two writers using one producer id)",
        "writes (identities) first read before their first produce attempt",
        "a record read before its write was first attempted (history mis-attributes it)"),
    AnomalyKind(
        "stuck-producer",
        "a producer that got no acknowledgement within the liveness bound after the final "
        "heal, although its process ran on through the whole bound",
        "producers",
        "a producer got no acknowledgement within the bound after the final heal",
        CLIENT),
    AnomalyKind(
        "stuck-consumer",
        "a consumer (an assign- or restart-mode reader, or a subscribe-mode consumer group) "
        "that read nothing within the liveness bound after the final heal while its "
        "partitions held records it had not read, acknowledged at least the slack before "
        "the bound ended and still in the drained log",
        "consumers (readers, or groups of subscribe-mode readers)",
        "a consumer read nothing within the bound after the heal, with records to read",
        CLIENT),
    AnomalyKind(
        "hung-call",
        "a client call (poll, flush, purge, consume, close, a transaction call) that stayed "
        "blocked past its own timeout plus the slack (a call without a timeout: past the "
        "liveness bound), recorded by the run while it blocked",
        "calls",
        "a client call blocked past its own timeout",
        CALL),
    AnomalyKind(
        "down-after-heal",
        "a producer whose client reported every broker down (librdkafka's "
        "_ALL_BROKERS_DOWN) later than the liveness bound after the last fault had ended, "
        "at a moment another client of the run was acknowledged within a second: the "
        "brokers served the client host, and this client had not reconnected to any",
        "producers",
        "a client went on reporting every broker down past the bound after the faults healed",
        CLIENT),
    AnomalyKind(
        "divergence",
        "two replicas of a partition hold different records at the same offset",
        "offsets (topic, partition, offset) where replicas differ",
        "two replicas hold different records at the same offset",
        OFFSET),
)}

#: Every anomaly kind, in the order results.json lists them.
ANOMALY_KINDS: tuple[str, ...] = tuple(ANOMALIES)

#: The order a report reader cares about: losses and broken logs first.
REPORT_ORDER: tuple[str, ...] = (
    "lost", "vanished", "unseen", "divergence", "reused-offset", "inconsistent-offset",
    "offset-mismatch",
    "failed-visible", "aborted-read", "torn-transaction", "stalled-lso", "unexpected",
    "read-before-write",
    "duplicate", "reorder", "poll-skip", "nonmonotonic-poll",
    "stuck-producer", "stuck-consumer", "hung-call", "down-after-heal",
)

#: The liveness kinds (checkers/liveness.py builds their entries itself).
LIVENESS_KINDS: tuple[str, ...] = ("stuck-producer", "stuck-consumer", "hung-call")
#: A client that did not reconnect after the faults healed (checkers/reconnect.py builds its
#: entry itself).
DOWN_AFTER_HEAL = "down-after-heal"

#: Maximum number of examples kept per kind (counts stay exact).
MAX_EXAMPLES = 32

#: kind -> unit / definition / short meaning (views of :data:`ANOMALIES`).
UNITS: dict[str, str] = {k: a.unit for k, a in ANOMALIES.items()}
DEFINITIONS: dict[str, str] = {k: a.definition for k, a in ANOMALIES.items()}
MEANINGS: dict[str, str] = {k: a.meaning for k, a in ANOMALIES.items()}
SUBJECTS: dict[str, str] = {k: a.subject for k, a in ANOMALIES.items()}
