"""The guarantee model of DESIGN.md §4: which anomaly kinds the configuration allows, and
why, in words a user understands."""

from __future__ import annotations

from dataclasses import dataclass

from contract.anomalies import ANOMALY_KINDS
from contract.settings import Settings

#: librdkafka errors after which an idempotent producer may bump its epoch and resend
#: (confluentinc/librdkafka#4953): duplicates then come from the client, not from Kafka.
EPOCH_BUMP_ERRORS: frozenset[str] = frozenset(
    {
        "_MSG_TIMED_OUT",
        "_TIMED_OUT",
        "REQUEST_TIMED_OUT",
        "_PURGE_INFLIGHT",
        "_FATAL",
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "UNKNOWN_PRODUCER_ID",
        "_GAPLESS_GUARANTEE",
        "INVALID_PRODUCER_EPOCH",
    }
)


@dataclass(frozen=True)
class Rule:
    """Whether the configuration allows a kind, and a sentence saying why."""

    allowed: bool
    why: str


def _config_line(s: Settings) -> str:
    return (
        f"acks={s.acks}, min.insync.replicas={s.min_insync}, "
        f"unclean.leader.election.enable={'true' if s.unclean else 'false'}, "
        f"enable.idempotence={'true' if s.idempotence else 'false'}"
    )


def lost_rule(s: Settings) -> Rule:
    if s.acks in ("0", "1"):
        return Rule(True, f"allowed: acks={s.acks} — the leader acknowledges before any follower "
                    "has the record, so a leader failover can drop acknowledged writes")
    if s.unclean:
        note = "" if s.unclean_honoured else (
            f" (note: Kafka {s.kafka_version} in KRaft mode ignores this setting before 3.9)")
        return Rule(True, "allowed: unclean.leader.election.enable=true — a replica that is not "
                    "in sync may become leader and truncate acknowledged writes" + note)
    if s.min_insync < 2:
        return Rule(True, f"allowed: min.insync.replicas={s.min_insync} — when the ISR shrinks to "
                    "the leader alone, it acknowledges writes no other replica has")
    return Rule(False, f"forbidden: {_config_line(s)} — every acknowledged write is on at least "
                f"{s.min_insync} in-sync replicas and only in-sync replicas become leader; "
                "only a power loss of every in-sync replica excuses a loss")


def duplicate_rule(s: Settings, epoch_bump_errors: int) -> Rule:
    if not s.idempotence:
        return Rule(True, "allowed: enable.idempotence=false — the producer retries batches whose "
                    "acknowledgement was lost, and the broker appends them again")
    if epoch_bump_errors > 0 and not s.transactional:
        return Rule(True, f"allowed: {epoch_bump_errors} writes ended with a timeout or fatal "
                    "idempotence error; librdkafka then bumps the producer epoch and may resend, "
                    "a known client limitation (confluentinc/librdkafka#4953), not a Kafka fault")
    return Rule(False, "forbidden: the idempotent producer's sequence numbers let the broker "
                "drop retried batches")


def reorder_rule(s: Settings) -> Rule:
    if not s.idempotence:
        return Rule(True, "allowed: enable.idempotence=false — with several requests in flight a "
                    "retried batch can land after a later one")
    return Rule(False, "forbidden: the idempotent producer keeps per-partition order across "
                "retries")


POLL_RULE = Rule(False, "forbidden in assign mode; in subscribe mode a rebalance may move a "
                 "partition to another position, so jumps and rewinds of subscribe-mode readers "
                 "are excused (the history has no rebalance events to pin them down)")

NEVER: dict[str, str] = {
    "inconsistent-offset": "forbidden: every reader must see the same record at an offset",
    "offset-mismatch": "forbidden: an acknowledged offset is where the record stays",
    "failed-visible": "forbidden: a write reported as definitely failed must never be read",
    "unexpected": "forbidden: every record read must come from a produce attempt",
    "aborted-read": "forbidden: read_committed readers must not see aborted transactions",
    "divergence": "forbidden: after catch-up, replicas of a partition hold identical logs",
    "unseen": "not a violation by itself: the drain could not read these partitions to the "
    "end, so whether the writes survive is unknown (valid becomes \"unknown\")",
}


def rules(s: Settings, epoch_bump_errors: int = 0) -> dict[str, Rule]:
    """The rule for every kind under settings ``s``."""
    lost = lost_rule(s)
    out: dict[str, Rule] = {
        "lost": lost,
        # DESIGN.md §4: a reused offset is the trace a lost tail leaves in a live reader.
        "reused-offset": Rule(lost.allowed, "as for lost: " + lost.why),
        "duplicate": duplicate_rule(s, epoch_bump_errors),
        "reorder": reorder_rule(s),
        "poll-skip": POLL_RULE,
        "nonmonotonic-poll": POLL_RULE,
    }
    for kind, why in NEVER.items():
        out[kind] = Rule(kind == "unseen", why)
    assert set(out) == set(ANOMALY_KINDS)
    return out
