"""A plain-Python implementation of the anomaly definitions (DESIGN.md §4, as the checker
makes them precise in checkers/README.md), and a random history generator, for property
tests: the PySpark checker must agree with this on every history."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

RANK = {"fail": 0, "info": 1, "ok": 2}


def reference(writes: list[dict[str, Any]], reads: list[dict[str, Any]], complete: set[str],
              read_committed: dict[str, bool] | None = None, default_rc: bool = True,
              rebalances: dict[tuple[str, str, int], list[int]] | None = None,
              transactional: bool = False,
              groups: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """kind -> (count, excused) for every kind but divergence. ``rebalances``: (reader,
    topic, partition) -> polls of that reader's recorded rebalances of the partition;
    ``transactional``: the run's producers are transactional (torn-transaction is examined
    when the drain is read_committed too); ``groups``: reader -> its consumer group (a
    reader not in it is in none). Power-loss excuses need the crash's recovery points and
    the ISR over time: literal known answers test them (test_excuse_proofs.py), not this
    reference."""
    rc = read_committed or {}
    moved = rebalances or {}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def add(kind: str, n: int = 1, excused: bool = False) -> None:
        counts[kind][0] += n
        if excused:
            counts[kind][1] += n

    w_by: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for w in writes:
        if w["producer"] is not None and w["seq"] is not None:
            w_by[(w["producer"], w["seq"])].append(w)
    good = [r for r in reads if r["valid"] and r["producer"] is not None and r["seq"] is not None]
    r_by: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for r in good:
        r_by[(r["producer"], r["seq"])].append(r)

    stored: dict[tuple[int, str, int], list[tuple[int, int]]] = defaultdict(list)
    for ident in set(w_by) | set(r_by):
        ws, rs = w_by.get(ident, []), r_by.get(ident, [])
        positions = {(r["topic"], r["partition"], r["offset"]) for r in rs}
        if not ws:
            add("unexpected", len(positions))
            continue
        rank = max(RANK[w["outcome"]] for w in ws)
        topic = max(w["topic"] for w in ws)
        part = max(w["partition"] for w in ws)
        offs = [w["offset"] for w in ws if w["offset"] is not None]
        offset = max(offs) if offs else None
        txns = [w["txn_outcome"] for w in ws if w["txn_outcome"] is not None]
        txn = max(txns) if txns else None
        ok = rank == 2
        key = f"{topic}:{part}"
        if ok and txn in (None, "committed") and not rs:
            if key in complete:
                add("lost")
            else:
                add("unseen")
        # vanished: a reader returned it in a partition the drain read completely, and the
        # drain did not find it there
        gone = {(r["topic"], r["partition"]) for r in rs} - {
            (r["topic"], r["partition"]) for r in rs if r["reader"] == "drain"}
        if rank > 0 and txn in (None, "committed") and any(
                f"{t}:{p}" in complete for t, p in gone):
            add("vanished")
        if len(positions) >= 2:
            add("duplicate")
        if ok and offset is not None and rs and (topic, part, offset) not in positions:
            add("offset-mismatch")
        if rank == 0 and rs:
            add("failed-visible")
        if txn == "aborted":
            n = sum(1 for r in rs if rc.get(r["reader"], default_rc))
            if n:
                add("aborted-read", n)
        # reorder input: where the log stores it, i.e. the drain's read in the write's own
        # partition; a live reader's only where the drain did not read that partition fully
        here = [r for r in rs if r["topic"] == topic and r["partition"] == part]
        home = [r["offset"] for r in here if r["reader"] == "drain"]
        if not home and key not in complete:
            home = [r["offset"] for r in here]
        if ok and home:
            stored[(ident[0], topic, part)].append((min(home), ident[1]))
    for items in stored.values():
        for off, seq in items:
            if any(o2 < off and s2 > seq for o2, s2 in items):
                add("reorder")
    if transactional and rc.get("drain", default_rc):
        add_torn(w_by, r_by, complete, lambda reader: rc.get(reader, default_rc), add)

    at: dict[tuple[str, int, int], set[tuple[Any, ...]]] = defaultdict(set)
    drained_at: dict[tuple[str, int, int], set[tuple[Any, ...]]] = defaultdict(set)
    drained_in: dict[tuple[str, int], set[tuple[Any, ...]]] = defaultdict(set)
    first_read: dict[tuple[str, int, int], int] = {}
    rec_first: dict[tuple[tuple[str, int, int], tuple[Any, ...]], int] = {}
    for r in reads:
        valid = bool(r["valid"]) and r["producer"] is not None and r["seq"] is not None
        rec = (True, r["producer"], r["seq"]) if valid else (False,)
        pos = (r["topic"], r["partition"], r["offset"])
        at[pos].add(rec)
        first_read[pos] = min(first_read.get(pos, r["read_ns"]), r["read_ns"])
        rec_first[(pos, rec)] = min(rec_first.get((pos, rec), r["read_ns"]), r["read_ns"])
        if r["reader"] == "drain" or r["mode"] == "drain":
            drained_at[pos].add(rec)
            drained_in[(r["topic"], r["partition"])].add(rec)

    def vanished(pos: tuple[str, int, int]) -> bool:
        """The drain read one decodable record here; every other one read here decodes
        and the drain read it nowhere in the partition."""
        now, recs = drained_at.get(pos, set()), at[pos]
        return (len(now) == 1 and (False,) not in recs and len(recs) >= 2
                and all(o not in drained_in[pos[:2]] for o in recs - now))

    def replaced_ns(pos: tuple[str, int, int]) -> int:
        """When the record the log holds at ``pos`` was first read."""
        (now,) = drained_at[pos]
        return rec_first[(pos, now)]

    # a truncation, by the vanished offsets: (topic, partition) -> [(offset, when its
    # replacement was first read)]
    truncations: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for pos in at:
        if vanished(pos):
            truncations[pos[:2]].append((pos[2], replaced_ns(pos)))

    def after_truncation(pos: tuple[str, int, int]) -> bool:
        """A truncation at or below ``pos`` came after its old records were first read:
        one vanished offset at or below it whose replacement was first read later."""
        now = drained_at[pos]
        old_ns = min(rec_first[(pos, rec)] for rec in at[pos] - now)
        return any(v <= pos[2] and old_ns <= ns for v, ns in truncations.get(pos[:2], []))

    reused: set[tuple[str, int, int]] = set()
    for pos, recs in at.items():
        if len(recs) >= 2:
            # reused: the offset's record vanished from the log, or the record is still in
            # the log elsewhere and a truncation at or below it came after it was read
            now = drained_at.get(pos, set())
            if len(now) == 1 and (False,) not in recs and (
                    vanished(pos) or after_truncation(pos)):
                reused.add(pos)
                add("reused-offset")
            else:
                add("inconsistent-offset")
        if (False,) in recs:
            add("unexpected")

    # who read each offset, in which mode: a skip across a rebalance is excused only when
    # another subscribe-mode reader of the skipping reader's group read each offset skipped
    read_by: dict[tuple[str, int, int], set[tuple[str, str]]] = defaultdict(set)
    for r in reads:
        read_by[(r["topic"], r["partition"], r["offset"])].add((r["reader"], r["mode"]))
    in_group = groups or {}

    def group_read(reader: str, t: str, p: int, lo: int, hi: int) -> bool:
        mine = in_group.get(reader)
        return mine is not None and all(
            any(by != reader and mode == "subscribe" and in_group.get(by) == mine
                for by, mode in read_by[(t, p, o)])
            for o in range(lo + 1, hi) if (t, p, o) in read_by)

    # each reader's reads per position, for the witnesses of a skip
    reads_at: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for r in reads:
        reads_at[(r["topic"], r["partition"], r["offset"])].append(r)

    def is_drain(r: dict[str, Any]) -> bool:
        return bool(r["reader"] == "drain" or r["mode"] == "drain")

    def key(r: dict[str, Any]) -> tuple[int, int, int, int]:
        # checkers.history.read_order: poll, place in the poll (-1 unrecorded), time, offset
        index = r.get("poll_index")
        return (r["poll"], -1 if index is None else index, r["read_ns"], r["offset"])

    # each consumer's steps back per partition (the later read's key): a reset, a re-read
    backs: dict[tuple[str, str, int], list[tuple[int, int, int, int]]] = defaultdict(list)

    def one_pass(x: dict[str, Any], y: dict[str, Any]) -> bool:
        """x came before y in its reader's order, no step back of it between them."""
        zs = backs.get((y["reader"], y["topic"], y["partition"]), [])
        return key(x) < key(y) and not any(key(x) < z <= key(y) for z in zs)

    def witnessed(prev: dict[str, Any], cur: dict[str, Any]) -> bool:
        """Some offset strictly between the step's ends was read by a witness: a reader
        that read the step's far-end record at its offset and is the drain (the final log)
        or read the offset and then that record in one pass (checkers/skip_witness.py)."""
        t, p, b = cur["topic"], cur["partition"], cur["offset"]
        ends = [y for y in reads_at.get((t, p, b), []) if rec_of(y) == rec_of(cur)]
        return any(x["reader"] == y["reader"] and (is_drain(y) or one_pass(x, y))
                   for o in range(prev["offset"] + 1, b) for x in reads_at.get((t, p, o), [])
                   for y in ends)

    seqs: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in reads:
        if r["reader"] != "drain" and r["mode"] != "drain":
            seqs[(r["reader"], r["topic"], r["partition"])].append(r)
    def rec_of(r: dict[str, Any]) -> tuple[Any, ...]:
        ok = bool(r["valid"]) and r["producer"] is not None and r["seq"] is not None
        return (True, r["producer"], r["seq"]) if ok else (False,)

    def past_truncation(prev: dict[str, Any], cur: dict[str, Any]) -> bool:
        """A forward step of a reader not in subscribe mode from a record the log no longer
        holds at its offset (the drain read one other record there) onto the one record the
        drain read at the new offset (checkers/positions.past_truncation)."""
        was = drained_at.get((prev["topic"], prev["partition"], prev["offset"]), set())
        now = drained_at.get((cur["topic"], cur["partition"], cur["offset"]), set())
        return (cur["mode"] != "subscribe" and rec_of(prev) != (False,) and len(was) == 1
                and rec_of(prev) not in was and now == {rec_of(cur)})

    born: dict[tuple[Any, ...], int] = {}
    for w in writes:
        if w["producer"] is not None and w["seq"] is not None:
            k = (True, w["producer"], w["seq"])
            born[k] = min(born.get(k, w["invoke_ns"]), w["invoke_ns"])

    def reset_proven(prev: dict[str, Any], cur: dict[str, Any]) -> bool:
        """A step back onto the truncation point (checkers/truncation_reset.py): the drain's
        one record at the offset is the reader's and was first written after the reader's
        read of the step's start; the drain's one record at the highest offset below it
        where it read one the reader had read there."""
        t, p, o, who = cur["topic"], cur["partition"], cur["offset"], cur["reader"]
        # the highest offset below o where the drain read a record (markers hold none)
        o_below = max((q for (tt, pp, q), got in drained_at.items()
                       if got and (tt, pp) == (t, p) and q < o), default=None)
        if o_below is None:
            return False
        rec, below = rec_of(cur), drained_at.get((t, p, o_below), set())
        if rec == (False,) or drained_at.get((t, p, o), set()) != {rec} or len(below) != 1 \
                or below == {(False,)}:
            return False
        h_ns = max(x["read_ns"] for x in reads_at[(t, p, prev["offset"])]
                   if x["reader"] == who and x["poll"] == prev["poll"])
        return born.get(rec, h_ns) > h_ns and any(
            x["reader"] == who and rec_of(x) in below
            and (x["poll"], x["read_ns"]) <= (cur["poll"], cur["read_ns"])
            for x in reads_at.get((t, p, o_below), []))

    for rs in seqs.values():
        # the checker's order: the record key last (an undecodable read first)
        rs.sort(key=lambda r: (*key(r), rec_of(r)[1:] if rec_of(r)[0] else (-1,)))
        for prev, cur in zip(rs, rs[1:], strict=False):
            if cur["offset"] <= prev["offset"]:
                backs[(cur["reader"], cur["topic"], cur["partition"])].append(key(cur))
    for (_, t, p), rs in seqs.items():
        for prev, cur in zip(rs, rs[1:], strict=False):
            excused = cur["mode"] == "subscribe" and any(
                prev["poll"] <= q <= cur["poll"] for q in moved.get((cur["reader"], t, p), []))
            if cur["offset"] <= prev["offset"]:
                # a reset to a truncation point lands on an offset that was reused
                add("nonmonotonic-poll", excused=excused or (t, p, cur["offset"]) in reused
                    or reset_proven(prev, cur))
            elif witnessed(prev, cur) or past_truncation(prev, cur):
                add("poll-skip", excused=excused and group_read(
                    cur["reader"], t, p, prev["offset"], cur["offset"]))
    return {k: (v[0], v[1]) for k, v in counts.items() if v[0]}


def add_torn(w_by: dict[tuple[int, int], list[dict[str, Any]]],
             r_by: dict[tuple[int, int], list[dict[str, Any]]], complete: set[str],
             is_rc: Any, add: Any) -> None:
    """torn-transaction: per (producer, txn) of unknown outcome, the writes a read_committed
    reader read, when another write of it was read by none in a completely drained
    partition."""
    groups: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    for ident, ws in w_by.items():
        outcomes = [w["txn_outcome"] for w in ws if w["txn_outcome"] is not None]
        ids = [w["txn"] for w in ws if w["txn"] is not None]
        if outcomes and max(outcomes) == "unknown" and ids:
            groups[(ident[0], max(ids))].append(ident)
    for idents in groups.values():
        def seen(i: tuple[int, int]) -> bool:
            return any(is_rc(r["reader"]) for r in r_by.get(i, []))

        def home(i: tuple[int, int]) -> str:
            ws = w_by[i]
            return f"{max(w['topic'] for w in ws)}:{max(w['partition'] for w in ws)}"

        if any(not seen(i) and home(i) in complete for i in idents):
            n = sum(1 for i in idents if seen(i))
            if n:
                add("torn-transaction", n)


def random_history(seed: int, n_writes: int = 60) -> tuple[list[dict[str, Any]],
                                                          list[dict[str, Any]], set[str]]:
    """A small random history with every kind of trouble in it, from one seed."""
    rnd = random.Random(seed)
    tps = [("a", 0), ("a", 1), ("b", 0)]
    logs: dict[tuple[str, int], list[tuple[int | None, int | None, bool]]] = {tp: [] for tp in tps}
    writes = []
    t = 1_000_000
    for i in range(n_writes):
        producer = rnd.randrange(3)
        seq = i  # unique per producer because unique overall
        topic, part = rnd.choice(tps)
        outcome = rnd.choices(["ok", "info", "fail"], [0.75, 0.15, 0.1])[0]
        txn_outcome = rnd.choice([None, None, None, "committed", "aborted", "unknown"])
        log = logs[(topic, part)]
        lands = {"ok": 0.9, "info": 0.5, "fail": 0.05}[outcome]
        offset = None
        if rnd.random() < lands:
            pos = len(log)
            if rnd.random() < 0.1 and log:
                pos = rnd.randrange(len(log))  # reorder: inserted before earlier records
            log.insert(pos, (producer, seq, True))
            offset = pos
            if rnd.random() < 0.08:
                log.append((producer, seq, True))  # duplicate
        if rnd.random() < 0.05:
            log.append((rnd.randrange(3), 10_000 + i, True))  # no attempt produced it
        if rnd.random() < 0.04:
            log.append((None, None, False))  # undecodable
        if offset is not None and rnd.random() < 0.15:
            offset = None if rnd.random() < 0.5 else offset + rnd.choice([-1, 1])
        t += rnd.randrange(1, 5) * 1_000_000
        writes.append({"op_id": i, "producer": producer, "seq": seq, "topic": topic,
                       "partition": part, "invoke_ns": t, "complete_ns": t + 1_000_000,
                       "outcome": outcome, "offset": offset if outcome == "ok" else None,
                       "error": None, "txn": f"x{i // 6}" if txn_outcome else None,
                       "txn_outcome": txn_outcome})
    reads: list[dict[str, Any]] = []
    # each read's place in its poll, in the order the walk returns them (a step back inside
    # a poll stays one: the checker orders a poll's reads by it, not by offset)
    placed: dict[tuple[str, int], int] = defaultdict(int)
    for tp, log in logs.items():
        for off, (p, s, valid) in enumerate(log):
            if rnd.random() < 0.9:
                reads.append(_read("drain", "drain", 0, off, tp, p, s, valid))
        for reader, mode in (("c0", "assign"), ("c1", "subscribe")):
            off, poll = 0, 0
            while off < len(log):
                p, s, valid = log[off]
                if rnd.random() < 0.05:  # a reader disagreeing about the record here
                    p, s = rnd.randrange(3), rnd.randrange(n_writes)
                reads.append({**_read(reader, mode, poll, off, tp, p, s, valid),
                              "poll_index": placed[(reader, poll)]})
                placed[(reader, poll)] += 1
                poll += rnd.choice([0, 1])
                off += rnd.choices([1, 2, 3, -1, 0], [0.8, 0.07, 0.03, 0.05, 0.05])[0]
                off = max(off, 0)
                if poll > 3 * len(log) + 5:
                    break
    complete = {f"{t}:{p}" for t, p in tps if rnd.random() < 0.8}
    return writes, reads, complete


def _read(reader: str, mode: str, poll: int, off: int, tp: tuple[str, int], p: int | None,
          s: int | None, valid: bool) -> dict[str, Any]:
    return {"reader": reader, "mode": mode, "poll": poll, "read_ns": 5_000_000 + poll,
            "topic": tp[0], "partition": tp[1], "offset": off, "producer": p, "seq": s,
            "valid": valid}
