"""The guarantee model of DESIGN.md §4: which anomaly kinds the configuration allows, and
why, in words a user understands."""

from __future__ import annotations

from dataclasses import dataclass

from contract.anomalies import ANOMALY_KINDS
from contract.settings import Settings


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


#: The per-record power-loss proof, in the words of the rules below.
POWER_PROOF = ("only a power loss of every replica in the partition's ISR from the record's "
               "acknowledgement (or first read) until the crash, with the record at or above "
               "each one's recovery point, excuses one")


def _unclean(s: Settings) -> Rule | None:
    if not s.unclean:
        return None
    note = "" if s.unclean_honoured else (
        f" (note: Kafka {s.kafka_version} in KRaft mode ignores this setting before 3.9)")
    return Rule(True, "allowed: unclean.leader.election.enable=true — a replica that is not "
                "in sync may become leader and truncate records the others held" + note)


def lost_rule(s: Settings) -> Rule:
    """``lost`` (acknowledged, never read by anyone): allowed by acks=0/1 or unclean election
    only. min.insync.replicas=1 allows nothing by itself: with clean election a record a
    lone in-sync leader acknowledged goes only with that leader's power loss, which is the
    per-record rule."""
    if s.acks in ("0", "1"):
        return Rule(True, f"allowed: acks={s.acks} — the leader acknowledges before any follower "
                    "has the record, so a leader failover can drop acknowledged writes no "
                    "reader saw")
    unclean = _unclean(s)
    if unclean is not None:
        return unclean
    return Rule(False, f"forbidden: {_config_line(s)} — every acknowledged write is on every "
                "in-sync replica and only in-sync replicas become leader; " + POWER_PROOF)


def vanished_rule(s: Settings) -> Rule:
    """``vanished`` (a record a reader returned, gone from the drained log): whatever acks
    is, a reader is served only records below the high watermark, which every in-sync
    replica holds; so only unclean election allows it."""
    unclean = _unclean(s)
    if unclean is not None:
        return unclean
    return Rule(False, "forbidden: unclean.leader.election.enable=false — a record a reader "
                "was served lay below the high watermark, on every in-sync replica, and only "
                "in-sync replicas become leader, whatever acks is; " + POWER_PROOF)


def reused_rule(s: Settings) -> Rule:
    """``reused-offset`` is a vanished record whose offset another record took: the same
    rule as ``vanished``."""
    rule = vanished_rule(s)
    if rule.allowed:
        return Rule(True, rule.why + "; the vanished tail's offsets are then reused by new "
                    "records")
    return rule


def duplicate_rule(s: Settings) -> Rule:
    if not s.idempotence:
        return Rule(True, "allowed: enable.idempotence=false — the producer retries batches whose "
                    "acknowledgement was lost, and the broker appends them again")
    # Client errors do not change what the user configured: a duplicate after an epoch bump
    # is still a violation; its example names the known client bug (librdkafka#4953).
    return Rule(False, "forbidden: enable.idempotence=true — the broker drops retried batches by "
                "their sequence numbers, whatever client errors happened (examples after a "
                "producer epoch bump name the known client bug they match)")


def reorder_rule(s: Settings) -> Rule:
    if not s.idempotence:
        return Rule(True, "allowed: enable.idempotence=false — with several requests in flight a "
                    "retried batch can land after a later one")
    return Rule(False, "forbidden: enable.idempotence=true — the idempotent producer keeps "
                "per-partition order across retries, whatever client errors happened")


def offset_mismatch_rule(s: Settings) -> Rule:
    """``offset-mismatch`` (read, never at the offset its acknowledgement gave): with acks=0
    the broker sends no response, so no offset was acknowledged — what the client reports is
    its own guess (Java: -1; librdkafka reported small offsets counting from 0, the records'
    places in their batch, for some acks=0 writes after a leader change)."""
    if s.acks == "0":
        return Rule(True, "allowed: acks=0 — the broker sends no response, so the offset the "
                    "client reports for a write acknowledges nothing")
    return Rule(False, NEVER["offset-mismatch"])


POLL_RULE = Rule(False, "forbidden: a consumer reads a partition in order; only a step of a "
                 "subscribe-mode reader across a recorded rebalance of that reader that moved "
                 "the partition is excused (it may resume from the group's committed offset; "
                 "a skip forward only when another reader of its consumer group read each "
                 "offset it skipped), a step back of a restart-mode reader (alone in its "
                 "group) across its recorded restart (it re-reads from its committed "
                 "offset, never skips), and a step back onto offsets a truncation reused (the "
                 "client resets to the truncation point; the truncation is judged as "
                 "reused-offset)")

NEVER: dict[str, str] = {
    "inconsistent-offset": "forbidden: every reader must see the same record at an offset",
    "offset-mismatch": "forbidden: an acknowledged offset is where the record stays",
    "failed-visible": "forbidden: a write reported as definitely failed must never be read",
    "unexpected": "forbidden: every record read must come from a produce attempt",
    "aborted-read": "forbidden: read_committed readers must not see aborted transactions",
    "torn-transaction": "forbidden: a transaction is committed or aborted as a whole, so a "
    "read_committed reader sees all of its records or none",
    "stalled-lso": "forbidden: the last stable offset stops only at a transaction still "
    "open; one its producer saw decided holds it only where a replica without the "
    "transaction's marker leads (no unclean election or power loss allows it: the records "
    "are in the log, unreadable)",
    "read-before-write": "forbidden: a record cannot be read before it is produced; the "
    "history attributes it to the wrong write (e.g. two writers sharing a producer id)",
    "divergence": "forbidden: after catch-up, replicas of a partition hold identical logs",
    "stuck-producer": "forbidden: once every fault is healed and the brokers serve, a "
    "producer gets acknowledgements again within the liveness bound",
    "stuck-consumer": "forbidden: once every fault is healed and the brokers serve, a "
    "consumer reads the records waiting for it within the liveness bound",
    "hung-call": "forbidden: a client call returns within its own timeout (plus the slack)",
    "down-after-heal": "forbidden: once every fault has healed and the brokers serve, a "
    "client reconnects within the liveness bound, busy or idle",
    "unseen": "not a violation by itself: the drain could not read these partitions to the "
    "end, so whether the writes survive is unknown (valid becomes \"unknown\")",
}


def rules(s: Settings) -> dict[str, Rule]:
    """The rule for every kind under settings ``s``."""
    out: dict[str, Rule] = {
        "lost": lost_rule(s),
        "vanished": vanished_rule(s),
        "reused-offset": reused_rule(s),
        "duplicate": duplicate_rule(s),
        "reorder": reorder_rule(s),
        "offset-mismatch": offset_mismatch_rule(s),
        "poll-skip": POLL_RULE,
        "nonmonotonic-poll": POLL_RULE,
    }
    for kind, why in NEVER.items():
        out.setdefault(kind, Rule(kind == "unseen", why))
    assert set(out) == set(ANOMALY_KINDS)
    return out


#: The kinds whose rule depends on the producer's own settings (acks, idempotence).
PRODUCER_KINDS = ("lost", "duplicate", "reorder", "offset-mismatch")


def producer_allowances(s: Settings) -> dict[str, list[int]]:
    """Kind -> the producers whose own settings allow it where the run's (its strictest
    producer's) do not: their records of that kind are excused one by one."""
    from dataclasses import replace

    strict = rules(s)
    out: dict[str, list[int]] = {}
    for producer, (acks, idempotence) in sorted(s.per_producer.items()):
        own = rules(replace(s, acks=acks, idempotence=idempotence))
        for kind in PRODUCER_KINDS:
            if own[kind].allowed and not strict[kind].allowed:
                out.setdefault(kind, []).append(producer)
    return out


def _ids(ids: list[str]) -> str:
    return ", ".join(ids)


def decide(kind: str, count: int, excused: int, rule: Rule,
           by_bug: dict[str | None, tuple[int, int]] | None = None,
           accepted: tuple[str, ...] = ()) -> tuple[bool, str, int]:
    """Whether a kind is allowed, why, and how many of its records an accepted known bug
    explains. A forbidden kind is allowed only when every record is excused (a power loss
    of the whole ISR, a recorded rebalance) or explained by a known bug the run accepts
    (run.json ``accept_known``); one record that is neither keeps it forbidden."""
    if rule.allowed or count == 0:
        return rule.allowed, rule.why, 0
    by_bug = by_bug or {None: (count, excused)}
    accepted_n = sum(n - ex for bug, (n, ex) in by_bug.items() if bug in accepted)
    ids = sorted(str(b) for b, (n, ex) in by_bug.items() if b in accepted and n > ex)
    rest = count - excused - accepted_n
    parts = []
    if excused:
        parts.append(f"{excused} excused ({EXCUSES.get(kind, 'excused')})")
    if accepted_n:
        parts.append(f"{accepted_n} match known bugs this run accepts ({_ids(ids)})")
    if rest == 0:
        if not accepted_n:
            return True, f"allowed: every one {EXCUSES.get(kind, 'is excused')}; " \
                         f"otherwise {rule.why}", 0
        return True, f"accepted: {'; '.join(parts)}; otherwise {rule.why}", accepted_n
    if parts:
        return False, f"{rule.why} ({'; '.join(parts)}; {rest} of {count} neither)", accepted_n
    return False, rule.why, accepted_n


#: Why single records of a forbidden kind are excused (checkers/README.md).
EXCUSES: dict[str, str] = {
    "lost": "was proven lost to a power loss: every replica in its partition's ISR from its "
    "acknowledgement until the crash lost power, and it lay at or above each one's recovery "
    "point (Kafka promises durability only while one in-sync replica keeps it), or was "
    "written by a producer whose own acks (0 or 1) allow the loss",
    "duplicate": "was written by a producer whose own settings (enable.idempotence=false) "
    "allow it",
    "reorder": "was written by a producer whose own settings (enable.idempotence=false) "
    "allow it",
    "offset-mismatch": "was written by a producer with acks=0, whose writes get no offset "
    "from the broker",
    "vanished": "was proven lost to a power loss: every replica in its partition's ISR from "
    "its first read until the crash lost power, and it lay at or above each one's recovery "
    "point",
    "poll-skip": "was by a subscribe-mode reader across a recorded rebalance that moved its "
    "partition, and another reader of its consumer group read each offset it skipped",
    "nonmonotonic-poll": "was by a subscribe-mode reader across a recorded rebalance that "
    "moved its partition, a step back of a restart-mode reader across its restart, or a "
    "reset onto offsets a truncation reused (judged as reused-offset)",
    "reused-offset": "was proven truncated by a power loss: every replica in the partition's "
    "ISR from the offset's first read until the crash lost power, and the offset lay at or "
    "above each one's recovery point",
}


def guarantee_line(kind: str, rule: Rule, accepted: tuple[str, ...],
                   explains: dict[str, tuple[str, ...]]) -> str:
    """The configuration's rule for ``kind``, naming the known bugs the run accepts for it
    (``explains``: known-bug id -> the kinds it explains)."""
    ids = [b for b in accepted if kind in explains.get(b, ())]
    if not ids or rule.allowed:
        return rule.why
    return f"{rule.why}; this run accepts known bugs {_ids(ids)} for it (accept_known)"
