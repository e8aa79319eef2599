"""The anomaly kinds of DESIGN.md §4 (names are contract) and how each one is counted."""

from __future__ import annotations

#: Every anomaly kind, in the order results.json lists them.
ANOMALY_KINDS: tuple[str, ...] = (
    "lost",
    "unseen",
    "duplicate",
    "inconsistent-offset",
    "offset-mismatch",
    "reorder",
    "failed-visible",
    "unexpected",
    "poll-skip",
    "nonmonotonic-poll",
    "aborted-read",
    "reused-offset",
    "divergence",
)

#: Maximum number of examples kept per kind (counts stay exact).
MAX_EXAMPLES = 32

#: What one unit of each kind's count is, so a reader knows what "count" means.
UNITS: dict[str, str] = {
    "lost": "acknowledged writes",
    "unseen": "acknowledged writes",
    "duplicate": "writes (identities) read at 2+ distinct offsets",
    "inconsistent-offset": "offsets (topic, partition, offset)",
    "offset-mismatch": "acknowledged writes",
    "reorder": "acknowledged writes stored after a higher seq of the same producer",
    "failed-visible": "failed writes",
    "unexpected": "distinct records read (offset, value) that no attempt produced",
    "poll-skip": "consumer reads that followed a jump",
    "nonmonotonic-poll": "consumer reads that went backwards",
    "aborted-read": "reads",
    "reused-offset": "offsets (topic, partition, offset) a live reader saw before a "
    "truncation that now hold another record",
    "divergence": "offsets (topic, partition, offset) where replicas differ",
}

#: One-line definitions, for results.json readers (mirrors DESIGN.md §4).
DEFINITIONS: dict[str, str] = {
    "lost": "an acknowledged write never read by any reader, in a partition the final drain "
    "read completely",
    "unseen": "an acknowledged write never read, in a partition the drain could not read "
    "completely",
    "duplicate": "one write (producer, seq) read at two or more distinct offsets",
    "inconsistent-offset": "one offset read with two different records (readers disagree "
    "about the log)",
    "offset-mismatch": "an acknowledged write with a reported offset was read, but never at "
    "that offset",
    "reorder": "two acknowledged writes of one producer to one partition stored in the "
    "opposite order of their seq",
    "failed-visible": "a write reported as definitely failed was read",
    "unexpected": "a record read that no attempt produced, or whose value does not decode",
    "poll-skip": "a consumer's consecutive reads of a partition jumped over offsets that exist",
    "nonmonotonic-poll": "a consumer's consecutive reads of a partition went backwards",
    "aborted-read": "a read_committed reader saw a record of an aborted transaction",
    "reused-offset": "a live reader saw a record at an offset that, after a truncation of "
    "that partition, now holds another record (the vanished tail's offsets were reused)",
    "divergence": "two replicas of a partition hold different records at the same offset",
}
