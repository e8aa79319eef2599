"""Turn raw anomaly rows into the examples of results.json: the record, its partition and
offsets, when it was acknowledged, a one-line summary, and (via attribution) the faults."""

from __future__ import annotations

from typing import Any

from contract.anomalies import MEANINGS, STEP, SUBJECTS, WRITE

from .attribution import Attributor
from .known import describe, tag
from .positions import across

READS_PER_EXAMPLE = 8

#: What a broker's finding (batch_ids.py) adds to an example's summary.
FINDING_SENTENCES = {
    "broker-deduplication-failure": "; both copies are in batches of the same producer id, "
    "epoch and base sequence: the broker appended one batch twice (a deduplication failure, "
    "not a client bug)",
    "broker-sequence-failure": "; both records are in batches of the same producer id and "
    "epoch: the broker accepted them out of sequence (not a client bug)",
}


def _rec(p: Any, s: Any) -> str:
    return "an undecodable record" if p is None else f"record producer={p} seq={s}"


def _tp(e: dict[str, Any]) -> str:
    return f"{e.get('topic')}-{e.get('partition')}"


def summary(kind: str, e: dict[str, Any]) -> str:
    """One sentence a user can read without the definitions."""
    rec, tp = _rec(e.get("producer"), e.get("seq")), _tp(e)
    off = e.get("acked_offset")
    at = f" at offset {off}" if off is not None else " (no offset reported)"
    if kind == "lost":
        return f"{rec} was acknowledged{at} of {tp} but no reader ever read it"
    if kind == "vanished":
        text = f"{rec} was read at offset {e.get('read_offset')} of {tp}, and the drain, " \
               f"which read {tp} completely, no longer finds it"
        if e.get("excuse") == "power-loss":
            text += "; excused: a power loss cut it from every replica that was in sync " \
                    "since it was read"
        return text
    if kind == "unseen":
        return f"{rec} was acknowledged{at} of {tp}; the drain did not finish {tp}, so it is " \
               "unknown whether it survived"
    if kind == "duplicate":
        return f"{rec} was read at {len(e.get('read_offsets', []))} different offsets " \
               f"{e.get('read_offsets')} of {tp}"
    if kind == "offset-mismatch":
        return f"{rec} was acknowledged{at} of {tp} but read at {e.get('read_offsets')}"
    if kind == "reorder":
        o = e.get("other", {})
        return f"{rec} is stored at offset {e.get('read_offset')} of {tp}, after seq " \
               f"{o.get('seq')} of the same producer at offset {o.get('read_offset')}"
    if kind == "failed-visible":
        return f"{rec} was reported as failed but was read at {e.get('read_offsets')} of {tp}"
    if kind == "aborted-read":
        return f"{rec} belongs to an aborted transaction but a read_committed reader read it"
    if kind == "torn-transaction":
        miss = e.get("missing") or {}
        return f"{rec} of transaction {e.get('txn')} was read by a read_committed reader but " \
               f"seq {miss.get('seq')} of the same transaction never was: the transaction is " \
               "visible in part, so it was decided by something other than its producer's " \
               "commit, which failed (outcome unknown)"
    if kind == "inconsistent-offset":
        recs = ", ".join(_rec(r.get("producer"), r.get("seq")) for r in e.get("records", []))
        return f"offset {e.get('offset')} of {tp} was read as different records: {recs}"
    if kind == "reused-offset":
        old = e.get("vanished") or {}
        return f"a live reader read {_rec(old.get('producer'), old.get('seq'))} at offset " \
               f"{e.get('offset')} of {tp}; after a truncation the log holds {rec} there " \
               "(the truncated tail's offset was reused)"
    if kind == "unexpected":
        return f"{rec} read at offset {e.get('offset')} of {tp} was produced by no attempt" \
            if e.get("producer") is not None else \
            f"the value at offset {e.get('offset')} of {tp} does not decode"
    if kind in ("poll-skip", "nonmonotonic-poll"):
        moved = "jumped" if kind == "poll-skip" else "went back"
        over = ", over offsets other readers read" if kind == "poll-skip" else ""
        gone = e.get("replaced")
        if gone:
            over = (f", past the truncation point: the log no longer holds "
                    f"{_rec(gone.get('producer'), gone.get('seq'))}, which it read at offset "
                    f"{e.get('prev_offset')}, and the records written since at the offsets "
                    "the truncation reused up to there were never read by it")
        text = f"reader {e.get('reader')} {moved} from offset {e.get('prev_offset')} (poll " \
               f"{e.get('prev_poll')}) to {e.get('offset')} (poll {e.get('poll')}) of {tp}{over}"
        rebs = e.get("rebalances") or []
        if rebs:
            text += "; excused: across its rebalance " + ", ".join(
                f"{r['what']} at poll {r['poll']}" for r in rebs)
        if e.get("excuse") == "truncation":
            text += "; excused: the log was truncated there and the offset reused, so the " \
                "client reset its position to the truncation point (see reused-offset)"
        return text
    # a kind without a sentence of its own: the record, and the kind's meaning (contract)
    text = f"{rec} of {tp}: {MEANINGS.get(kind, kind)}"
    invoked, seen = e.get("invoke_ns"), e.get("event_ns")
    if invoked is not None and seen is not None:
        ms = (seen - invoked) / 1e6
        text += f" (first read {abs(ms):,.0f} ms {'before' if ms < 0 else 'after'} its " \
                "first produce attempt)"
    return text


def build_example(kind: str, row: dict[str, Any], attributor: Attributor,
                  accepted: tuple[str, ...] = ()) -> dict[str, Any]:
    """A results.json example from an anomaly row (with ``_reads`` attached); a row a known
    bug explains carries ``known_bug`` (``accepted``: the ids the run accepts)."""
    reads = row.get("_reads") or []
    e: dict[str, Any] = {}
    if row.get("producer") is not None or kind not in ("inconsistent-offset",):
        e["producer"], e["seq"] = row.get("producer"), row.get("seq")
    e["topic"], e["partition"] = row.get("topic"), row.get("partition")
    if SUBJECTS.get(kind, WRITE) != WRITE:  # about a position, not one write's outcome
        e["offset"] = row.get("offset")
    else:
        e["acked_offset"] = row.get("offset")
        e["outcome"] = row.get("outcome")
    if kind in ("poll-skip", "nonmonotonic-poll"):
        e.update(reader=row.get("reader"), poll=row.get("poll"), prev_poll=row.get("prev_poll"),
                 prev_offset=row.get("prev_offset"), excused=bool(row.get("excused")))
        if e["excused"]:
            e["excuse"] = row.get("excuse")
        if e.get("excuse") == "rebalance":  # name the rebalance(s) the step crossed
            e["rebalances"] = across(attributor.rebalances, str(e["reader"]), str(e["topic"]),
                                     int(e["partition"]), int(row.get("prev_poll") or 0),
                                     int(row.get("poll") or 0))
    if kind == "poll-skip" and row.get("other_seq") is not None:
        # a skip past a truncation (positions.past_truncation): what the reader had read at
        # prev_offset, which the log no longer holds there
        e["replaced"] = {"producer": row.get("other_producer"), "seq": row.get("other_seq")}
    if kind == "reorder":
        e["read_offset"] = row.get("read_offset")
        e["other"] = {"producer": row.get("other_producer"), "seq": row.get("other_seq"),
                      "read_offset": row.get("prev_offset")}
    if kind == "reused-offset":
        e["vanished"] = {"producer": row.get("other_producer"), "seq": row.get("other_seq")}
        e["excused"] = bool(row.get("excused"))
    if kind in ("inconsistent-offset", "reused-offset"):
        seen = {(r.get("producer"), r.get("seq"), r.get("valid")) for r in reads}
        e["records"] = [{"producer": p, "seq": s, "valid": v} for p, s, v in sorted(
            seen, key=lambda t: (t[0] is None, t[0] or 0, t[1] or 0))]
    if kind == "vanished":
        e["read_offset"] = row.get("read_offset")
    if kind in ("lost", "unseen", "vanished", "duplicate", "reorder", "offset-mismatch"):
        e["excused"] = bool(row.get("excused"))
    if kind in ("lost", "vanished", "reused-offset", "duplicate", "reorder",
                "offset-mismatch") and row.get("excused"):
        e["excuse"] = row.get("excuse")
    if SUBJECTS.get(kind) != STEP:
        e["read_offsets"] = sorted({r["offset"] for r in reads})
        e["reads"] = [
            {"reader": r["reader"], "topic": r["topic"], "partition": r["partition"],
             "offset": r["offset"], "read_ns": r["read_ns"]}
            for r in reads[:READS_PER_EXAMPLE]
        ]
    if kind == "aborted-read":
        e["txn_outcome"] = "aborted"
    if kind == "torn-transaction":
        e["txn"], e["txn_outcome"] = row.get("txn"), "unknown"
        e["missing"] = {"producer": row.get("other_producer"), "seq": row.get("other_seq")}
        e["txn_invoke_ns"] = row.get("invoke_ns")  # the transaction's first attempt
    if kind in ("duplicate", "reorder") and row.get("epoch_bump_ns") is not None:
        e["epoch_bump_ns"] = row.get("epoch_bump_ns")
    if kind in ("duplicate", "reorder") and row.get("lo_pid") is not None:
        e["batches"] = [{"producer_id": row.get(f"{p}_pid"),
                         "producer_epoch": row.get(f"{p}_pepoch"),
                         "base_sequence": row.get(f"{p}_bseq")} for p in ("lo", "hi")]
    if row.get("finding"):
        e["finding"] = row.get("finding")
    if row.get("invoke_ns") is not None and kind != "torn-transaction":
        # only kinds about the write's first attempt set it
        e["invoke_ns"] = row.get("invoke_ns")
    e["complete_ns"] = row.get("complete_ns")
    e["event_ns"] = row.get("event_ns")
    bug = tag(row.get("known_bug"), accepted)
    if bug is not None:
        e["known_bug"] = bug
    e["summary"] = summary(kind, e)
    if e.get("epoch_bump_ns") is not None:
        e["summary"] += (f" (after an epoch bump of producer {e.get('producer')}: a write "
                         "ended with an epoch-bump error such as _MSG_TIMED_OUT, or the "
                         "client's statistics showed a new epoch)")
    if e.get("finding"):
        e["summary"] += FINDING_SENTENCES.get(str(e["finding"]), f" ({e['finding']})")
    if bug is not None:
        e["summary"] += f"; matches known bug {describe(bug['id'])}" + (
            ", accepted by this run" if bug["accepted"] else "")
    return attributor.annotate(e, kind)
